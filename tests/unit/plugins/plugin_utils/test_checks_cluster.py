"""_checks/cluster.py: what the cluster side decides: RuntimeClass overhead against a node's allocatable
(overhead_unschedulable), runtimes that differ across an inventory group (node_drift), and cluster-only
mode: Nodes judged by their status.runtimeHandlers (handlers_not_reported)."""
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from tests.lib.check_inputs import ctx, ids, loaded, rc


# --- overhead -------------------------------------------------------------------------------

def overhead(rcs, labels, allocatable, requests=None):
    found, _ran, skipped = checks.run_checks(ctx({"loaded": loaded()}, rcs, labels, allocatable, pod_requests=requests))
    if "overhead_unschedulable" in skipped:
        return []
    return [f for f in found if f["check"] == "overhead_unschedulable"]


class TestOverhead(object):
    def test_cpu_overhead_does_not_fit(self):
        rcs = [rc("nvidia-overhead", handler="nvidia", overhead={"cpu": "250m"})]
        out = overhead(rcs, {}, {"cpu": "1"}, {"cpu": "900m"})
        assert ids(out) == [("overhead_unschedulable", "error", "nvidia-overhead:cpu")]
        assert out[0]["evidence"]["arithmetic"] == "900m + 250m > 1000m"
        assert "900m + 250m > 1000m" in out[0]["message"]
        assert out[0]["evidence"]["pod_request"] == "900m"
        assert out[0]["evidence"]["overhead"] == "250m"
        assert out[0]["evidence"]["allocatable"] == "1"

    def test_memory_with_binary_suffixes(self):
        rcs = [rc("kata", overhead={"memory": "512Mi"})]
        out = overhead(rcs, {}, {"memory": "1Gi"}, {"memory": "768Mi"})
        assert ids(out) == [("overhead_unschedulable", "error", "kata:memory")]
        assert out[0]["evidence"]["arithmetic"] == "%d + %d > %d" % (768 * 2 ** 20, 512 * 2 ** 20, 2 ** 30)

    def test_fits(self):
        rcs = [rc("kata", overhead={"cpu": "100m", "memory": "256Mi"})]
        assert overhead(rcs, {}, {"cpu": "1", "memory": "1Gi"}, {"cpu": "900m", "memory": "768Mi"}) == []

    def test_exactly_full_fits(self):
        rcs = [rc("kata", overhead={"cpu": "100m"})]
        assert overhead(rcs, {}, {"cpu": "1"}, {"cpu": "900m"}) == []

    def test_no_pod_request_means_zero(self):
        rcs = [rc("kata", overhead={"cpu": "2"})]
        out = overhead(rcs, {}, {"cpu": "1500m"})
        assert out[0]["evidence"]["arithmetic"] == "0m + 2000m > 1500m"

    def test_bad_quantity_is_a_warning(self):
        rcs = [rc("kata", overhead={"cpu": "lots"})]
        out = overhead(rcs, {}, {"cpu": "1"}, {"cpu": "900m"})
        assert ids(out) == [("overhead_unschedulable", "warning", "kata:cpu")]
        assert "lots" in out[0]["message"]

    def test_bad_allocatable_is_a_warning(self):
        rcs = [rc("kata", overhead={"cpu": "250m"})]
        out = overhead(rcs, {}, {"cpu": "one"}, {})
        assert ids(out) == [("overhead_unschedulable", "warning", "kata:cpu")]

    def test_infinite_allocatable_is_a_warning_not_an_exception(self):
        rcs = [rc("kata", overhead={"cpu": "250m"})]
        out = overhead(rcs, {}, {"cpu": float("inf")}, {"cpu": "900m"})
        assert ids(out) == [("overhead_unschedulable", "warning", "kata:cpu")]

    def test_huge_quantity_is_reported_not_raised(self):
        rcs = [rc("kata", overhead={"memory": "1e5000"})]
        out = overhead(rcs, {}, {"memory": "1Gi"}, {})
        assert [f["check"] for f in out] == ["overhead_unschedulable"]

    def test_without_allocatable_nothing_is_judged(self):
        rcs = [rc("kata", overhead={"cpu": "250m"})]
        _found, _ran, skipped = checks.run_checks(ctx({"loaded": loaded()}, rcs))
        assert skipped["overhead_unschedulable"].startswith("node allocatable unknown")
        assert overhead(rcs, {}, None, {"cpu": "900m"}) == []
        assert overhead(rcs, {}, {"memory": "1Gi"}, {"cpu": "900m"}) == []

    def test_selector_keeps_it_off_the_node(self):
        rcs = [rc("kata", overhead={"cpu": "250m"}, selector={"kata": "yes"})]
        assert overhead(rcs, {"kata": "no"}, {"cpu": "1"}, {"cpu": "900m"}) == []


# --- node drift -----------------------------------------------------------------------------

class TestDrift(object):
    def test_the_node_lacking_a_runtime_is_flagged(self):
        out = checks.check_drift({"gpu": ["a", "b", "c"]},
                                 {"a": ["runc", "nvidia"], "b": ["runc"], "c": ["runc"]})
        assert ids(out) == [("node_drift", "warning", "gpu"), ("node_drift", "warning", "gpu")]
        assert sorted(f["node"] for f in out) == ["b", "c"]
        # union, not majority: the minority node that has nvidia is the right one
        assert out[0]["evidence"]["lacks"] == ["nvidia"]
        assert out[0]["evidence"]["loaded_by"] == {"nvidia": ["a"]}

    def test_each_node_lacking_something_is_flagged(self):
        out = checks.check_drift({"g": ["a", "b"]}, {"a": ["runc", "x"], "b": ["runc", "y"]})
        assert dict((f["node"], f["evidence"]["lacks"]) for f in out) == {"a": ["y"], "b": ["x"]}

    def test_equal_sets_and_single_members(self):
        assert checks.check_drift({"g": ["a", "b"]}, {"a": ["runc", "nvidia"], "b": ["nvidia", "runc"]}) == []
        assert checks.check_drift({"g": ["a", "b"]}, {"a": ["runc", "nvidia"]}) == []  # b not checked

    def test_a_typo_is_reported_on_the_node_that_loads_it_not_spread_to_the_others(self):
        out = checks.check_drift({"gpu": ["a", "b", "c"]},
                                 {"a": ["runc", "nvida"], "b": ["runc", "nvidia"], "c": ["runc", "nvidia"]})
        assert [f["node"] for f in out] == ["a"], out
        assert out[0]["evidence"]["likely_typos"] == {"nvida": "nvidia"}
        assert out[0]["evidence"]["lacks"] == ["nvidia"]
        assert "likely a typo of nvidia (loaded by b, c)" in out[0]["message"]
        assert "rename 'nvida' to 'nvidia'" in out[0]["fix"]

    def test_the_typo_is_the_non_runtime_name_even_in_the_majority(self):
        out = checks.check_drift({"g": ["a", "b", "c"]}, {"a": ["nvidia"], "b": ["nvida"], "c": ["nvida"]})
        assert sorted(f["node"] for f in out) == ["b", "c"]
        assert all(f["evidence"]["likely_typos"] == {"nvida": "nvidia"} for f in out)

    def test_two_real_runtimes_are_never_a_typo(self):
        out = checks.check_drift({"g": ["a", "b"]}, {"a": ["nvidia", "nvidia-cdi"], "b": ["nvidia"]})
        assert [(f["node"], f["evidence"]["lacks"], f["evidence"]["likely_typos"]) for f in out] == [
            ("b", ["nvidia-cdi"], {})]

    def test_groups_are_judged_separately(self):
        out = checks.check_drift({"g1": ["a"], "g2": ["b", "c"]}, {"a": ["nvidia"], "b": ["runc"], "c": ["runc"]})
        assert out == []


# --- cluster-only mode ----------------------------------------------------------------------

class TestReportedNode(object):
    def test_handlers_not_reported(self):
        checked, out, ran, skipped = checks.check_reported_node({"name": "n1", "runtime_handlers": None}, [rc("nvidia")])
        assert checked is False
        assert ids(out) == [("handlers_not_reported", "warning", "n1")]
        assert skipped["missing_handler"] == "the Node reports no status.runtimeHandlers"
        assert ran == ["handlers_not_reported"]

    def test_handlers_not_reported_can_be_skipped(self):
        checked, out, _ran, skipped = checks.check_reported_node({"name": "n1", "runtime_handlers": None},
                                                                 [rc("nvidia")], skip=["handlers_not_reported"])
        assert (checked, out, skipped["handlers_not_reported"]) == (False, [], "skip_checks")

    def test_missing_reported_handler(self):
        node = {"name": "n1", "runtime_handlers": ["", "runc", "nvidia"], "labels": {}}
        checked, out, _ran, _skipped = checks.check_reported_node(node, [rc("nvidia"), rc("nvidia-cdi")])
        assert checked is True
        assert ids(out) == [("missing_handler", "error", "nvidia-cdi")]
        assert "status.runtimeHandlers" in out[0]["message"]
        # nvidia-cdi is NVIDIA's handler, and nvidia a RuntimeClass's own: no "did you mean"
        assert out[0]["evidence"]["suggestion"] is None

    def test_empty_default_entry_is_ignored(self):
        node = {"name": "n1", "runtime_handlers": ["", "runc"], "labels": {}}
        out = checks.check_reported_node(node, [rc("x", handler="q")])[1]
        assert out[0]["evidence"]["suggestion"] is None
        assert checks.check_reported_node(node, [rc("runc")])[:2] == (True, [])

    def test_selector_against_node_labels(self):
        node = {"name": "n1", "runtime_handlers": ["runc"], "labels": {"gpu": "false"}}
        assert checks.check_reported_node(node, [rc("nvidia", selector={"gpu": "true"})])[:2] == (True, [])

    def test_overhead_from_node_allocatable(self):
        node = {"name": "n1", "runtime_handlers": ["runc", "nvidia"], "labels": {}, "allocatable": {"cpu": "1"}}
        out = checks.check_reported_node(node, [rc("nvidia", overhead={"cpu": "250m"})], {"cpu": "900m"})[1]
        assert ids(out) == [("overhead_unschedulable", "error", "nvidia:cpu")]

"""_checks/runner.py: every registered check of a mode against one node, each run only when what it needs
is there, else skipped with the reason; skip_checks; findings sorted."""
import random

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from tests.lib.check_inputs import ctx, gathered_imports, loaded, rc, runc_like


# --- check_node, skip, order ----------------------------------------------------------------

def full_gathered():
    g = gathered_imports()
    g["version_major"] = 2
    g["loaded"] = loaded(runtimes={"runc": runc_like("runc", systemd=True),
                                   "nvidia": runc_like("nvidia", systemd=False, binary="/usr/bin/nvidia")},
                         default="nvidia")
    g["paths"] = {"/usr/bin/nvidia": {"exists": False, "executable": False}}
    g["kubelet_config"] = {"path": "/k.yaml", "content": "cgroupDriver: systemd\n"}
    g["cdi_specs"] = []
    return g


class TestCheckNode(object):
    def test_all_checks_together_sorted(self):
        # nvidia is the default, so its cgroup mismatch is reachable
        out, ran, skipped = checks.check_node("n1", full_gathered(), [rc("nvidia-typo")], {})
        assert [f["check"] for f in out] == [
            "cgroup_driver", "missing_handler", "orphan_dropin", "orphan_dropin", "runtime_binary",
            "dead_imports_glob", "default_runtime_blast_radius"]
        assert [f["severity"] for f in out] == ["error"] * 5 + ["warning"] * 2
        # what could not run says why; nothing is both run and skipped
        assert skipped == {
            "restart_pending": "the running view was not gathered (a bare dump, or gather_running=false)",
            "overhead_unschedulable": "node allocatable unknown (no Node object, no gpurt_node_allocatable)"}
        assert not set(ran) & set(skipped)
        assert sorted(ran + list(skipped)) == sorted(checks.check_ids("hosts"))

    def test_skip_checks_drop_findings(self):
        everything = checks.check_node("n1", full_gathered(), [rc("nvidia-typo")], {})[0]
        skip = ["orphan_dropin", "runtime_binary"]
        out, ran, skipped = checks.check_node("n1", full_gathered(), [rc("nvidia-typo")], {}, options={"skip_checks": skip})
        assert out == [f for f in everything if f["check"] not in skip]
        assert len(out) == len(everything) - 3
        assert skipped["orphan_dropin"] == skipped["runtime_binary"] == "skip_checks"
        assert not set(skip) & set(ran)

    def test_a_bare_dump_skips_what_it_cannot_show(self):
        _out, ran, skipped = checks.check_node("n1", {"loaded": loaded()}, [rc("nvidia")], {})
        assert sorted(ran) == ["cdi_disabled", "config_refused", "cri_plugin_disabled",
                               "default_runtime_blast_radius", "missing_handler"]
        assert skipped["orphan_dropin"] == "the node reported no files (a bare dump has no files)"
        assert skipped["cgroup_driver"] == "the node reported no kubelet config"

    def test_no_runtimeclass_skips_missing_handler(self):
        _out, ran, skipped = checks.check_node("n1", {"loaded": loaded()}, [], {})
        assert "missing_handler" not in ran
        assert skipped["missing_handler"] == "no RuntimeClass was read: nothing to cross-check"

    def test_a_check_that_breaks_its_declaration_is_a_defect(self, monkeypatch):
        bad = checks.Check("x_check", ("warning",), "warning", "c", (), lambda ctx: [
            checks.finding("n1", "x_check", "error", "s", "m", "f")])
        monkeypatch.setattr(checks.registry, "REGISTRY", (bad,))
        with pytest.raises(AssertionError, match="x_check produced a error finding"):
            checks.run_checks(ctx())

    def test_sort_is_stable_under_shuffling(self):
        everything = checks.check_node("n1", full_gathered(), [rc("nvidia-typo")], {})[0]
        more = everything + checks.check_drift({"g": ["a", "b"]}, {"a": ["x"], "b": ["y"]})
        expected = checks.sort_findings(more)
        rng = random.Random(7)
        for _unused in range(20):
            shuffled = list(more)
            rng.shuffle(shuffled)
            assert checks.sort_findings(shuffled) == expected
        assert [f["node"] for f in expected] == ["a", "b"] + ["n1"] * len(everything)

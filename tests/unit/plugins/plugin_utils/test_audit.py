import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _audit as audit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from tests.lib.dumps import dump_text


def rc(name, handler=None, selector=None):
    return {"name": name, "handler": handler or name, "node_selector": selector or {}, "overhead": None}


def gathered(names=("runc", "nvidia"), **extra):
    runtimes = dict((n, {"name": n, "runtime_type": "io.containerd.runc.v2", "binary_name": "",
                         "systemd_cgroup": True, "plugin": "io.containerd.cri.v1.runtime"}) for n in names)
    result = {"loaded": {"runtimes": runtimes, "runtime_names": sorted(runtimes), "default_runtime_name": "runc",
                         "enable_cdi": True, "cdi_spec_dirs": []}}
    result.update(extra)
    return result


class TestNotCheckedReason(object):
    @pytest.mark.parametrize("result, reason", [
        (None, "no result: the host did not run the gather task"),
        ("text", "unexpected gather result"),
        ({"unreachable": True, "msg": "Failed to connect to the host via ssh"},
         "unreachable: Failed to connect to the host via ssh"),
        ({"unreachable": True}, "unreachable: connection failed"),
        ({"skipped": True, "skip_reason": "Conditional result was False"}, "gather skipped: Conditional result was False"),
        ({"skipped": True}, "gather skipped: condition false"),
        ({"failed": True, "msg": "n1: containerd binary not found: /x"}, "n1: containerd binary not found: /x"),
        ({"failed": True}, "gather failed"),
        # the audit's gather runs with failed_when: false: the failure's message stays, its flag does not
        ({"failed": False, "failed_when_result": False, "msg": "n1: containerd binary not found: /x"},
         "n1: containerd binary not found: /x"),
        ({"changed": False}, "gather result has no parsed config"),
        ({"loaded": "not a dict"}, "gather result has no parsed config"),
    ])
    def test_reasons(self, result, reason):
        assert audit.not_checked_reason(result) == reason

    def test_unreachable_wins_over_failed(self):
        assert audit.not_checked_reason({"unreachable": True, "failed": True, "msg": "m"}) == "unreachable: m"

    def test_checkable(self):
        assert audit.not_checked_reason(gathered()) is None


class TestAuditHost(object):
    @pytest.mark.parametrize("result", [None, {"failed": True, "msg": "boom"}, {"unreachable": True, "msg": "x"},
                                        {"skipped": True}])
    def test_not_checked(self, result):
        entry = audit.audit_host("n1", result, [rc("nvidia")])
        assert entry["status"] == "NOT CHECKED"
        assert entry["failing"] is True
        assert entry["reason"] == audit.not_checked_reason(result)
        assert entry["findings"] == [] and entry["runtimes"] is None

    def test_not_checked_fails_even_at_none(self):
        assert audit.audit_host("n1", None, [], options={"fail_on": "none"})["failing"] is True

    def test_ok(self):
        entry = audit.audit_host("n1", gathered(), [rc("nvidia")], labels={})
        assert entry["status"] == "OK" and entry["findings"] == [] and entry["failing"] is False
        assert entry["runtimes"] == ["nvidia", "runc"]
        # a bare dump: only the checks that need nothing but the loaded config run; the others are
        # skipped with the reason, never counted as passed
        assert entry["checks_run"] == sorted(["missing_handler", "config_refused", "cri_plugin_disabled",
                                              "default_runtime_blast_radius", "cdi_disabled"])
        assert sorted(entry["checks_skipped"]) == sorted(set(checks.check_ids("hosts")) - set(entry["checks_run"]))

    def test_checks_run_follow_what_was_gathered(self):
        g = gathered(imports=[], files=[], paths={}, cdi_specs=[], kubelet_config={"path": "k", "content": None},
                     version="2.1.9", version_major=2, version_minor=1,
                     running={"source": "crictl", "runtimes": ["nvidia", "runc"], "default_runtime_name": "runc"})
        entry = audit.audit_host("n1", g, [rc("nvidia")], allocatable={"cpu": "1"},
                                 options={"skip_checks": ["orphan_dropin"]})
        assert "orphan_dropin" not in entry["checks_run"]
        # the kubelet config is missing: cgroup_driver could not run, and says so
        assert entry["checks_skipped"] == {"orphan_dropin": "skip_checks",
                                           "cgroup_driver": "no kubelet config at k (set gpurt_kubelet_config_path "
                                                            "or gpurt_kubelet_cgroup_driver)"}
        assert set(entry["checks_run"]) == set(checks.check_ids("hosts")) - {"orphan_dropin", "cgroup_driver"}

    def test_a_refused_config_is_judged_not_unchecked(self):
        g = {"failed": True, "msg": "n1: containerd refuses the config: containerd: drop-in config version 3 higher",
             "refused": {"cause": "containerd: drop-in config version 3 higher than root config version 2",
                         "command": "containerd --config /c config dump", "rc": 1},
             "config_path": "/c", "version": "2.3.4", "version_major": 2, "version_minor": 3}
        assert audit.not_checked_reason(g) is None
        entry = audit.audit_host("n1", g, [rc("nvidia")])
        assert entry["status"] == "FINDINGS" and entry["failing"] is True
        assert [f["check"] for f in entry["findings"]] == ["config_refused"]
        assert entry["containerd_version"] == "2.3.4"

    def test_missing_handler(self):
        entry = audit.audit_host("n1", gathered(("runc",)), [rc("nvidia"), rc("kata", selector={"k": "1"})], labels={})
        assert entry["status"] == "FINDINGS" and entry["failing"] is True
        assert entry["missing"] == ["MISSING=nvidia"]

    def test_fail_on_and_skip(self):
        g = gathered(("runc",))
        entry = audit.audit_host("n1", g, [rc("nvidia")], labels={}, options={"fail_on": "none"})
        assert entry["status"] == "FINDINGS" and entry["failing"] is False
        entry = audit.audit_host("n1", g, [rc("nvidia")], labels={}, options={"skip_checks": ["missing_handler"]})
        assert entry["status"] == "OK" and "missing_handler" not in entry["checks_run"]

    def test_bare_dump_contract(self):
        g = audit.gathered_from_dump(dump_text("containerd-2.1-v3-oldname.toml"))
        entry = audit.audit_host("dump", g, [rc("nvidia")])
        assert entry["missing"] == ["MISSING=nvidia"]
        g = audit.gathered_from_dump(dump_text("containerd-2.1-v3-nvidia.toml"))
        assert audit.audit_host("dump", g, [rc("nvidia"), rc("nvidia-cdi")])["status"] == "OK"

    @pytest.mark.parametrize("text", ["", "   \n", "not toml [", b"\xff\xfe"])
    def test_bad_dump_is_an_input_error(self, text):
        with pytest.raises(audit.AuditInputError):
            audit.gathered_from_dump(text)
        assert issubclass(audit.AuditInputError, ValueError)
        assert not issubclass(audit.AuditInputError, parse_gathered.DumpError)


class TestNodeFacts(object):
    NODES = [{"name": "n1", "labels": {"gpu": "true"}, "allocatable": {"cpu": "4"}},
             {"name": "n2", "labels": {}, "allocatable": {"cpu": "2"}}]

    def test_from_node_object(self):
        assert audit.node_facts("n1", self.NODES) == ({"gpu": "true"}, {"cpu": "4"})

    def test_explicit_values_win(self):
        assert audit.node_facts("n1", self.NODES, labels={"a": "b"}, allocatable={"cpu": "1"}) == (
            {"a": "b"}, {"cpu": "1"})

    def test_unknown_node(self):
        assert audit.node_facts("n9", self.NODES) == (None, None)
        assert audit.node_facts("n9", None) == (None, None)


def entry(name, names, **kw):
    return audit.audit_host(name, gathered(names), [], labels={}, **kw)


class TestAddDrift(object):
    def test_node_lacking_a_runtime_gets_drift(self):
        entries = [entry("a", ("runc", "nvidia")), entry("b", ("runc",)), entry("c", ("runc",))]
        out = dict((e["node"], e) for e in audit.add_drift(entries, {"gpu": ["a", "b"]}))
        assert out["a"]["status"] == "OK" and "node_drift" in out["a"]["checks_run"]
        assert [f["check"] for f in out["b"]["findings"]] == ["node_drift"]
        assert out["b"]["status"] == "FINDINGS"
        assert out["b"]["failing"] is False  # a warning at fail_on=error
        assert out["b"]["findings"][0]["evidence"]["lacks"] == ["nvidia"]
        # c is in no group: node_drift could not run on it, and says why
        assert out["c"]["checks_skipped"]["node_drift"] == "not in an inventory group with another checked node"
        assert out["c"]["findings"] == entries[2]["findings"]

    def test_fail_on_warning(self):
        entries = [entry("a", ("runc", "nvidia")), entry("b", ("runc",))]
        out = dict((e["node"], e) for e in audit.add_drift(entries, {"gpu": ["a", "b"]}, fail_on="warning"))
        assert out["b"]["failing"] is True and out["a"]["failing"] is False

    def test_not_checked_nodes_are_not_compared(self):
        entries = [entry("a", ("runc", "nvidia")), audit.audit_host("b", None, [])]
        out = audit.add_drift(entries, {"gpu": ["a", "b"]})
        assert out[1] is entries[1] and out[1]["status"] == "NOT CHECKED"
        assert out[0]["findings"] == [] and "node_drift" not in out[0]["checks_run"]

    def test_skip(self):
        entries = [entry("a", ("runc", "nvidia")), entry("b", ("runc",))]
        out = audit.add_drift(entries, {"gpu": ["a", "b"]}, skip=["node_drift"])
        assert [e["findings"] for e in out] == [[], []]
        assert all(e["checks_skipped"]["node_drift"] == "skip_checks" for e in out)

    def test_existing_findings_are_kept(self):
        entries = [entry("a", ("runc", "nvidia")),
                   audit.audit_host("b", gathered(("runc",)), [rc("nvidia")], labels={})]
        out = dict((e["node"], e) for e in audit.add_drift(entries, {"gpu": ["a", "b"]}))
        assert sorted(f["check"] for f in out["b"]["findings"]) == ["missing_handler", "node_drift"]
        assert out["b"]["failing"] is True
        assert out["b"]["missing"] == ["MISSING=nvidia"]

    def test_equal_groups_no_drift(self):
        entries = [entry("a", ("runc", "nvidia")), entry("b", ("nvidia", "runc"))]
        out = audit.add_drift(entries, {"gpu": ["a", "b"]})
        assert [e["findings"] for e in out] == [[], []]
        assert all("node_drift" in e["checks_run"] for e in out)


class FakeHostVars(object):
    """ansible's hostvars as host_vars uses it: raw_get gives a host's variables untemplated,
    hostvars[host] a view that templates on access (here: marks the value as templated)."""

    def __init__(self, hosts):
        self.hosts = hosts
        self.templated = []
        self.views = 0

    def __contains__(self, host):
        return host in self.hosts

    def raw_get(self, host):
        return self.hosts[host]

    def __getitem__(self, host):
        self.views += 1
        outer = self

        class View(dict):
            def get(self, name, default=None):
                outer.templated.append((host, name))
                return ("templated", self[name]) if name in self else default
        return View(self.hosts[host])


def test_host_vars_reads_plain_values_as_they_are_and_templates_only_templates():
    result = {"loaded": {"runtimes": {"nvidia": {}}}, "msg": "a { brace"}
    hostvars = FakeHostVars({
        "plain": {"gpurt_loaded": result, "gpurt_node_name": "gpu-1-k8s"},
        "named": {"gpurt_loaded": result, "gpurt_node_name": "{{ inventory_hostname }}-k8s", "gpurt_node_labels": None},
    })
    names = ("gpurt_loaded", "gpurt_node_name", "gpurt_node_labels")
    # a registered result and an inventory value alike: no template in them, so the host's variables are not
    # computed again (hostvars[host]: on ansible-core 2.19 a millisecond a host, for the controller check too)
    assert audit.host_vars(hostvars, "plain", names) == {
        "gpurt_loaded": result, "gpurt_node_name": "gpu-1-k8s", "gpurt_node_labels": None}
    assert hostvars.templated == [] and hostvars.views == 0
    assert audit.host_vars(hostvars, "named", names) == {
        "gpurt_loaded": result, "gpurt_node_name": ("templated", "{{ inventory_hostname }}-k8s"),
        "gpurt_node_labels": None}
    assert hostvars.templated == [("named", "gpurt_node_name")] and hostvars.views == 1


def test_host_vars_use_the_raw_variables_given():
    class Counting(FakeHostVars):
        reads = 0

        def raw_get(self, host):
            Counting.reads += 1
            return FakeHostVars.raw_get(self, host)
    hostvars = Counting({"a": {"x": 1}})
    assert audit.host_vars(hostvars, "a", ("x",), raw={"x": 2}) == {"x": 2}
    assert Counting.reads == 0


def test_host_vars_template_a_result_holding_ansibles_own_objects():
    class WarningSummary(object):  # as ansible-core 2.19 keeps a module's warning in a registered result
        pass
    result = {"changed": True, "warnings": [WarningSummary()]}
    hostvars = FakeHostVars({"a": {"res": result}})
    assert audit.host_vars(hostvars, "a", ("res",)) == {"res": ("templated", result)}
    assert hostvars.templated == [("a", "res")]


@pytest.mark.parametrize("value, plain", [
    ({"a": [1, 2.5, "x", None, True, {"b": []}]}, True),
    ([], True),
    ({"a": ({"b": 1},)}, False),
    ({1: "int key"}, False),
    ({"a": [object()]}, False),
    ({"a": {"b": "{{ inventory_hostname }}"}}, False),
    (["{% if x %}"], False),
    ("{# comment #}", False),
    ({"a": "{ not a template }"}, True),
])
def test_plain_data(value, plain):
    assert audit.plain_data(value) is plain


def test_host_vars_template_a_result_variable_written_with_templates():
    written = {"loaded": "{{ other_var }}"}  # set in the inventory, not registered
    hostvars = FakeHostVars({"a": {"res": written}})
    assert audit.host_vars(hostvars, "a", ("res",)) == {"res": ("templated", written)}


def test_plain_data_ends_on_a_cycle():
    looped = {"a": []}
    looped["a"].append(looped)
    assert audit.plain_data(looped) is False
    shared = [1]
    assert audit.plain_data({"a": shared, "b": shared}) is False


def test_host_vars_of_an_unknown_host_are_none():
    assert audit.host_vars(FakeHostVars({}), "gone", ("a", "b")) == {"a": None, "b": None}
    assert audit.host_vars({}, "gone", ("a",)) == {"a": None}


def test_drift_updates_each_entry_and_never_builds_it_again():
    entries = [entry("a", ("runc", "nvidia")), entry("b", ("runc",))]
    entries[1]["node_object"] = True  # a key the audit action adds after judging
    out = audit.add_drift(entries, {"gpu": ["a", "b"]})
    assert out[0] is entries[0] and out[1] is entries[1]
    assert out[1]["node_object"] is True and [f["check"] for f in out[1]["findings"]] == ["node_drift"]


def test_host_result_item_walks_only_that_item_of_a_result_every_host_shares():
    class WarningSummary(object):  # elsewhere in the shared result: it does not make the item templated
        pass
    batch = {"warnings": [WarningSummary()], "nodes": {"a": {"status": "OK"}, "b": {"status": "OK", "msg": "{{ x }}"}}}
    hostvars = FakeHostVars({"a": {"_batch": batch}, "b": {"_batch": batch}, "c": {}, "d": {"_batch": "{{ y }}"}})
    assert audit.host_result_item(hostvars, "a", "_batch", "nodes", "a") == {"status": "OK"}
    assert hostvars.views == 0
    assert audit.host_result_item(hostvars, "c", "_batch", "nodes", "c") is None
    assert audit.host_result_item(hostvars, "missing", "_batch", "nodes", "missing") is None
    # an item that could hold a template is read through the host's templating view
    templated = {"_batch": {"nodes": {"b": {"status": "OK", "msg": "x's value"}}}}
    views = []

    class Templating(FakeHostVars):
        def __getitem__(self, host):
            views.append(host)
            return templated
    hostvars = Templating(hostvars.hosts)
    assert audit.host_result_item(hostvars, "b", "_batch", "nodes", "b") == {"status": "OK", "msg": "x's value"}
    assert audit.host_result_item(hostvars, "d", "_batch", "nodes", "d") is None
    assert views == ["b"]


@pytest.mark.parametrize("result", [
    gathered(), gathered(("runc",)), {"failed": False, "failed_when_result": False, "msg": "n1: no containerd"},
    dict(gathered(), refused={"cause": "x"}, loaded=None, failed=True, msg="containerd refused it"),
])
def test_a_packed_gather_is_judged_as_the_gather_it_packs(result):
    classes = [rc("nvidia"), rc("kata", selector={"k": "1"})]
    packed = parse_gathered.pack(dict(result))
    assert "packed" in packed
    assert audit.audit_host("n1", packed, classes, labels={}) == audit.audit_host("n1", result, classes, labels={})


def test_packed_facts_that_are_no_gather_name_the_host():
    with pytest.raises(audit.AuditInputError, match="^n1: the gather result's packed facts are not JSON"):
        audit.audit_host("n1", {"packed": "{"}, [rc("nvidia")])

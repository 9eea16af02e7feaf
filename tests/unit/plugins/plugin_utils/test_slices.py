"""The merge of sliced audits (plugin_utils/_slices), without Ansible: slices built the way the audit_report
action builds them merge into what one run over all their hosts judges, and the merge refuses, naming them,
a missing slice, a host in two slices and slices that listed different RuntimeClasses."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _audit as audit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _report as report
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _slices as slices

RUNTIMECLASSES = [
    {"name": "nvidia", "handler": "nvidia", "node_selector": {"pool": "gpu"}, "tolerations": [], "overhead": None},
    {"name": "kata", "handler": "kata", "node_selector": {"pool": "kata"}, "tolerations": [], "overhead": None},
]
SETTINGS = {"fail_on": "warning", "skip_checks": [], "allow_no_runtimeclasses": False}


def gathered(names):
    runtimes = dict((n, {"name": n, "runtime_type": "io.containerd.runc.v2", "binary_name": "",
                         "systemd_cgroup": True, "plugin": "io.containerd.cri.v1.runtime"}) for n in names)
    return {"loaded": {"runtimes": runtimes, "runtime_names": sorted(runtimes), "default_runtime_name": "runc",
                       "enable_cdi": True, "cdi_spec_dirs": []}}


# host: (pool, loaded runtimes or None for unreachable)
FLEET = {
    "g1": ("gpu", ["runc", "nvidia"]), "g2": ("gpu", ["runc", "nvidia"]), "g3": ("gpu", ["runc"]),
    "k1": ("kata", ["runc", "kata"]), "c1": ("cpu", ["runc"]), "u1": ("gpu", None),
}
NODES = [{"name": h, "labels": {"pool": pool}, "taints": [], "runtime_handlers": None}
         for h, (pool, _runtimes) in FLEET.items()]
GROUPS = {"gpu": ["g1", "g2", "g3", "u1"], "kata": ["k1"]}


def entry(host):
    pool, runtimes = FLEET[host]
    result = gathered(runtimes) if runtimes is not None else {"unreachable": True, "msg": "ssh: connect refused"}
    out = audit.audit_host(host, result, RUNTIMECLASSES, {"pool": pool}, None, {"fail_on": SETTINGS["fail_on"]})
    out.update(node_object=True, node_name=host)
    return out


def run_report(hosts, sid, sliced, runtimeclasses=None, settings=None, outside=(), nodes=None):
    """A run's report as the audit_report action builds it (audit.yml), sliced or not; outside: the inventory's
    hosts a --limit left out of the run; nodes: the Nodes it listed (default NODES)."""
    nodes = NODES if nodes is None else nodes
    runtimeclasses = RUNTIMECLASSES if runtimeclasses is None else runtimeclasses
    settings = SETTINGS if settings is None else settings
    entries = [entry(h) for h in hosts]
    groups = dict((g, [h for h in members if h in hosts]) for g, members in GROUPS.items())
    seen = report.coverage(dict((h, h) for h in hosts), [n["name"] for n in nodes], list(outside))
    publication = slices.publication(sid, sliced, dict((h, {"node_name": h, "labels": None}) for h in hosts),
                                     groups, seen["nodes_not_checked_in_inventory"], runtimeclasses, nodes, settings)
    if sliced:
        slices.judged_at_merge(entries, settings["fail_on"])
        return report.build(entries, settings["fail_on"], "hosts", runtimeclasses,
                            extra={"slice": publication, "runtimeclass_coverage": None}, notes=[slices.SLICE_NOTE])
    entries = audit.add_drift(entries, groups, settings["fail_on"], settings["skip_checks"])
    classes = audit.runtimeclass_coverage(runtimeclasses, entries, nodes)
    return report.build(entries, settings["fail_on"], "hosts", runtimeclasses,
                        coverage=seen,
                        extra={"slice": publication, "runtimeclass_coverage": classes},
                        notes=audit.runtimeclass_notes(classes))


def sliced(count, hosts=None):
    """The slices AWX makes: slice k of N gets hosts[k-1::N] of the inventory's host list."""
    hosts = hosts or list(FLEET)
    return [("gpurt_audit_slice_%d" % k, run_report(hosts[k - 1::count], str(k), True)) for k in range(1, count + 1)]


def merged_report(parts, expected):
    merged = slices.merge(parts, expected)
    return report.build(merged["entries"], merged["fail_on"], "hosts", merged["runtimeclasses"],
                        coverage=merged["coverage"], notes=audit.runtimeclass_notes(merged["runtimeclass_coverage"]),
                        extra={"runtimeclass_coverage": merged["runtimeclass_coverage"]})


def verdict(built):
    return dict((k, v) for k, v in built.items() if k not in slices.SLICE_KEYS)


def test_a_slice_leaves_the_fleet_wide_verdicts_to_the_merge():
    part = sliced(4)[0][1]
    assert part["runtimeclass_coverage"] is None and "coverage" not in part
    assert all(e["checks_skipped"].get("node_drift") == slices.JUDGED_AT_MERGE
               for e in part["nodes"].values() if e["status"] != report.NOT_CHECKED)
    assert not any(f["check"] == "node_drift" for e in part["nodes"].values() for f in e["findings"])


@pytest.mark.parametrize("count", [1, 2, 4, 6])
def test_the_merged_slices_judge_as_one_run_over_all_hosts(count):
    whole = run_report(list(FLEET), "run", False)
    assert verdict(merged_report(sliced(count), count)) == verdict(whole)


def test_drift_across_slices_and_a_class_served_in_one_slice_are_judged_at_merge():
    built = merged_report(sliced(4), 4)
    drift = [f for f in built["nodes"]["g3"]["findings"] if f["check"] == "node_drift"]
    assert drift and drift[0]["evidence"]["lacks"] == ["nvidia"]  # g1, g2 and g3 sit in three different slices
    # kata is loaded only by k1, alone in its slice; the slices without it never said "not served"
    assert built["runtimeclass_coverage"]["kata"]["status"] == "served"
    assert built["runtimeclass_coverage"]["kata"]["serving"] == ["k1"]


def test_an_unsliced_report_merges_as_one_slice():
    whole = run_report(list(FLEET), "run", False)
    assert verdict(merged_report([("audit.json", whole)], 1)) == verdict(whole)


def test_a_missing_slice_is_refused_naming_the_nodes_no_slice_judged():
    parts = sliced(4)
    with pytest.raises(slices.MergeError) as caught:
        slices.merge(parts[:2] + parts[3:], 4)
    problem = caught.value.problems[0]
    assert problem.startswith("expected 4 slice(s), got 3 (1, 2, 4): 1 slice(s) missing")
    assert "the cluster's Nodes no slice judged: g3" in problem  # hosts[2::4] of the inventory's list


def halves_refused(**second):
    """The problems of merging two slices of the fleet, the second one's report built with SECOND."""
    hosts = list(FLEET)
    parts = [("a", run_report(hosts[0::2], "1", True)), ("b", run_report(hosts[1::2], "2", True, **second))]
    with pytest.raises(slices.MergeError) as caught:
        slices.merge(parts, 2)
    return caught.value.problems


def test_slices_that_listed_different_runtimeclasses_are_refused():
    assert halves_refused(runtimeclasses=RUNTIMECLASSES[:1]) == [
        "the slices listed different RuntimeClass sets, so they did not see one cluster (or it changed between "
        "them): slice 2 lacks kata (as another slice listed it); run the sliced audit again"]


def test_slices_that_listed_different_node_sets_are_refused_naming_them():
    """A Node added (or deleted) between two slices' lists: the coverage of the cluster is unknown, never OK."""
    grown = NODES + [{"name": "n9", "labels": {"pool": "gpu"}, "taints": [], "runtime_handlers": None}]
    assert halves_refused(nodes=grown) == [
        "the slices listed different Node sets, so they did not see one cluster (or it changed between them): "
        "slice 1 lacks n9 (as another slice listed it); run the sliced audit again"]


def test_the_merge_hands_each_node_as_the_slice_that_judged_it_listed_it():
    """The labels' input: each Node's uid, labels and runtime handlers from the slice whose host judged it."""
    hosts = list(FLEET)

    def listed(sid):
        return [dict(n, uid="%s-%s" % (n["name"], sid), labels_checked_at=None, verified_label_managers={})
                for n in NODES]
    parts = [("s%d" % k, run_report(hosts[k - 1::2], str(k), True, nodes=listed(k))) for k in (1, 2)]
    merged = slices.merge(parts, 2)
    judged_by = dict((h, str(k)) for k in (1, 2) for h in hosts[k - 1::2])
    assert [(n["name"], n["uid"]) for n in merged["nodes"]] == sorted(
        (h, "%s-%s" % (h, judged_by[h])) for h in hosts)


def test_a_host_in_two_slices_a_slice_twice_and_what_is_no_report_are_refused():
    hosts = list(FLEET)
    overlapping = [("a", run_report(hosts[:4], "1", True)), ("b", run_report(hosts[3:], "2", True))]
    with pytest.raises(slices.MergeError) as caught:
        slices.merge(overlapping, 2)
    assert caught.value.problems == ["host(s) in more than one slice: k1 (slices 1, 2)"]
    parts = sliced(2)
    with pytest.raises(slices.MergeError) as caught:
        slices.merge(parts + [("again", parts[0][1]), ("x.json", "not JSON (Expecting value)")], 2)
    assert caught.value.problems == ["x.json is not an audit report but str", "slice(s) given twice: 1"]


def test_slices_judged_with_different_settings_are_refused():
    problems = halves_refused(settings=dict(SETTINGS, fail_on="error"))
    assert len(problems) == 1 and problems[0].startswith("the slices disagree about the judging settings")


def test_a_slice_needs_an_id_of_its_own():
    assert slices.slice_id(True, None, 4711) == "4711"
    assert slices.slice_id(True, "s3", 4711) == "s3"
    assert slices.slice_id(False, None, None) == "run"
    with pytest.raises(ValueError, match="gpurt_slice_id"):
        slices.slice_id(True, None, None)


def test_the_nodes_a_limit_left_out_of_every_slice_are_named_as_one_run_names_them():
    """--limit c1 left out: each slice names the Nodes it did not cover that the inventory holds outside it."""
    hosts = [h for h in FLEET if h != "c1"]
    whole = run_report(hosts, "run", False, outside=["c1"])
    assert whole["coverage"]["nodes_not_checked_in_inventory"] == ["c1"]
    parts = [("s%d" % k, run_report(hosts[k - 1::2], str(k), True, outside=["c1"])) for k in (1, 2)]
    assert verdict(merged_report(parts, 2)) == verdict(whole)

"""Issue 11 items 2 and 5 end to end, through the real ansible-playbook: one vocabulary checked at
play start (bad values, unknown gpurt_* names, retired names), what a CI job sees for each outcome
(rc, the last lines, the report), every playbook's report directory, and a report the run could not
renew marked not judged. Issue 9 item 3 for the audit: the inventory against the cluster's Nodes."""
import json
import os
import xml.etree.ElementTree as ET

import pytest

from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
PLAYBOOKS = os.path.join(ansible_run.REPO, "playbooks")
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "bootstrap")
RC = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: %s}\nhandler: %s\n"
V3_MAIN = 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n'
V3_DROPIN = ('version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
             '  runtime_type = "io.containerd.runc.v2"\n'
             '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]\n'
             '  BinaryName = "{root}/usr/bin/nvidia-container-runtime"\n')


def playbook(name):
    return os.path.join(PLAYBOOKS, name + ".yml")


def clean_env(tmp_path):
    """No kubeconfig of the machine running the tests."""
    environ = dict((k, v) for k, v in os.environ.items() if not k.startswith("K8S_AUTH_") and k != "KUBECONFIG")
    environ["HOME"] = str(tmp_path)
    return environ


def healthy(base, name):
    node = Node(base, name, "2.1")
    node.runtime_binary()
    node.write("etc/containerd/config.toml", V3_MAIN)
    node.write("etc/containerd/conf.d/99-nvidia.toml", V3_DROPIN)
    return node


@pytest.fixture
def site(tmp_path, containerd):
    """Two healthy nodes, a manifest and a report directory holding a stale report that passed."""
    hosts = dict((name, healthy(tmp_path / "nodes", name).host_vars()) for name in ("gpu-1", "gpu-2"))
    manifests = tmp_path / "rc.yaml"
    manifests.write_text(RC % ("nvidia", "nvidia"))
    reports = tmp_path / "reports"
    reports.mkdir()
    for name in ("audit", "crosscheck", "validate-bootstrap", "cluster-audit", "remediate"):
        (reports / (name + ".json")).write_text(json.dumps({"outcome": "passed", "summary": {"passed": True}}))
        (reports / (name + ".junit.xml")).write_text('<testsuites tests="1" failures="0" errors="0"/>')
    inventory = ansible_run.write_inventory(str(tmp_path / "hosts.json"), hosts,
                                            group_vars={"gpurt_report_dir": str(reports)})
    return {"inventory": inventory, "manifests": str(manifests), "reports": reports, "tmp": tmp_path}


def report(site, name):
    with open(str(site["reports"] / (name + ".json"))) as handle:
        doc = json.load(handle)
    return doc, ET.parse(str(site["reports"] / (name + ".junit.xml"))).getroot()


def assert_not_judged(site, name):
    doc, root = report(site, name)
    assert doc["outcome"] == "not_judged" and doc["summary"]["passed"] is False and doc["nodes"] == {}
    assert doc["run_failures"][0].startswith("not judged: this report was written when the run started")
    assert root.get("errors") == "1"


# --- one vocabulary, checked at play start ------------------------------------------------------

def test_a_bad_value_fails_before_anything_runs_and_marks_the_stale_report(site):
    run = ansible_run.playbook(playbook("audit"), site["inventory"], {"gpurt_fail_on": "bogus"}, check=True)
    assert run.rc == 2, run
    assert run.gate_lines() == [
        "NOT JUDGED: Check the controller and the run's variables (gpu-1): Validation of arguments failed:",
        "  value of gpurt_fail_on must be one of: error, warning, info, none, got: bogus"], run.gate_lines()
    assert "Gather the loaded containerd config" not in run.out and "Traceback" not in run.text
    assert_not_judged(site, "audit")


@pytest.mark.parametrize("name, value, message", [
    ("gpurt_pod_requests", "900m", "and we were unable to convert to dict"),
    ("gpurt_allow_no_runtimeclasses", "maybe", "and we were unable to convert to bool"),
])
def test_bad_types_are_clear_errors(site, name, value, message):
    run = ansible_run.playbook(playbook("audit"), site["inventory"], {name: value, "gpurt_runtimeclasses_src":
                                                                      site["manifests"]}, check=True)
    assert run.rc == 2, run
    lines = run.gate_lines()
    assert lines[0] == ("NOT JUDGED: Check the controller and the run's variables (gpu-1): "
                        "Validation of arguments failed:"), lines
    assert "argument '%s' is of type" % name in lines[1] and message in lines[1] and "Traceback" not in run.text


@pytest.mark.parametrize("name", ["audit", "remediate", "cluster_audit", "crosscheck", "validate_bootstrap", "prevent",
                                  "fleet_verdict", "fence"])
def test_every_playbook_checks_its_values_in_its_first_task(site, name):
    """The first task validates the values against the playbook's spec (no Validate task of its own): a bad bool
    ends every playbook there, before anything is read, naming the variable."""
    hosts = site["inventory"] if name in ("audit", "remediate") else "localhost,"
    run = ansible_run.playbook(playbook(name), hosts, {"gpurt_k8s_validate_certs": "maybe"}, check=True)
    assert run.rc == 2, run
    lines = run.gate_lines()
    assert lines[0].startswith("NOT JUDGED: Check the controller and the run's variables (") and lines[0].endswith(
        "): Validation of arguments failed:"), lines
    assert "argument 'gpurt_k8s_validate_certs' is of type" in lines[1] and "unable to convert to bool" in lines[1]
    assert "Traceback" not in run.text and "Validate the run's variables" not in run.out, run


def test_a_mapping_where_a_list_is_read_is_refused_before_the_spec_converts_it(site):
    # validate_argument_spec would turn {'a': 1} into a list of its keys; the strict check refuses it.
    run = ansible_run.playbook(playbook("audit"), site["inventory"], {"gpurt_skip_checks": {"a": 1},
                                                                      "gpurt_runtimeclasses_src": site["manifests"]},
                               check=True)
    assert run.rc == 2, run
    assert run.gate_lines()[0] == ("NOT JUDGED: Check the controller and the run's variables (gpu-1): gpurt_skip_checks "
                                   "must be a list, got a mapping: {'a': 1} (host gpu-1)"), run.gate_lines()
    assert "Gather the loaded containerd config" not in run.out and "Traceback" not in run.text


def test_an_unknown_variable_is_a_warning_naming_the_closest(site):
    run = ansible_run.playbook(playbook("audit"), site["inventory"], {
        "gpurt_runtimeclasses_src": site["manifests"], "gpurt_kubconfig": "/x", "gpurt_fail_one": "warning"},
        check=True)
    assert run.rc == 0, run
    text = " ".join(run.text.split())
    assert "[WARNING]: unknown variable gpurt_kubconfig: no gpurt.runtime_gate playbook reads it; did you mean " \
           "gpurt_kubeconfig?" in text
    assert "unknown variable gpurt_fail_one: no gpurt.runtime_gate playbook reads it; did you mean gpurt_fail_on?" in text
    assert run.gate_lines()[-1].startswith("checked 2 of 2 node(s): 2 OK")


def test_an_old_name_fails_naming_the_new_one(site, tmp_path):
    dump = tmp_path / "dump.toml"
    dump.write_text('version = 3\n')
    run = ansible_run.playbook(playbook("crosscheck"), "localhost,", {
        "dump_file": str(dump), "kubeconfig": "/tmp/other-cluster", "gpurt_report_dir": str(site["reports"])})
    assert run.rc == 2, run
    assert run.gate_lines() == ["NOT JUDGED: Check the controller and the run's variables (localhost): kubeconfig is not "
                                "read any more by crosscheck.yml: set gpurt_kubeconfig instead"], run.gate_lines()
    assert_not_judged(site, "crosscheck")


def test_the_gpurt_name_wins_over_the_seed_labs_alias(site, tmp_path):
    node = healthy(tmp_path / "one", "dumped")
    dump = tmp_path / "node.dump.toml"
    dump.write_text(node.dump()[1])
    run = ansible_run.playbook(playbook("crosscheck"), "localhost,", {
        "dump_file": str(tmp_path / "nonexistent"), "gpurt_dump_file": str(dump),
        "runtimeclasses": str(tmp_path / "nonexistent"), "gpurt_runtimeclasses_src": site["manifests"]})
    assert run.rc == 0, run
    assert run.gate_lines() == ["OK"]


# --- what a CI job sees, and every playbook's report ------------------------------------------------

def test_no_cluster_access_fails_before_judging(site):
    run = ansible_run.playbook(playbook("audit"), site["inventory"], check=True, extra_env=clean_env(site["tmp"]))
    assert run.rc == 2, run
    lines = run.gate_lines()
    assert lines[0].startswith("NOT JUDGED: List the RuntimeClasses and the Nodes once (gpu-1): "), lines
    assert "no kubeconfig found" in lines[0]
    assert_not_judged(site, "audit")


def test_the_audit_with_findings_passes_and_fails_by_the_report(site, tmp_path):
    run = ansible_run.playbook(playbook("audit"), site["inventory"], {"gpurt_runtimeclasses_src": site["manifests"]},
                               check=True)
    assert run.rc == 0, run
    doc, root = report(site, "audit")
    assert doc["outcome"] == "passed" and root.get("failures") == "0" and root.get("errors") == "0"
    (tmp_path / "rc.yaml").write_text(RC % ("nvidia", "nvidia") + "---\n" + RC % ("kata", "kata"))
    run = ansible_run.playbook(playbook("audit"), site["inventory"], {"gpurt_runtimeclasses_src": site["manifests"]},
                               check=True)
    assert run.rc == 2, run
    assert run.gate_lines()[-1] == "checked 2 of 2 node(s): 0 OK, 2 with findings, 0 not checked; 2 failing (fail_on=error)"
    doc, root = report(site, "audit")
    assert doc["outcome"] == "failed" and root.get("failures") == "2"


def test_crosscheck_writes_its_report(site, tmp_path):
    node = healthy(tmp_path / "one", "dumped")
    dump = tmp_path / "node.dump.toml"
    dump.write_text(node.dump()[1])
    (tmp_path / "rc.yaml").write_text(RC % ("nvidia", "nvidia") + "---\n" + RC % ("kata", "kata"))
    run = ansible_run.playbook(playbook("crosscheck"), "localhost,", {
        "gpurt_dump_file": str(dump), "gpurt_runtimeclasses_src": site["manifests"],
        "gpurt_report_dir": str(site["reports"])})
    assert run.rc == 2, run
    assert run.gate_lines() == ["MISSING=kata"]
    doc, root = report(site, "crosscheck")
    assert doc["mode"] == "dump" and doc["outcome"] == "failed"
    assert doc["nodes"]["node.dump.toml"]["missing"] == ["MISSING=kata"]
    assert root.find("testsuite/testcase/failure").get("message").startswith("RuntimeClass kata asks for handler")
    # A dump it cannot read: nothing judged, the report says so.
    dump.write_text("garbage [[[")
    run = ansible_run.playbook(playbook("crosscheck"), "localhost,", {
        "dump_file": str(dump), "runtimeclasses": site["manifests"], "gpurt_report_dir": str(site["reports"])})
    assert run.rc == 2, run
    assert run.gate_lines()[0].startswith("NOT JUDGED: Cross-check the dump (localhost): ")
    assert_not_judged(site, "crosscheck")


def bootstrap(site, containerd, **extra):
    extra_vars = {"gpurt_bootstrap_template": os.path.join(FIXTURES, "config.toml.j2"),
                  "gpurt_bootstrap_files": [{"src": os.path.join(FIXTURES, "99-nvidia.toml.j2"),
                                             "dest": "/etc/containerd/conf.d/99-nvidia.toml"}],
                  "gpurt_bootstrap_vars": os.path.join(FIXTURES, "vars.yml"),
                  "gpurt_runtimeclasses_src": os.path.join(FIXTURES, "runtimeclass-nvidia.yaml"),
                  "gpurt_bootstrap_containerd_bins": {"1": containerd["1.7"], "2": containerd["2.1"]},
                  "gpurt_report_dir": str(site["reports"])}
    extra_vars.update(extra)
    extra_vars = dict((k, v) for k, v in extra_vars.items() if v is not None)
    return ansible_run.playbook(playbook("validate_bootstrap"), "localhost,", extra_vars,
                                extra_env=clean_env(site["tmp"]))


def test_validate_bootstrap_writes_its_report(site, containerd, tmp_path):
    run = bootstrap(site, containerd)
    assert run.rc == 0, run
    doc, _root = report(site, "validate-bootstrap")
    assert doc["mode"] == "bootstrap" and doc["outcome"] == "passed"
    assert doc["nodes"]["bootstrap"]["containerd_version"].startswith("2.1.")
    run = bootstrap(site, containerd, gpurt_bootstrap_userdata=os.path.join(FIXTURES, "user-data-eks-nodeadm.txt"),
                    gpurt_bootstrap_name="gpu-pool")
    assert run.rc == 2, run
    doc, root = report(site, "validate-bootstrap")
    entry = doc["nodes"]["gpu-pool"]
    assert entry["status"] == "NOT VALIDATED" and entry["reasons"][0].startswith("an EKS nodeadm NodeConfig")
    assert root.find("testsuite/testcase/failure").get("type") == "NOT VALIDATED"
    assert run.gate_lines()[0].startswith("gpu-pool: NOT VALIDATED: an EKS nodeadm NodeConfig")


def test_validate_bootstrap_that_read_no_runtimeclass_fails_unless_allowed(site, containerd, private_cluster):
    """A cluster with no RuntimeClass at all, which the shared one never is: this module's own control plane,
    whose RuntimeClasses (another test's) are deleted first."""
    api = Api(private_cluster.kubeconfig)
    try:
        for item in api.node_k8s.list_runtime_class().items:
            api.node_k8s.delete_runtime_class(item.metadata.name)
        assert api.node_k8s.list_runtime_class().items == []
    finally:
        api.close()
    kubeconfig = private_cluster.kubeconfig
    refused = bootstrap(site, containerd, gpurt_kubeconfig=kubeconfig, gpurt_runtimeclasses_src=None)
    allowed = bootstrap(site, containerd, gpurt_kubeconfig=kubeconfig, gpurt_runtimeclasses_src=None,
                        gpurt_allow_no_runtimeclasses=True)
    assert refused.rc == 2, refused
    assert refused.gate_lines() == [
        "bootstrap: OK", "FAILED: no RuntimeClass was read, so no handler was cross-checked: the cluster has no "
        "RuntimeClass (set allow_no_runtimeclasses / gpurt_allow_no_runtimeclasses=true to audit the nodes alone)"], \
        refused.gate_lines()
    assert allowed.rc == 0, allowed
    doc, _root = report(site, "validate-bootstrap")
    assert doc["outcome"] == "passed"


@pytest.mark.parametrize("name, report_name", [("cluster_audit", "cluster-audit"), ("crosscheck", "crosscheck"),
                                               ("validate_bootstrap", "validate-bootstrap")])
def test_a_limit_that_leaves_out_localhost_fails_a_localhost_playbook(site, name, report_name):
    # The playbook's play runs on localhost alone; without the guard, "skipping: no hosts matched" and rc 0.
    run = ansible_run.playbook(playbook(name), site["inventory"], {"gpurt_runtimeclasses_src": site["manifests"]},
                               args=("--limit", "gpu-1"), extra_env=clean_env(site["tmp"]))
    assert run.rc == 2, run
    assert run.gate_lines() == [
        "NOT JUDGED: Fail the run, which checked nothing (gpu-1): nothing was checked: this playbook runs on "
        "localhost, and --limit gpu-1 leaves it out (run it without --limit, or with localhost in it)"], run.gate_lines()
    assert_not_judged(site, report_name)


@pytest.mark.parametrize("name, hosts, report_name", [("audit", "inventory", "audit"),
                                                      ("cluster_audit", "localhost,", "cluster-audit")])
def test_manifests_that_hold_no_runtimeclass_fail_unless_allowed(site, private_cluster, name, hosts, report_name):
    """Manifests with no RuntimeClass are judged as a cluster with none: the run fails with why in its report,
    and gpurt_allow_no_runtimeclasses=true audits the nodes (cluster_audit: the Nodes) alone."""
    none = site["tmp"] / "none.yaml"
    none.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: not-a-runtimeclass\n")
    base = {"gpurt_runtimeclasses_src": str(none), "gpurt_report_dir": str(site["reports"]),
            "gpurt_kubeconfig": private_cluster.kubeconfig}
    hosts = site["inventory"] if hosts == "inventory" else hosts
    refused = ansible_run.playbook(playbook(name), hosts, base, check=True)
    assert refused.rc == 2 and "Traceback" not in refused.text, refused
    doc, _root = report(site, report_name)
    assert doc["outcome"] == "failed" and any(
        "no RuntimeClass was read" in failure and str(none) in failure for failure in doc["run_failures"]), doc
    allowed = ansible_run.playbook(playbook(name), hosts, dict(base, gpurt_allow_no_runtimeclasses=True), check=True)
    doc, _root = report(site, report_name)
    # cluster_audit's private cluster may list no Node: that failure is its own, not the RuntimeClasses'
    assert not any("RuntimeClass" in failure for failure in doc["run_failures"]) and doc["outcome"] != "not_judged", doc
    if name == "audit":
        assert allowed.rc == 0 and doc["outcome"] == "passed", allowed
        assert allowed.gate_lines()[:2] == ["gpu-1: OK", "gpu-2: OK"], allowed.gate_lines()


def test_cluster_audit_marks_its_stale_report(site):
    run = ansible_run.playbook(playbook("cluster_audit"), "localhost,", {"gpurt_report_dir": str(site["reports"])},
                               extra_env=clean_env(site["tmp"]))
    assert run.rc == 2, run
    assert run.gate_lines()[0].startswith("NOT JUDGED: List the RuntimeClasses (localhost): ")
    assert_not_judged(site, "cluster-audit")


# --- the audit: the inventory against the cluster's Nodes (issue 9 item 3) ---------------------------

def test_audit_names_hosts_without_a_node_object_and_nodes_no_host_covers(site, tmp_path, private_cluster):
    """A real control plane of its own (private_cluster): the coverage counts every Node of the cluster."""
    with open(site["inventory"]) as handle:
        inv = json.load(handle)
    inv["all"]["hosts"]["gpu-2"]["gpurt_node_name"] = "gpu-2.example.internal"
    inv["all"]["hosts"]["gpu-3"] = dict(inv["all"]["hosts"]["gpu-1"])  # in the inventory, outside the --limit
    with open(site["inventory"], "w") as handle:
        json.dump(inv, handle)
    api = Api(private_cluster.kubeconfig)
    try:
        api.runtimeclass("nvidia", "nvidia")
        for name in ("gpu-1", "gpu-2", "gpu-3", "cpu-7"):
            api.node(name, labels={"pool": "gpu"}, cpu="8")
    finally:
        api.close()
    run = ansible_run.playbook(playbook("audit"), site["inventory"], {"gpurt_kubeconfig": private_cluster.kubeconfig},
                               check=True, args=["--limit", "gpu-1,gpu-2"],
                               extra_env=dict(clean_env(tmp_path), ANSIBLE_CALLBACK_RESULT_FORMAT="json"))
    assert run.rc == 0, run  # warnings, not failures
    doc, root = report(site, "audit")
    assert doc["coverage"]["hosts_without_node"] == {"gpu-2": {"node_name": "gpu-2.example.internal", "closest": "gpu-2"}}
    assert doc["coverage"]["nodes_not_checked"] == ["cpu-7", "gpu-2", "gpu-3"]
    assert doc["coverage"]["nodes_not_checked_in_inventory"] == ["gpu-3"]
    assert doc["nodes"]["gpu-1"]["node_object"] is True and doc["nodes"]["gpu-2"]["node_object"] is False
    assert doc["nodes"]["gpu-2"]["checks_skipped"]["overhead_unschedulable"].startswith("node allocatable unknown")
    lines = run.gate_lines()
    assert ("not checked: 3 of the cluster's 4 Node(s) are covered by no host of this run: cpu-7, gpu-2, gpu-3; in the "
            "inventory but outside this run (host pattern or --limit): gpu-3") in lines
    assert any(line.startswith("gpu-2: no Node object named gpu-2.example.internal in the cluster") for line in lines)
    assert run.text.count("[WARNING]: gpu-2: no Node object named gpu-2.example.internal") == 1
    skipped = [c.get("name") for c in root.findall("testsuite[@name='coverage']/testcase") if c.find("skipped") is not None]
    assert skipped == ["Node cpu-7", "Node gpu-2", "Node gpu-3"]


def test_audit_from_manifests_says_the_nodes_were_not_listed(site):
    run = ansible_run.playbook(playbook("audit"), site["inventory"], {"gpurt_runtimeclasses_src": site["manifests"]},
                               check=True)
    assert run.rc == 0, run
    doc, _root = report(site, "audit")
    assert doc["coverage"]["nodes_listed"] is False and doc["nodes"]["gpu-1"]["node_object"] is None
    assert doc["coverage"]["why"] in run.gate_lines()
    assert "no Node object" not in run.text and "not checked: " not in run.text

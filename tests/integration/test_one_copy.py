"""Issue 35 item 2: one copy of each failure, the short fatal line, the right host charged, the summary
always printed, and the hint of a typo in the last line; real ansible-playbook runs of audit.yml on local
nodes loaded by the real containerd, with the repository's ansible.cfg (the summary callback enabled)."""
import json
import os
import time

import pytest

from tests.integration.test_validate_bootstrap import run as validate, template_vars
from tests.lib import ansible_run, containerd_bins
from tests.lib.cluster_objects import Api
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
AUDIT = os.path.join(ansible_run.REPO, "playbooks", "audit.yml")
MAIN = 'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n' \
       '  runtime_type = "io.containerd.runc.v2"\n' \
       '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]\n' \
       '  BinaryName = "{root}/usr/bin/nvidia-container-runtime"\n'
NO_RUNTIMECLASS = "no RuntimeClass was read, so no handler was cross-checked"
CHECKED_TOO_LITTLE = "the run checked too little, so the gate fails: the summary's FAILED line says why"
ADMISSION_FAILED = ("no RuntimeClass was gated: the admission policy could not be kept current: the summary's FAILED "
                    "line says why")


@pytest.fixture(scope="module")
def site(tmp_path_factory, containerd):
    base = tmp_path_factory.mktemp("one-copy")
    hosts = {}
    for name in ("gpu-1", "gpu-2"):
        node = Node(base, name, "2.1")
        node.runtime_binary()
        node.write("etc/containerd/config.toml", MAIN)
        hosts[name] = node.host_vars()
    (base / "none.yaml").write_text("# none\n")
    home = base / "home"
    home.mkdir()
    return {"base": base, "home": str(home),
            "inventory": ansible_run.write_inventory(str(base / "hosts.json"), hosts)}


def test_a_run_that_checked_too_little_fails_once_on_the_controller_after_its_summary(site, private_cluster):
    """A real cluster with the hosts' Nodes and no RuntimeClass at all."""
    api = Api(private_cluster.kubeconfig)
    try:
        for name in ("gpu-1", "gpu-2"):
            api.node(name)
    finally:
        api.close()
    run = ansible_run.playbook(AUDIT, site["inventory"], {"gpurt_kubeconfig": private_cluster.kubeconfig}, check=True)
    assert run.rc == 2 and "Traceback" not in run.text, run
    # the short fatal line: no report in it; the reason once, on the summary's FAILED line
    assert max(len(line) for line in run.out.splitlines()) < 700, run
    assert run.out.count(NO_RUNTIMECLASS) == 1, run
    assert run.out.count(CHECKED_TOO_LITTLE) == 2, run  # ansible-core's [ERROR] block and the fatal line
    assert '"report"' not in run.out and '"summary_lines"' not in run.out, run
    # charged to the controller, not to the host the judging ran for
    assert run.recap["localhost"]["failed"] == 1, run.recap
    assert run.recap["gpu-1"]["failed"] == 0 and run.recap["gpu-2"]["failed"] == 0, run.recap
    # the summary, its nodes and why the run fails
    gate = run.gate_lines()
    assert gate[:2] == ["gpu-1: OK", "gpu-2: OK"], gate
    assert gate[-2].startswith("FAILED: " + NO_RUNTIMECLASS) and gate[-1].startswith("checked 2 of 2 node(s)"), gate


def test_without_the_summary_callback_the_reason_is_printed_once_by_the_summary_task(site, private_cluster):
    (site["base"] / "empty.cfg").write_text("[defaults]\n")
    run = ansible_run.playbook(AUDIT, site["inventory"], {"gpurt_kubeconfig": private_cluster.kubeconfig}, check=True,
                               extra_env={"ANSIBLE_CONFIG": str(site["base"] / "empty.cfg")})
    assert run.rc == 2 and "RUNTIME GATE" not in run.out, run
    assert run.out.count(NO_RUNTIMECLASS) == 1 and run.out.count('"FAILED: ' + NO_RUNTIMECLASS) == 1, run
    assert run.out.count(CHECKED_TOO_LITTLE) == 2, run


def test_cluster_audit_prints_why_it_checked_too_little_once(private_cluster):
    run = ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", "cluster_audit.yml"), "localhost,",
                               {"gpurt_kubeconfig": private_cluster.kubeconfig})
    assert run.rc == 2 and "Traceback" not in run.text, run
    assert run.out.count(NO_RUNTIMECLASS) == 1 and run.out.count(CHECKED_TOO_LITTLE) == 2, run
    assert any(line.startswith("FAILED: " + NO_RUNTIMECLASS) for line in run.gate_lines()), run.gate_lines()
    assert run.recap["localhost"]["failed"] == 1, run.recap


HOLDS_NONE = "in %s: read 1 file(s), holding no document"


@pytest.mark.parametrize("callback", [True, False])
def test_audit_with_manifests_that_hold_no_runtimeclass_says_why_once(site, tmp_path, callback):
    """gpurt_runtimeclasses_src names a file with no RuntimeClass: the nodes are judged and summed up, and the run
    fails on the controller, the reason (what the manifests hold) printed once; the report says failed, with why."""
    (site["base"] / "empty.cfg").write_text("[defaults]\n")
    why = HOLDS_NONE % (site["base"] / "none.yaml")
    run = ansible_run.playbook(AUDIT, site["inventory"], {"gpurt_runtimeclasses_src": str(site["base"] / "none.yaml"),
                                                          "gpurt_report_dir": str(tmp_path)},
                               check=True, extra_env=None if callback else {
                                   "ANSIBLE_CONFIG": str(site["base"] / "empty.cfg")})
    report = json.loads((tmp_path / "audit.json").read_text())
    assert report["outcome"] == "failed" and any(why in failure for failure in report["run_failures"]), report
    assert run.rc == 2 and "Traceback" not in run.text, run
    assert max(len(line) for line in run.out.splitlines()) < 700, run
    assert run.out.count(why) == 1 and run.out.count(NO_RUNTIMECLASS) == 1, run
    assert 1 <= run.out.count(CHECKED_TOO_LITTLE) <= 2 and run.out.count("fatal: [localhost]: FAILED! => ") == 1, run
    assert run.recap["localhost"]["failed"] == 1, run.recap
    assert run.recap["gpu-1"]["failed"] == 0 and run.recap["gpu-2"]["failed"] == 0, run.recap
    if callback:
        gate = run.gate_lines()
        assert gate[:2] == ["gpu-1: OK", "gpu-2: OK"], gate
        assert gate[-2].startswith("FAILED: " + NO_RUNTIMECLASS) and why in gate[-2], gate
    else:
        assert "RUNTIME GATE" not in run.out and run.out.count('"FAILED: ' + NO_RUNTIMECLASS) == 1, run


@pytest.mark.parametrize("callback", [True, False])
def test_cluster_audit_with_manifests_that_hold_no_runtimeclass_says_why_once(site, private_cluster, callback):
    (site["base"] / "empty.cfg").write_text("[defaults]\n")
    why = HOLDS_NONE % (site["base"] / "none.yaml")
    run = ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", "cluster_audit.yml"), "localhost,",
                               {"gpurt_kubeconfig": private_cluster.kubeconfig,
                                "gpurt_runtimeclasses_src": str(site["base"] / "none.yaml")},
                               extra_env=None if callback else {"ANSIBLE_CONFIG": str(site["base"] / "empty.cfg")})
    assert run.rc == 2 and "Traceback" not in run.text, run
    assert max(len(line) for line in run.out.splitlines()) < 700, run
    assert run.out.count(why) == 1 and run.out.count(NO_RUNTIMECLASS) == 1, run
    assert 1 <= run.out.count(CHECKED_TOO_LITTLE) <= 2 and run.out.count("fatal: [localhost]: FAILED! => ") == 1, run
    assert run.recap["localhost"]["failed"] == 1, run.recap
    if callback:
        assert any(line.startswith("FAILED: " + NO_RUNTIMECLASS) and why in line for line in run.gate_lines()), run
    else:
        assert "RUNTIME GATE" not in run.out and run.out.count('"FAILED: ' + NO_RUNTIMECLASS) == 1, run


@pytest.mark.parametrize("callback", [True, False])
def test_validate_bootstrap_prints_why_it_checked_too_little_once(site, private_cluster, containerd, callback):
    (site["base"] / "empty.cfg").write_text("[defaults]\n")
    variables = template_vars(gpurt_kubeconfig=private_cluster.kubeconfig)
    del variables["gpurt_runtimeclasses_src"]  # the cluster's RuntimeClasses: none
    run = validate(containerd, extra_env=None if callback else {"ANSIBLE_CONFIG": str(site["base"] / "empty.cfg")},
                   **variables)
    assert run.rc == 2 and "Traceback" not in run.text, run
    assert run.out.count(NO_RUNTIMECLASS) == 1 and run.out.count(CHECKED_TOO_LITTLE) == 2, run
    assert ("FAILED: " + NO_RUNTIMECLASS in "\n".join(run.gate_lines())) is callback, run


@pytest.mark.parametrize("callback", [True, False])
def test_crosscheck_against_a_cluster_with_no_runtimeclass_says_why_once(site, private_cluster, tmp_path, callback):
    """crosscheck.yml lists the cluster (no gpurt_runtimeclasses_src): it has no RuntimeClass."""
    config = tmp_path / "config.toml"
    config.write_text(MAIN.format(root=""))
    rc, out, err = containerd_bins.dump(containerd_bins.binary("2.1"), str(config))
    assert rc == 0, err
    (tmp_path / "gpu-7.toml").write_text(out)
    (site["base"] / "empty.cfg").write_text("[defaults]\n")
    run = ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", "crosscheck.yml"), "localhost,",
                               {"gpurt_dump_file": str(tmp_path / "gpu-7.toml"),
                                "gpurt_kubeconfig": private_cluster.kubeconfig},
                               extra_env=None if callback else {"ANSIBLE_CONFIG": str(site["base"] / "empty.cfg")})
    assert run.rc == 2 and "Traceback" not in run.text, run
    why = "gpu-7.toml: no RuntimeClass was read, so no handler can be cross-checked: the cluster has no RuntimeClass"
    assert run.out.count("no RuntimeClass was read") == 1 and run.out.count(why) == 1, run
    assert run.out.count("fatal: [localhost]: FAILED! => ") == 1 and 1 <= run.out.count(CHECKED_TOO_LITTLE) <= 2, run
    assert run.recap["localhost"]["failed"] == 1, run.recap
    assert (run.gate_lines() == ["FAILED: " + why]) is callback, run.gate_lines()


def test_the_hint_of_a_typo_is_in_the_last_line(site):
    """gpurt_runtimeclass_src (sic): no source of RuntimeClasses, so the run looks for a kubeconfig and finds none;
    the last line, the one CI shows, names the variable meant."""
    run = ansible_run.playbook(AUDIT, site["inventory"], {"gpurt_runtimeclass_src": str(site["base"] / "none.yaml")},
                               check=True, extra_env={"HOME": site["home"], "KUBECONFIG": ""})
    assert run.rc == 2 and "Traceback" not in run.text, run
    last = run.out.rstrip().splitlines()[-1]
    assert "did you mean gpurt_runtimeclasses_src?" in last, run
    assert "kubeconfig" in "\n".join(run.gate_lines()[:-1]), run.gate_lines()


NOT_JUDGED = "the run stopped before judging, so the gate fails: the summary's NOT JUDGED line says why"
REFUSING = ("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
            "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n")


@pytest.mark.parametrize("callback", [True, False])
@pytest.mark.parametrize("case", ["bad value", "no kubeconfig", "refusing apiserver"])
def test_a_run_stopped_before_judging_says_why_once(site, case, callback):
    """A failure before judging (a value the spec refuses; no kubeconfig; an apiserver that refuses): its reason once,
    on the summary's NOT JUDGED line (the callback's, else a task's); the failed task's message short and fixed, at
    most twice (ansible-core 2.19); the first host charged, as the run-once task that failed runs for it."""
    env = {"HOME": site["home"], "KUBECONFIG": ""}
    if not callback:
        (site["base"] / "empty.cfg").write_text("[defaults]\n")
        env["ANSIBLE_CONFIG"] = str(site["base"] / "empty.cfg")
    (site["base"] / "refusing.kubeconfig").write_text(REFUSING)
    variables, task, why = {
        "bad value": ({"gpurt_fail_on": "bogus", "gpurt_runtimeclasses_src": str(site["base"] / "none.yaml")},
                      "Check the controller and the run's variables",
                      "value of gpurt_fail_on must be one of: error, warning, info, none, got: bogus"),
        "no kubeconfig": ({}, "List the RuntimeClasses and the Nodes once", "no kubeconfig found"),
        "refusing apiserver": ({"gpurt_kubeconfig": str(site["base"] / "refusing.kubeconfig")},
                               "List the RuntimeClasses and the Nodes once", "127.0.0.1:1"),
    }[case]
    run = ansible_run.playbook(AUDIT, site["inventory"], variables, check=True, extra_env=env)
    assert_not_judged_once(run, callback, task, why, "gpu-1", "gpu-1 -> localhost")
    assert "Gather the loaded containerd config" not in run.out, run


def assert_not_judged_once(run, callback, task, why, host, fatal_host):
    """Stopped before judging: exit 2, the reason once (on the NOT JUDGED line of the callback, else of a task), the
    fixed message at most twice (ansible-core 2.19), one fatal line, the host charged."""
    assert run.rc == 2 and "Traceback" not in run.text, run
    assert run.out.count(why) == 1, run
    assert 1 <= run.out.count(NOT_JUDGED) <= 2 and run.out.count("fatal: [%s]: FAILED! => " % fatal_host) == 1, run
    assert max(len(line) for line in run.out.splitlines()) < 700, run
    assert run.recap[host]["failed"] == 1, run.recap
    if callback:
        gate = run.gate_lines()
        assert gate[0].startswith("NOT JUDGED: %s (%s): " % (task, host)), gate
        assert why in "\n".join(gate) and NOT_JUDGED not in "\n".join(gate), gate
    else:
        assert "RUNTIME GATE" not in run.out and '"NOT JUDGED: %s:"' % task in run.out, run


# Each playbook's listing tasks: the RuntimeClasses, then the Nodes (asked for with manifests of the RuntimeClasses).
STOPPED = {
    "remediate": ("List the RuntimeClasses, for the re-audit", "List the Nodes once", {"gpurt_list_nodes": True}),
    "cluster_audit": ("List the RuntimeClasses", "List the Nodes", {}),
}


@pytest.mark.parametrize("callback", [True, False])
@pytest.mark.parametrize("name, case", [(name, case) for name in ("remediate", "cluster_audit") for case in (
    "bad value", "no kubeconfig", "refusing apiserver", "no Nodes")] + [("remediate", "refused stop rule")])
def test_remediate_and_cluster_audit_stopped_before_judging_say_why_once(site, name, case, callback):
    """As audit.yml above: a failure before judging (a value the spec refuses; no kubeconfig; an apiserver that
    refuses; remediate's stop rule out of range; the Nodes not listed after the RuntimeClasses were read from
    manifests) prints its reason once, on the summary's NOT JUDGED line (the callback's, else a task's); the failed
    task's message short and fixed; the host the run-once task ran for charged (remediate: the first host;
    cluster_audit: the controller)."""
    env = {"HOME": site["home"], "KUBECONFIG": ""}
    if not callback:
        (site["base"] / "empty.cfg").write_text("[defaults]\n")
        env["ANSIBLE_CONFIG"] = str(site["base"] / "empty.cfg")
    (site["base"] / "refusing.kubeconfig").write_text(REFUSING)
    (site["base"] / "nvidia.yaml").write_text(
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n")
    listing, nodes, asked = STOPPED[name]
    variables, task, why = {
        "bad value": ({"gpurt_fail_on": "bogus", "gpurt_runtimeclasses_src": str(site["base"] / "nvidia.yaml")},
                      "Check the controller and the run's variables",
                      "value of gpurt_fail_on must be one of: error, warning, info, none, got: bogus"),
        "no kubeconfig": ({}, listing, "no kubeconfig found"),
        "refusing apiserver": ({"gpurt_kubeconfig": str(site["base"] / "refusing.kubeconfig")}, listing,
                               "cannot connect to https://127.0.0.1:1"),
        "no Nodes": (dict(asked, gpurt_runtimeclasses_src=str(site["base"] / "nvidia.yaml")), nodes,
                     "no kubeconfig found"),
        # the spec says int; the range is the rollout's own check
        "refused stop rule": ({"gpurt_max_fail_percentage": 150}, "Set the stop rule of the rollout",
                              "gpurt_max_fail_percentage must be a whole number from 0 to 100, not 150"),
    }[case]
    hosts, charged = (site["inventory"], "gpu-1") if name == "remediate" else ("localhost,", "localhost")
    run = ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", name + ".yml"), hosts, variables,
                               check=True, extra_env=env)
    fatal_host = "gpu-1 -> localhost" if name == "remediate" else "localhost"
    assert_not_judged_once(run, callback, task, why, charged, fatal_host)
    assert "containerd_runtime :" not in run.out and "Judge every Node" not in run.out, run
    assert sum(h["failed"] for h in run.recap.values()) == 1, run.recap


def _prevent(cluster, check=False, extra_env=None, **extra):
    variables = {"gpurt_kubeconfig": cluster.kubeconfig}
    variables.update(extra)
    return ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", "prevent.yml"), "localhost,", variables,
                                check=check, extra_env=extra_env)


@pytest.mark.parametrize("check, callback", [(False, True), (True, True), (False, False)])
def test_prevent_without_its_namespace_names_it_and_how_to_create_it(site, private_cluster, check, callback):
    """Issue 35 item 3: the namespace of the admission parameters does not exist on this cluster. A Node carries a
    fresh verified label, so the run has proof to work from (without, it refuses first: test_one_copy_playbooks).
    Item 2: the reason once, on the summary's FAILED line (the callback's, else a task's); the failed task's message
    is short and fixed."""
    api = Api(private_cluster.kubeconfig)
    try:
        api.node("gpu-1", handlers=["nvidia", "runc"])
        api.core.patch_node("gpu-1", {"metadata": {
            "labels": {"runtime-gate.gpurt.io/nvidia": "true"},
            "annotations": {"runtime-gate.gpurt.io/checked-at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}})
    finally:
        api.close()
    (site["base"] / "empty.cfg").write_text("[defaults]\n")
    run = _prevent(private_cluster, check=check, gpurt_admission_namespace="gpurt-missing-ns",
                   extra_env=None if callback else {"ANSIBLE_CONFIG": str(site["base"] / "empty.cfg")})
    assert run.rc == 2 and "Traceback" not in run.text, run
    if callback:
        last = run.gate_lines()[0]
        assert len(run.gate_lines()) == 1 and last.startswith("FAILED: "), run.gate_lines()
    else:
        assert "RUNTIME GATE" not in run.out, run
        last = [line for line in run.out.splitlines() if '"FAILED: ' in line][0]
    assert "namespace gpurt-missing-ns" in last and "does not exist" in last, run.gate_lines()
    assert "kubectl create namespace gpurt-missing-ns" in last, run.gate_lines()
    assert "{namespace}" not in run.text and "is host a Kubernetes apiserver" not in run.text, run
    assert run.out.count("kubectl create namespace gpurt-missing-ns") == 1, run
    assert 1 <= run.out.count(ADMISSION_FAILED) <= 2 and run.out.count("fatal: [localhost]: FAILED! => ") == 1, run
    assert max(len(line) for line in run.out.splitlines()) < 700, run
    assert run.recap["localhost"]["failed"] == 1, run.recap

"""Issue 35, one copy of each failure on the playbooks besides the audit: validate_bootstrap.yml, crosscheck.yml,
cluster_audit.yml and prevent.yml, run as a user runs them (real ansible-playbook with the repository's ansible.cfg,
the summary callback enabled; real containerd binaries; a real kube-apiserver of this module's own). Each test
asserts on what the console shows: how often a finding's text is printed, the failed line and the node it names,
no task result or report dumped as JSON, the host the recap charges, the summary and the exit code."""
import json
import os
import time

import pytest
from kubernetes.client.rest import ApiException

from tests.integration.test_validate_bootstrap import FIXTURES, RUNTIMECLASS, run as validate, template_vars
from tests.lib import ansible_run, containerd_bins
from tests.lib.cluster_objects import Api

pytestmark = pytest.mark.integration
PLAYBOOKS = os.path.join(ansible_run.REPO, "playbooks")
# A finding printed whole is about 450 characters; a task result or a report dumped as JSON is thousands.
LONGEST = 700
TYPO = "likely a misspelt 'nvidia'"


def assert_short(run):
    assert max(len(line) for line in run.out.splitlines()) < LONGEST, run
    for key in ('"findings"', '"report"', '"checks_run"', '"detail_lines"', '"summary_lines"', '"unevaluated"'):
        assert key not in run.out, (key, run)
    assert "Traceback" not in run.text, run


# --- validate_bootstrap.yml ------------------------------------------------------------------------------------

def test_a_broken_template_prints_its_finding_once(containerd):
    """The template registers 'nvidai' where the RuntimeClass asks for 'nvidia'."""
    typo = {"containerd_major": 2, "gpu_runtime_name": "nvidai"}
    run = validate(containerd, **template_vars(gpurt_bootstrap_vars=typo))
    assert run.rc == 2, run
    assert_short(run)
    assert run.out.count(TYPO) == 1, run
    assert "(item=bootstrap: 1 finding (1 error); MISSING=nvidia) => " in run.out, run
    assert run.recap["localhost"]["failed"] == 1, run.recap
    assert run.gate_lines() == ["bootstrap: MISSING=nvidia"], run.gate_lines()


def test_a_template_containerd_refuses_prints_its_finding_once(containerd, tmp_path):
    broken = tmp_path / "config.toml.j2"
    broken.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"\n')
    run = validate(containerd, **template_vars(gpurt_bootstrap_template=str(broken), gpurt_bootstrap_files=[]))
    assert run.rc == 2, run
    assert_short(run)
    assert run.out.count("written by template %s" % broken) == 1, run
    assert "(item=bootstrap: 1 finding (1 error)) => " in run.out, run
    assert run.gate_lines()[0].startswith("bootstrap: ERROR config_refused: "), run.gate_lines()


def test_a_bootstrap_not_validated_prints_each_reason_once(containerd):
    run = validate(containerd, gpurt_bootstrap_userdata=os.path.join(FIXTURES, "user-data-generated.sh"),
                   gpurt_runtimeclasses_src=RUNTIMECLASS)
    assert run.rc == 2, run
    assert_short(run)
    assert run.out.count("sed -i 's/SystemdCgroup = false/SystemdCgroup = true/'") == 1, run
    assert run.out.count("fatal: [localhost]: FAILED! => ") == 1, run
    assert "the bootstrap is NOT VALIDATED: a part of it cannot be evaluated here" in run.out, run
    assert len(run.gate_lines()) == 3 and all("NOT VALIDATED" in line for line in run.gate_lines()), run.gate_lines()


# --- crosscheck.yml --------------------------------------------------------------------------------------------

def _dump(tmp_path, name, runtime):
    config = tmp_path / "config.toml"
    config.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]\n'
                      '  runtime_type = "io.containerd.runc.v2"\n' % runtime)
    rc, out, err = containerd_bins.dump(containerd_bins.binary("2.1"), str(config))
    assert rc == 0, err
    dump = tmp_path / name
    dump.write_text(out)
    return str(dump)


@pytest.mark.parametrize("node_name, named", [(None, "gpu-7.toml"), ("gpu-7", "gpu-7")])
def test_crosscheck_fails_in_one_short_line_that_names_the_node(containerd, tmp_path, node_name, named):
    extra = {"gpurt_dump_file": _dump(tmp_path, "gpu-7.toml", "nvidai"), "gpurt_runtimeclasses_src": RUNTIMECLASS}
    if node_name:
        extra["gpurt_node_name"] = node_name
    run = ansible_run.playbook(os.path.join(PLAYBOOKS, "crosscheck.yml"), "localhost,", extra)
    assert run.rc == 2, run
    assert_short(run)
    assert run.out.count(TYPO) == 1, run
    assert "the loaded containerd config of %s does not have" % named in run.out, run
    assert "of localhost" not in run.out, run
    assert "(item=%s: 1 finding (1 error); MISSING=nvidia) => " % named in run.out, run
    # the seed lab's contract, unchanged
    assert run.gate_lines() == ["MISSING=nvidia"], run.gate_lines()


# --- a RuntimeClass source that holds none: crosscheck.yml and validate_bootstrap.yml -------------------------------

NO_RUNTIMECLASS = "no RuntimeClass was read, so no handler"
CHECKED_TOO_LITTLE = "the run checked too little, so the gate fails: the summary's FAILED line says why"


def without_callback(tmp_path):
    """ANSIBLE_CONFIG of an empty ansible.cfg: the run as a user without the summary callback sees it."""
    (tmp_path / "empty.cfg").write_text("[defaults]\n")
    return {"ANSIBLE_CONFIG": str(tmp_path / "empty.cfg")}


def assert_why_once(run, callback, why):
    """The reason once (the FAILED line: the callback's, else a task's), the fixed fail message twice (ansible-core
    2.19's [ERROR] block and its fatal line; once before 2.19), charged to localhost, exit code 2."""
    assert run.rc == 2, run
    assert_short(run)
    assert run.out.count(NO_RUNTIMECLASS) == 1 and run.out.count(why) == 1, run
    assert 1 <= run.out.count(CHECKED_TOO_LITTLE) <= 2 and run.out.count("fatal: [localhost]: FAILED! => ") == 1, run
    assert "NOT JUDGED" not in "\n".join(run.gate_lines()), run
    assert run.recap["localhost"]["failed"] == 1, run.recap
    if callback:
        assert any(line.startswith("FAILED: ") and why in line for line in run.gate_lines()), run.gate_lines()
    else:
        assert "RUNTIME GATE" not in run.out and ('"FAILED: ' in run.out), run


@pytest.mark.parametrize("callback", [True, False])
def test_crosscheck_with_manifests_that_hold_no_runtimeclass_says_why_once(containerd, tmp_path, callback):
    (tmp_path / "none.yaml").write_text("# none\n")
    reports = tmp_path / "reports"
    run = ansible_run.playbook(os.path.join(PLAYBOOKS, "crosscheck.yml"), "localhost,",
                               {"gpurt_dump_file": _dump(tmp_path, "gpu-7.toml", "nvidia"),
                                "gpurt_runtimeclasses_src": str(tmp_path / "none.yaml"),
                                "gpurt_report_dir": str(reports)},
                               extra_env=None if callback else without_callback(tmp_path))
    assert_why_once(run, callback, "in %s: read 1 file(s), holding no document" % (tmp_path / "none.yaml"))
    assert "gpu-7.toml: no RuntimeClass was read" in run.out, run
    # the dump was not judged: the report written at play start stands
    assert json.loads((reports / "crosscheck.json").read_text())["outcome"] == "not_judged"


@pytest.mark.parametrize("callback", [True, False])
def test_validate_bootstrap_with_manifests_that_hold_no_runtimeclass_says_why_once(containerd, tmp_path, callback):
    (tmp_path / "other.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    run = validate(containerd, extra_env=None if callback else without_callback(tmp_path),
                   **template_vars(gpurt_runtimeclasses_src=str(tmp_path / "other.yaml")))
    assert_why_once(run, callback, "holding %s: kind ConfigMap, apiVersion v1" % (tmp_path / "other.yaml"))


# --- cluster_audit.yml and prevent.yml, on a real control plane of this module's own -----------------------------

@pytest.fixture(scope="module")
def cluster(private_cluster):
    api = Api(private_cluster.kubeconfig)
    try:
        api.namespace("gpurt-runtime-gate")
        api.runtimeclass("nvidia", "nvidia")
        api.runtimeclass("kata", "kata")
        for name in ("one-1", "one-2"):
            api.node(name, handlers=["runc"])
        api.node("one-3", handlers=["nvidia", "kata", "runc"])
        api.node("one-old")
    finally:
        api.close()
    return private_cluster


def test_cluster_audit_prints_each_finding_once_and_fails_in_one_short_line(cluster):
    run = ansible_run.playbook(os.path.join(PLAYBOOKS, "cluster_audit.yml"), "localhost,",
                               {"gpurt_kubeconfig": cluster.kubeconfig})
    assert run.rc == 2, run
    assert_short(run)
    # one-1 and one-2 lack both handlers: each finding once, with the Nodes it applies to
    assert run.out.count("asks for handler 'nvidia'") == 1 and run.out.count("asks for handler 'kata'") == 1, run
    assert run.out.count("does not report status.runtimeHandlers") == 1, run
    assert run.out.count("fatal: [localhost]: FAILED! => ") == 1, run
    assert ('"msg": "3 of 4 Node(s) fail the runtime gate: the summary names each finding with its fix and the '
            'Nodes it applies to"') in run.out, run
    assert run.recap["localhost"]["failed"] == 1, run.recap
    lines = run.gate_lines()
    assert lines[:4] == ["one-1: 2 findings (2 error); MISSING=kata MISSING=nvidia",
                         "one-2: 2 findings (2 error); MISSING=kata MISSING=nvidia", "one-3: OK",
                         "one-old: NOT CHECKED (Node reports no status.runtimeHandlers)"], lines
    grouped = ("ERROR missing_handler on 2 nodes (one-1, one-2): RuntimeClass nvidia asks for handler 'nvidia', which "
               "the status.runtimeHandlers of each Node does not have")
    assert any(line.startswith(grouped) for line in lines), lines
    assert lines[-1].startswith("checked 3 of 4 node(s)"), lines


def _prevent(cluster, check=False, extra_env=None, **extra):
    return ansible_run.playbook(os.path.join(PLAYBOOKS, "prevent.yml"), "localhost,",
                                dict({"gpurt_kubeconfig": cluster.kubeconfig}, **extra), check=check,
                                extra_env=extra_env)


NO_PROOF = ("FAILED: nothing was written: no Node carries a verified label (runtime-gate.gpurt.io/<handler>=true) "
            "checked within gpurt_label_max_age 24h, so there is nothing to gate on")
REFUSED = "nothing was written: no Node's fresh verified label backs the run: the summary's FAILED line says why"


@pytest.mark.parametrize("check, callback", [(True, True), (False, True), (False, False)])
def test_prevent_with_no_verified_label_writes_nothing_fails_and_says_why(cluster, tmp_path, check, callback):
    """The reason once: on the summary's FAILED line (the callback's, else a task's); the failed task's message is
    short and fixed (twice on ansible-core 2.19: its [ERROR] block and its fatal line)."""
    run = ansible_run.playbook(os.path.join(PLAYBOOKS, "prevent.yml"), "localhost,",
                               {"gpurt_kubeconfig": cluster.kubeconfig}, check=check,
                               extra_env=None if callback else without_callback(tmp_path))
    assert run.rc == 2, run
    assert '"msg": []' not in run.out and "Traceback" not in run.text, run
    assert run.out.count("so there is nothing to gate on") == 1 and 1 <= run.out.count(REFUSED) <= 2, run
    assert run.out.count("label the Nodes first (audit.yml with gpurt_label_nodes=true)") == 1, run
    if callback:
        lines = run.gate_lines()
        assert len(lines) == 1 and lines[0].startswith(NO_PROOF), lines
        assert "label the Nodes first (audit.yml with gpurt_label_nodes=true)" in lines[0], lines
    else:
        assert "RUNTIME GATE" not in run.out and '"' + NO_PROOF in run.out, run
    assert run.recap["localhost"]["failed"] == 1, run.recap
    api = Api(cluster.kubeconfig)
    try:
        assert api.node_k8s.read_runtime_class("nvidia").scheduling is None
        with pytest.raises(ApiException) as info:
            api.core.read_namespaced_config_map("runtime-gate-verified-handlers", "gpurt-runtime-gate")
        assert info.value.status == 404
    finally:
        api.close()


def test_prevent_that_only_removes_needs_no_proof(cluster):
    run = _prevent(cluster, gpurt_admission_mode="off", gpurt_gate_runtimeclasses=[])
    assert run.rc == 0, run


def test_prevent_with_only_older_labels_names_them(cluster):
    old = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3 * 86400))
    api = Api(cluster.kubeconfig)
    try:
        api.core.patch_node("one-3", {"metadata": {"labels": {"runtime-gate.gpurt.io/nvidia": "true"},
                                                   "annotations": {"runtime-gate.gpurt.io/checked-at": old}}})
    finally:
        api.close()
    run = _prevent(cluster, check=True)
    assert run.rc == 2, run
    assert "(1 Node(s) with older labels, not counted: one-3)" in run.gate_lines()[0], run.gate_lines()
    # named once, in the refusal's reason: no line of its own
    assert run.out.count("one-3") == 1, run


def test_prevent_names_thirty_stale_nodes_in_a_line_per_reason(cluster):
    """Fleet scale: 29 Nodes whose verified labels are older than gpurt_label_max_age and 2 with no readable check
    time, in the real apiserver. The console names them in two lines, one per reason, each with its count and 5
    names; no stale Node has a line of its own."""
    def label(api, name, checked):
        api.core.patch_node(name, {"metadata": {
            "labels": {"runtime-gate.gpurt.io/nvidia": "true", "runtime-gate.gpurt.io/runc": "true"},
            "annotations": {"runtime-gate.gpurt.io/checked-at": checked}}})

    now = time.time()
    api = Api(cluster.kubeconfig)
    try:
        for i in range(28):
            api.node("stale-%02d" % i, handlers=["nvidia", "runc"])
            label(api, "stale-%02d" % i, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 2 * 86400 - i * 3600)))
        label(api, "one-3", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 3 * 86400)))
        for name in ("undated-1", "undated-2"):
            api.node(name, handlers=["nvidia", "runc"])
            label(api, name, "yesterday")
        api.node("fresh-1", handlers=["nvidia", "runc"])
        label(api, "fresh-1", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)))
    finally:
        api.close()
    run = _prevent(cluster, check=True)
    assert run.rc == 0 and "Traceback" not in run.text, run
    stale = [line for line in run.gate_lines() if line.startswith("stale labels: ")]
    assert len(stale) == 2, run.gate_lines()
    assert stale[0].startswith("stale labels: 29 Node(s) not counted as verified: their labels (nvidia, runc) were "
                               "checked 48.0 h to 75.0 h ago, longer ago than gpurt_label_max_age 24h: "), stale
    assert "and 24 more; the next labeling run (audit.yml with gpurt_label_nodes=true)" in stale[0], stale
    assert stale[1].startswith("stale labels: 2 Node(s) not counted as verified: their labels (nvidia, runc) carry no "
                               "readable check time (annotation runtime-gate.gpurt.io/checked-at: 'yesterday'): "
                               "undated-1, undated-2; "), stale
    # each reason once; 5 names of the 29, each once; no line per Node; a console the size of a small fleet's
    assert run.out.count("longer ago than gpurt_label_max_age") == 1 and run.out.count("no readable check") == 1, run
    named = [name for name in ["stale-%02d" % i for i in range(28)] + ["one-3"] if name in run.out]
    assert len(named) == 5 and all(run.out.count(name) == 1 for name in named), run
    assert len(run.out.splitlines()) < 120, run


# --- prevent.yml's other refusals: the reason once (the FAILED line), the fixed message at most twice ------------

def _proof(cluster):
    """A Node with fresh verified labels (nvidia, runc) and team=ml: the run has proof to work from."""
    api = Api(cluster.kubeconfig)
    try:
        api.node("proof-1", handlers=["nvidia", "runc"])
        api.core.patch_node("proof-1", {"metadata": {
            "labels": {"runtime-gate.gpurt.io/nvidia": "true", "runtime-gate.gpurt.io/runc": "true", "team": "ml"},
            "annotations": {"runtime-gate.gpurt.io/checked-at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}})
    finally:
        api.close()


def assert_refusal_once(run, callback, why, refused):
    """The reason once, on the FAILED line (the callback's, else a task's); the failed task's fixed message at most
    twice (ansible-core 2.19's [ERROR] block and its fatal line); charged to localhost; exit code 2."""
    assert run.rc == 2, run
    assert_short(run)
    assert run.out.count(why) == 1, run
    assert 1 <= run.out.count(refused) <= 2 and run.out.count("fatal: [localhost]: FAILED! => ") == 1, run
    assert run.recap["localhost"]["failed"] == 1, run.recap
    if callback:
        lines = run.gate_lines()
        assert len(lines) == 1 and lines[0].startswith("FAILED: nothing was written: ") and why in lines[0], lines
    else:
        assert "RUNTIME GATE" not in run.out and '"FAILED: nothing was written: ' in run.out, run


@pytest.mark.parametrize("callback", [True, False])
def test_prevent_refusing_a_class_that_cannot_be_gated_says_why_once(cluster, tmp_path, callback):
    _proof(cluster)
    run = _prevent(cluster, check=True, gpurt_gate_runtimeclasses=["nvidia-nowhere"],
                   extra_env=None if callback else without_callback(tmp_path))
    assert_refusal_once(run, callback, "nvidia-nowhere: no such RuntimeClass",
                        "nothing was written: a RuntimeClass cannot be gated: the summary's FAILED line says why")


@pytest.mark.parametrize("callback", [True, False])
def test_prevent_refusing_a_selector_another_manager_owns_names_the_variable_once(cluster, tmp_path, callback):
    """The dry run's conflict: the RuntimeClass's nodeSelector is owned by the field manager that created it (a Node
    matches it, so the plan does not refuse it first)."""
    _proof(cluster)
    api = Api(cluster.kubeconfig)
    try:
        api.runtimeclass("owned-sel", "runc", selector={"team": "ml"})
    finally:
        api.close()
    run = _prevent(cluster, check=True, gpurt_gate_runtimeclasses=["owned-sel"],
                   extra_env=None if callback else without_callback(tmp_path))
    refused = "nothing was written: a RuntimeClass selector could not be dry-run: the summary's FAILED line says why"
    assert_refusal_once(run, callback, "RuntimeClass owned-sel: not written", refused)
    assert run.out.count("gpurt_gate_force=true") == 1 and run.out.count("nodeSelector (conflict with") == 1, run


@pytest.mark.parametrize("callback", [True, False])
def test_prevent_refusing_when_its_deadline_passed_says_why_once(tmp_path, callback):
    """Stand-in apiserver (tests/lib/fake_apiserver.py): a real one cannot be made to freeze on demand. It lists,
    then answers no RuntimeClass request: the first class's dry run fails on the deadline, the others are not tried."""
    from tests.lib.fake_apiserver import FakeApiServer, write_kubeconfig as fake_kubeconfig
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    node = {"metadata": {"name": "gpu-a", "labels": {"runtime-gate.gpurt.io/nvidia": "true"},
                         "annotations": {"runtime-gate.gpurt.io/checked-at": now}},
            "status": {"runtimeHandlers": [{"name": ""}, {"name": "nvidia"}]}}
    classes = [{"metadata": {"name": "gpu-%d" % i}, "handler": "nvidia"} for i in range(3)]
    with FakeApiServer(runtimeclasses=classes, nodes=[node], token="t0ken") as fake:
        fake.script("runtimeclasses", [200] + [{"status": 200, "sleep": 60}] * 6)
        kubeconfig = fake_kubeconfig(str(tmp_path / "kubeconfig"), fake.url, token="t0ken")
        run = ansible_run.playbook(os.path.join(PLAYBOOKS, "prevent.yml"), "localhost,",
                                   {"gpurt_kubeconfig": kubeconfig, "gpurt_deadline": 5},
                                   extra_env=None if callback else without_callback(tmp_path))
    refused = "nothing was written: a RuntimeClass selector could not be dry-run: the summary's FAILED line says why"
    why = "(not tried, the run's deadline of 5 s (gpurt_deadline) had passed: gpu-1, gpu-2)"
    assert_refusal_once(run, callback, why, refused)
    assert run.out.count("gpurt_deadline") == 1, run


@pytest.mark.parametrize("callback", [True, False])
def test_prevent_whose_write_fails_after_its_dry_run_says_why_once(tmp_path, callback):
    """Stand-in apiserver (tests/lib/fake_apiserver.py): a real one cannot be made to accept the dry run and fail the
    real apply. gpurt_admission_mode=off needs no admission API, and gpurt_selector_enforcement=assume no admission
    metrics (the stand-in has no admission); the apply answers 500 until the module gives up."""
    from tests.lib.fake_apiserver import FakeApiServer, write_kubeconfig as fake_kubeconfig
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    node = {"metadata": {"name": "gpu-a", "labels": {"runtime-gate.gpurt.io/nvidia": "true"},
                         "annotations": {"runtime-gate.gpurt.io/checked-at": now}},
            "status": {"runtimeHandlers": [{"name": ""}, {"name": "nvidia"}]}}
    with FakeApiServer(runtimeclasses=[{"metadata": {"name": "gpu-0"}, "handler": "nvidia"}], nodes=[node],
                       token="t0ken") as fake:
        # the list, the dry run's GET and PATCH, the apply's GET: served; the apply: 500
        fake.script("runtimeclasses", [200] * 4 + [500] * 10)
        kubeconfig = fake_kubeconfig(str(tmp_path / "kubeconfig"), fake.url, token="t0ken")
        run = ansible_run.playbook(os.path.join(PLAYBOOKS, "prevent.yml"), "localhost,",
                                   {"gpurt_kubeconfig": kubeconfig, "gpurt_admission_mode": "off",
                                    "gpurt_selector_enforcement": "assume"},
                                   extra_env=None if callback else without_callback(tmp_path))
        applies = [r for r in fake.requests if r["method"] == "PATCH" and "dryRun" not in r["query"]]
    assert applies, fake.requests
    why = "Gating the RuntimeClasses failed: gpu-0: gave up after 4 attempts applying runtimeclass gpu-0: 500"
    refused = "a RuntimeClass was not gated: the summary's FAILED line says why"
    assert run.rc == 2 and "Traceback" not in run.text, run
    assert_short(run)
    assert run.out.count(why) == 1 and run.out.count("scripted 500") == 1, run
    assert 1 <= run.out.count(refused) <= 2 and run.out.count("fatal: [localhost]: FAILED! => ") == 1, run
    assert run.recap["localhost"]["failed"] == 1, run.recap
    if callback:
        lines = run.gate_lines()
        assert len(lines) == 1 and lines[0].startswith("FAILED: " + why), lines
    else:
        assert "RUNTIME GATE" not in run.out and '"FAILED: ' + why in run.out, run

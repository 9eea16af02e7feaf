"""Issue 34: a sliced audit merges into the fleet verdict of one run over all its hosts. ansible-runner (the
engine of every AWX job) runs audit.yml on 4 slices of one inventory of local nodes, sliced the way AWX
slices (slice k of 4 gets hosts[k-1::4], each slice job an inventory of its own hosts), then
fleet_verdict.yml with the set_stats artifacts the slices published (what an AWX workflow hands to its next
node) and with their report files. The RuntimeClasses and Nodes come from a real kube-apiserver of this
module alone; each node's config is loaded by the real containerd.

Laid out so that every fleet-wide verdict crosses the slices: the gpu group's drift (h6 lacks the runtime
h1 and h2 load, three hosts in two slices), a RuntimeClass (kata) served only by h3 of slice 3, and slice 4
whose hosts are all unreachable. A missing slice is refused, naming the Nodes no slice judged."""
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess

import ansible_runner
import pytest
import yaml

from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.nodes import Node
# one config a real containerd 2.1 loads (by migrating it), and a runtime in it
from tests.integration.test_labels_by_proof import RUNTIME, V2

pytestmark = pytest.mark.integration
PLAYBOOKS = os.path.join(ansible_run.REPO, "playbooks")
SLICES = 4
# host: (pool label of its Node, runtimes its containerd loads besides runc; None: unreachable)
FLEET = {
    "h1": ("gpu", ["nvidia", "nvidia-legacy"]), "h2": ("gpu", ["nvidia", "nvidia-legacy"]), "h3": ("kata", ["kata"]),
    "h4": ("gpu", None), "h5": ("cpu", []), "h6": ("gpu", ["nvidia"]), "h7": ("cpu", []), "h8": ("cpu", None),
}
ORDER = sorted(FLEET)  # the inventory's host list, which AWX slices
GROUPS = {"gpu": ["h1", "h2", "h4", "h6"], "kata": ["h3"]}
RUNTIMECLASSES = {"nvidia": ("nvidia", {"pool": "gpu"}), "kata": ("kata", {"pool": "kata"})}
# The verdict's keys that say how it was made (the slices' publication), not what it judged.
HOW = ("slice", "slices")


@contextlib.contextmanager
def on_cluster(cluster):
    api = Api(cluster.kubeconfig)
    try:
        for name, (handler, selector) in RUNTIMECLASSES.items():
            api.runtimeclass(name, handler, selector=selector)
        for host, (pool, _runtimes) in FLEET.items():
            api.node(host, labels={"pool": pool}, cpu="4")
        yield api
    finally:
        try:
            for name in RUNTIMECLASSES:
                api.node_k8s.delete_runtime_class(name)
            for host in FLEET:
                api.core.delete_node(host)
        finally:
            api.close()


def host_vars(base, host):
    runtimes = FLEET[host][1]
    if runtimes is None:
        return {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
                "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes"}
    node = Node(base, host, "2.1")
    node.runtime_binary()
    node.write("etc/containerd/config.toml", V2 + "".join(RUNTIME.replace("{name}", r) for r in runtimes))
    return node.host_vars()


def inventory(path, fleet_vars, hosts):
    """An inventory of HOSTS, with the groups as AWX's slice inventory keeps them: only its own hosts."""
    return ansible_run.write_inventory(path, dict((h, fleet_vars[h]) for h in hosts),
                                       groups=dict((g, [h for h in m if h in hosts]) for g, m in GROUPS.items()))


def runner(directory, playbook, extravars, inventory_path=None, check=False):
    """One job as AWX runs it: ansible-runner with a private data dir, the extra vars in env/extravars."""
    os.makedirs(directory, exist_ok=True)
    env = ansible_run.env()
    envvars = dict((k, env[k]) for k in ("ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_NOCOLOR",
                                         "ANSIBLE_DEPRECATION_WARNINGS", "ANSIBLE_LOCAL_TEMP", "PATH"))
    kwargs = dict(private_data_dir=str(directory), playbook=os.path.join(PLAYBOOKS, playbook), extravars=extravars,
                  envvars=envvars, quiet=True, cmdline="--check" if check else None)
    if inventory_path:
        kwargs["inventory"] = inventory_path
    run = ansible_runner.run(**kwargs)
    stats = [e for e in run.events if e.get("event") == "playbook_on_stats"]
    artifacts = (stats[-1].get("event_data") or {}).get("artifact_data") or {} if stats else {}
    return run, artifacts, run.stdout.read()


def report_of(directory):
    with open(os.path.join(str(directory), "audit.json")) as handle:
        return json.load(handle)


def verdict(report):
    return dict((k, v) for k, v in report.items() if k not in HOW)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, private_cluster, containerd):
    base = tmp_path_factory.mktemp("sliced")
    kube = {"gpurt_kubeconfig": private_cluster.kubeconfig}
    fleet_vars = dict((h, host_vars(base / "nodes", h)) for h in ORDER)  # each node written once
    out = {"base": base, "slices": [], "kube": kube, "vars": fleet_vars}
    with on_cluster(private_cluster):
        whole = runner(base / "whole", "audit.yml", dict(kube, gpurt_report_dir=str(base / "whole-reports")),
                       inventory(str(base / "whole.json"), fleet_vars, ORDER), check=True)
        out["whole"] = whole + (report_of(base / "whole-reports"),)
        for k in range(1, SLICES + 1):
            hosts = ORDER[k - 1::SLICES]
            # AWX passes no slice number: each slice job has its own awx_job_id, which keys its artifact.
            extra = dict(kube, gpurt_slice=True, awx_job_id=4700 + k, gpurt_report_dir=str(base / ("slice%d" % k)))
            run = runner(base / ("job%d" % k), "audit.yml", extra,
                         inventory(str(base / ("slice%d.json" % k)), fleet_vars, hosts), check=True)
            out["slices"].append(run + (report_of(base / ("slice%d" % k)), hosts))
    return out


def test_the_slices_are_cut_as_awx_cuts_them_and_each_publishes_its_report(fleet):
    assert [s[4] for s in fleet["slices"]] == [["h1", "h5"], ["h2", "h6"], ["h3", "h7"], ["h4", "h8"]]
    for k, (run, artifacts, out, report, hosts) in enumerate(fleet["slices"], 1):
        assert list(artifacts) == ["gpurt_audit_slice_%d" % (4700 + k)], out[-3000:]
        assert artifacts["gpurt_audit_slice_%d" % (4700 + k)] == report
        assert sorted(report["nodes"]) == hosts and report["slice"]["sliced"] is True
        # a slice never judges a fleet-wide check on its own view
        assert report["runtimeclass_coverage"] is None and "coverage" not in report
        assert not any(f["check"] == "node_drift" for e in report["nodes"].values() for f in e["findings"])
    # slice 4's hosts were all unreachable: it published all the same, each host NOT CHECKED
    assert [(e["status"], e["unreachable"]) for e in fleet["slices"][3][3]["nodes"].values()] == [
        ("NOT CHECKED", True), ("NOT CHECKED", True)]
    run, artifacts, out, whole = fleet["whole"]
    assert list(artifacts) == ["gpurt_audit_slice_run"] and artifacts["gpurt_audit_slice_run"] == whole


def test_the_unsliced_run_judges_what_the_slices_cross(fleet):
    """The premises: what one run over all hosts says of drift, the class served in one slice, slice 4."""
    whole = fleet["whole"][3]
    drift = [f for f in whole["nodes"]["h6"]["findings"] if f["check"] == "node_drift"]
    assert drift and drift[0]["evidence"]["lacks"] == ["nvidia-legacy"]
    assert whole["runtimeclass_coverage"]["kata"]["serving"] == ["h3"]
    assert whole["runtimeclass_coverage"]["kata"]["status"] == "served"
    assert whole["runtimeclass_coverage"]["nvidia"]["unknown"] == ["h4"]
    assert [whole["nodes"][h]["status"] for h in ("h4", "h8")] == ["NOT CHECKED", "NOT CHECKED"]
    # slices 1, 2 and 4 do not hold kata's only Node: each of them alone would call it not served
    assert [e["node"] for s in fleet["slices"] for e in s[3]["nodes"].values()
            if "kata" in (e["runtimes"] or [])] == ["h3"]


def test_fleet_verdict_from_the_workflow_artifacts_equals_the_unsliced_run(fleet, tmp_path):
    artifacts = {}
    for s in fleet["slices"]:
        artifacts.update(s[1])
    run, _artifacts, out = runner(tmp_path / "job", "fleet_verdict.yml", dict(
        artifacts, gpurt_slices_expected=SLICES, gpurt_report_dir=str(tmp_path / "reports")))
    merged = report_of(tmp_path / "reports")
    assert verdict(merged) == verdict(fleet["whole"][3])
    assert merged["slices"] == {"expected": 4, "merged": ["4701", "4702", "4703", "4704"]}
    # the same exit as the unsliced run's failing nodes (2 for failed hosts; the whole run adds 4 for unreachable)
    assert run.rc == 2, out[-4000:]
    assert "2 node(s) fail the runtime gate: h4, h8" in " ".join(out.split())


def refused(tmp_path, artifacts):
    """fleet_verdict on ARTIFACTS, which it must refuse: (its report, its output)."""
    run, _artifacts, out = runner(tmp_path / "job", "fleet_verdict.yml", dict(
        artifacts, gpurt_slices_expected=SLICES, gpurt_report_dir=str(tmp_path / "reports")))
    merged = report_of(tmp_path / "reports")
    assert run.rc == 2, out[-4000:]
    assert merged["outcome"] == "failed" and merged["nodes"] == {}
    assert merged["coverage"] == {"nodes_listed": False, "why": "coverage unknown: the slices were not merged"}
    return merged, out


def test_a_slice_whose_hosts_were_all_unreachable_fails_the_verdict_as_the_unsliced_run(fleet, tmp_path):
    """Slice 4's hosts were unreachable: one run over all hosts tried them once more and ended 4,
    ansible-playbook's code for a host it cannot reach; the fleet verdict, which reaches no node, fails with the
    same node lines, names them unreachable and ends 2 (docs/awx.md maps the codes; AWX sees a failed job
    either way)."""
    whole_run, _artifacts, whole_out, whole = fleet["whole"]
    assert whole_run.rc == 4 and whole_run.status == "failed"
    assert fleet["slices"][3][0].rc == 4  # the slice job itself ends as the unsliced run does
    artifacts = {}
    for s in fleet["slices"]:
        artifacts.update(s[1])
    run, _artifacts, out = runner(tmp_path / "job", "fleet_verdict.yml", dict(artifacts, gpurt_slices_expected=SLICES))
    assert (run.rc, run.status) == (2, "failed"), out[-4000:]
    flat = " ".join(out.split())
    for host in ("h4", "h8"):
        line = "%s: NOT CHECKED (unreachable: Task failed: Failed to connect to the host via ssh" % host
        assert line in " ".join(whole_out.split()) and line in flat
    assert ("unreachable when their slice gathered them, so NOT CHECKED: h4, h8 (one run over all hosts tries "
            "them once more and ends with ansible-playbook's code 4 when they still are unreachable; this run "
            "reaches no node and ends 2)") in flat, flat[-3000:]
    with open(os.path.join(ansible_run.REPO, "docs", "awx.md")) as handle:
        [mapping] = [line for line in handle.read().splitlines()
                     if line.startswith("| a node its slice could not reach |")]
    assert "| 4 |" in mapping and "| 2 |" in mapping


def test_slices_that_listed_different_node_sets_are_refused_naming_them(fleet, private_cluster, tmp_path):
    """A Node joined the cluster after slices 1-3 listed it and before slice 4 did: the coverage of the
    cluster is unknown, never OK."""
    artifacts = {}
    with on_cluster(private_cluster) as api:
        for k in range(1, SLICES + 1):
            if k == SLICES:
                api.node("h9", labels={"pool": "gpu"}, cpu="4")
            hosts = ORDER[k - 1::SLICES]
            artifacts.update(runner(tmp_path / ("job%d" % k), "audit.yml",
                                    dict(fleet["kube"], gpurt_slice=True, awx_job_id=4700 + k),
                                    inventory(str(tmp_path / ("slice%d.json" % k)), fleet["vars"], hosts),
                                    check=True)[1])
        api.core.delete_node("h9")
    merged, out = refused(tmp_path, artifacts)
    assert "the slices listed different Node sets" in " ".join(out.split())
    assert merged["run_failures"] == [
        "the slices cannot be merged: the slices listed different Node sets, so they did not see one cluster (or it "
        "changed between them): slice 4701 lacks h9 (as another slice listed it); slice 4702 lacks h9 (as another "
        "slice listed it); slice 4703 lacks h9 (as another slice listed it); run the sliced audit again"]


def documented(pattern):
    """The blocks of docs/awx.md's section on sliced audits whose text matches PATTERN."""
    with open(os.path.join(ansible_run.REPO, "docs", "awx.md")) as handle:
        text = handle.read().split("## Past one controller", 1)[1]
    return [b for b in re.findall(r"```(?:yaml)?\n(.*?)```", text, re.S) if re.search(pattern, b)]


def test_the_documented_command_merges_the_report_files_as_the_unsliced_run(fleet, tmp_path):
    """docs/awx.md's command, exactly as written, in a directory holding the slices' reports."""
    [block] = documented(r"^ansible-playbook gpurt\.runtime_gate\.fleet_verdict")
    for k in range(1, SLICES + 1):
        (tmp_path / ("slice%d" % k)).mkdir()
        shutil.copy(os.path.join(str(fleet["base"]), "slice%d" % k, "audit.json"), str(tmp_path / ("slice%d" % k)))
    proc = subprocess.run(shlex.split(block.strip()), cwd=str(tmp_path), env=ansible_run.env(), check=False,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=600)
    assert proc.returncode == 2, proc.stdout[-4000:]
    assert verdict(report_of(tmp_path / "fleet")) == verdict(fleet["whole"][3]), proc.stdout[-4000:]
    with open(str(tmp_path / "fleet" / "audit.junit.xml")) as merged, \
            open(os.path.join(str(fleet["base"]), "whole-reports", "audit.junit.xml")) as whole:
        assert merged.read() == whole.read()


def unknown_options(args, options, where):
    """Each key of ARGS (and of its sub-dicts and lists of dicts) that the module documents nowhere."""
    out = []
    for key, value in args.items():
        if key not in options:
            out.append("%s.%s" % (where, key))
            continue
        sub = options[key].get("suboptions")
        if sub and isinstance(value, dict):
            out.extend(unknown_options(value, sub, where + "." + key))
        elif sub and isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, dict):
                    out.extend(unknown_options(item, sub, "%s.%s[%d]" % (where, key, index)))
    return out


def test_the_documented_workflow_uses_only_options_the_awx_modules_have():
    [block] = documented(r"awx\.awx\.workflow_job_template")
    tasks = yaml.safe_load(block)
    modules = sorted(set(k for t in tasks for k in t if k.startswith("awx.awx.")))
    proc = subprocess.run([os.path.join(ansible_run.BIN, "ansible-doc"), "-j"] + modules, env=ansible_run.env(),
                          check=True, stdout=subprocess.PIPE, universal_newlines=True, timeout=300)
    docs = json.loads(proc.stdout)
    problems = []
    for task in tasks:
        [module] = [k for k in task if k.startswith("awx.awx.")]
        options = docs[module]["doc"]["options"]
        problems += unknown_options(task[module], options, module)
        for key, value in task[module].items():
            choices = options.get(key, {}).get("choices")
            if choices and value not in choices:
                problems.append("%s.%s=%s (choices %s)" % (module, key, value, choices))
    assert problems == []
    names = [t["awx.awx.job_template"]["name"] for t in tasks if "awx.awx.job_template" in t]
    [workflow] = [t["awx.awx.workflow_job_template"] for t in tasks if "awx.awx.workflow_job_template" in t]
    assert [n["unified_job_template"]["name"] for n in workflow["workflow_nodes"]] == names
    sliced = tasks[0]["awx.awx.job_template"]
    assert (sliced["playbook"], sliced["job_slice_count"], sliced["extra_vars"]["gpurt_slice"]) == (
        "playbooks/audit.yml", 4, True)
    assert tasks[1]["awx.awx.job_template"]["extra_vars"]["gpurt_slices_expected"] == sliced["job_slice_count"]


def test_a_missing_slice_is_refused_and_the_coverage_is_unknown(fleet, tmp_path):
    artifacts = {}
    for s in fleet["slices"][:2] + fleet["slices"][3:]:
        artifacts.update(s[1])
    merged, out = refused(tmp_path, artifacts)
    assert merged["run_failures"] == [
        "the slices cannot be merged: expected 4 slice(s), got 3 (4701, 4702, 4704): 1 slice(s) missing (a slice job "
        "that failed before it published, or was not run); the cluster's Nodes no slice judged: h3, h7"]
    assert "the cluster's Nodes no slice judged: h3, h7" in " ".join(out.split())


def test_a_slice_without_an_id_is_refused(fleet, tmp_path):
    """Outside AWX (no awx_job_id) a slice must be given gpurt_slice_id: two slices must not share a key."""
    run, artifacts, out = runner(tmp_path / "job", "audit.yml", dict(fleet["kube"], gpurt_slice=True),
                                 inventory(str(tmp_path / "inv.json"), fleet["vars"], ["h5"]), check=True)
    assert run.rc != 0 and artifacts == {}
    assert "gpurt_slice=true needs an id unique to the slice" in " ".join(out.split()), out[-3000:]

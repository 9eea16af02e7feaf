"""Issue 2 end to end: the real containerd 1.6 / 1.7 / 2.1 binaries on configs with drop-ins and
imports, the real ansible-playbook audit over a multi-node local inventory, the RuntimeClasses and
Nodes from a real kube-apiserver of this module alone (private_cluster; listed once per play), the
one-file contract, the demo inventory. The built collection tarball: tests/integration/test_release.py."""
import contextlib
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.lib import ansible_run, containerd_bins
from tests.lib.cluster_objects import Api
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
REPO = ansible_run.REPO
AUDIT = os.path.join(REPO, "playbooks", "audit.yml")
CROSSCHECK = os.path.join(REPO, "playbooks", "crosscheck.yml")

V2_MAIN = '''version = 2
imports = ["{root}/etc/containerd/conf.d/*.toml"]
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
'''
V2_CRI_DROPIN = '''version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
  BinaryName = "{root}/usr/bin/nvidia-container-runtime"
'''
V3_MAIN = '''version = 3
imports = ["{root}/etc/containerd/conf.d/*.toml"]
'''
V3_DROPIN = '''version = 3
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.%s]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.%s.options]
  BinaryName = "{root}/usr/bin/nvidia-container-runtime"
'''


def runtimeclass(name, handler, selector=None):
    obj = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": handler}
    if selector:
        obj["scheduling"] = {"nodeSelector": selector}
    return obj


def kube_node(name, labels):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}}}


@contextlib.contextmanager
def on_cluster(cluster, runtimeclasses=(), nodes=()):
    """RUNTIMECLASSES and NODES (the Kubernetes JSON of runtimeclass() and kube_node()) made on the
    module's private cluster for the block, and deleted after it: the tests here count every
    RuntimeClass and Node of the cluster, so each starts on an empty one and leaves it empty."""
    api = Api(cluster.kubeconfig)
    try:
        left = ([r.metadata.name for r in api.node_k8s.list_runtime_class().items]
                + [n.metadata.name for n in api.core.list_node().items])
        assert left == [], "objects another test left on the private cluster: %s" % left
        for obj in runtimeclasses:
            api.runtimeclass(obj["metadata"]["name"], obj["handler"],
                             selector=(obj.get("scheduling") or {}).get("nodeSelector"))
        for obj in nodes:
            allocatable = obj["status"]["allocatable"]
            api.node(obj["metadata"]["name"], labels=obj["metadata"]["labels"], cpu=allocatable["cpu"],
                     memory=allocatable["memory"])
        yield api
    finally:
        try:
            for obj in runtimeclasses:
                api.node_k8s.delete_runtime_class(obj["metadata"]["name"])
            for obj in nodes:
                api.core.delete_node(obj["metadata"]["name"])
        finally:
            api.close()


def admin_token_kubeconfig(cluster, path):
    """(kubeconfig, token): the cluster's admin by bearer token, a secret the output must never show."""
    return cluster.kubeconfig_for("gpurt-admin", path, auth="token"), cluster.token("gpurt-admin")


def healthy(node):
    node.runtime_binary()
    if node.version.startswith("1."):
        node.write("etc/containerd/config.toml", V2_MAIN)
        node.write("etc/containerd/conf.d/50-cri.toml", V2_CRI_DROPIN)
    else:
        # the version the release's `config default` writes: 3 on 2.1/2.2, 4 from 2.3
        version = "version = %d" % (4 if node.version >= "2.3" else 3)
        node.write("etc/containerd/config.toml", V3_MAIN.replace("version = 3", version))
        node.write("etc/containerd/conf.d/99-nvidia.toml", (V3_DROPIN % ("nvidia", "nvidia")).replace("version = 3", version))
    return node


def snapshot(root):
    out = {}
    for path in sorted(glob.glob(os.path.join(root, "**"), recursive=True)):
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                out[path] = (os.stat(path).st_mtime_ns, hashlib.sha256(handle.read()).hexdigest())
    return out


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, containerd):
    """Six nodes: healthy ones on each containerd, one whose drop-in is never imported, one
    whose v3 file keeps the old plugin name, one with no containerd binary, one unreachable."""
    base = tmp_path_factory.mktemp("fleet")
    nodes = {}
    for version in containerd_bins.ALL_VERSIONS:
        nodes["ok-%s" % version] = healthy(Node(base, "ok-%s" % version, version))
    orphan = Node(base, "orphan-1.7", "1.7")
    orphan.runtime_binary()
    orphan.write("etc/containerd/config.toml", V2_MAIN.replace("*.toml", "*.conf"))
    orphan.write("etc/containerd/conf.d/99-nvidia.toml", V2_CRI_DROPIN)
    nodes[orphan.name] = orphan
    oldname = Node(base, "oldname-2.1", "2.1")
    oldname.runtime_binary()
    oldname.write("etc/containerd/config.toml", "version = 3\n" + V2_CRI_DROPIN.split("\n", 1)[1])
    nodes[oldname.name] = oldname
    hosts = dict((name, node.host_vars()) for name, node in nodes.items())
    hosts["no-containerd"] = dict(nodes["ok-2.1"].host_vars(), gpurt_containerd_bin=str(base / "missing" / "containerd"))
    hosts["unreachable"] = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
                            "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes"}
    inventory = ansible_run.write_inventory(str(base / "inventory.json"), hosts,
                                            groups={"gpu": sorted(hosts)})
    kube_nodes = [kube_node(name, {"pool": "gpu"}) for name in hosts]
    runtimeclasses = [runtimeclass("nvidia", "nvidia", {"pool": "gpu"}),
                      runtimeclass("nvidia-legacy", "nvida", {"pool": "legacy"})]
    return {"base": base, "nodes": nodes, "inventory": inventory, "kube_nodes": kube_nodes,
            "runtimeclasses": runtimeclasses, "hosts": sorted(hosts)}


def test_real_dumps_agree_with_the_premises(fleet):
    """The files say nvidia everywhere; only the loaded configs differ."""
    for name in ("ok-1.6", "ok-1.7", "ok-2.1"):
        rc, out, _err = fleet["nodes"][name].dump()
        assert rc == 0 and "runtimes.nvidia]" in out, name
    rc, out, _err = fleet["nodes"]["orphan-1.7"].dump()
    assert rc == 0 and "runtimes.nvidia]" not in out
    rc, out, err = fleet["nodes"]["oldname-2.1"].dump()
    assert rc == 0 and "runtimes.nvidia]" not in out and "Ignoring unknown key in TOML for plugin" in err


@pytest.fixture(scope="module")
def audited(fleet, private_cluster):
    kubeconfig, token = admin_token_kubeconfig(private_cluster, str(fleet["base"] / "kubeconfig"))
    with on_cluster(private_cluster, fleet["runtimeclasses"], fleet["kube_nodes"]):
        before = snapshot(str(fleet["base"]))
        result = ansible_run.playbook(AUDIT, fleet["inventory"], {
            "gpurt_kubeconfig": kubeconfig, "gpurt_report_dir": str(fleet["base"]) + "-reports"}, check=True)
        after = snapshot(str(fleet["base"]))
    with open(str(fleet["base"]) + "-reports/audit.json") as handle:
        report = json.load(handle)
    return {"result": result, "report": report, "token": token, "before": before, "after": after}


def listing_results(run):
    """The results -v prints of the tasks that listed the cluster (each carries api_list_calls)."""
    out = []
    for line in run.out.splitlines():
        head, sep, body = line.partition(" => ")
        if sep and head.startswith("ok: [") and '"api_list_calls"' in body:
            out.append((head, json.loads(body)))
    return out


def test_cluster_is_listed_once_for_the_whole_play(audited, fleet, private_cluster, tmp_path):
    """The run reports its own requests: -v prints the list task's result, api_list_calls and api_requests."""
    assert len(fleet["hosts"]) == 10
    assert audited["token"] not in audited["result"].text
    kubeconfig, token = admin_token_kubeconfig(private_cluster, str(tmp_path / "kubeconfig"))
    with on_cluster(private_cluster, fleet["runtimeclasses"], fleet["kube_nodes"]):
        result = ansible_run.playbook(AUDIT, fleet["inventory"], {
            "gpurt_kubeconfig": kubeconfig, "gpurt_report_dir": str(tmp_path / "reports")}, check=True,
            args=("-v",), extra_env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})
    assert result.rc == 4, result  # the same verdicts as the run without -v
    assert token not in result.text  # -v prints every result: the bearer token in none of them
    # One task listed the cluster for the ten hosts (run_once), on the controller ...
    listings = listing_results(result)
    assert len(listings) == 1, [head for head, _listed in listings]
    assert listings[0][0] in ["ok: [%s -> localhost]" % host for host in fleet["hosts"]], listings[0][0]
    listed = listings[0][1]
    # ... in two list calls for its two resources, RuntimeClasses and Nodes (each needs one): once each,
    # one request each (no page, no retry), from the real apiserver.
    assert (listed["api_list_calls"], listed["api_requests"]) == (2, 2), listed
    assert (listed["source"], listed["server"]) == ("cluster", private_cluster.server)
    assert sorted(r["name"] for r in listed["runtimeclasses"]) == ["nvidia", "nvidia-legacy"]
    assert sorted(n["name"] for n in listed["nodes"]) == fleet["hosts"]


def test_exit_code_and_per_node_verdicts(audited):
    result = audited["result"]
    # The gather ignores unreachable hosts so the report covers them; the gate then fails the nodes, and
    # the node that is still unreachable at the end gives ansible-playbook's own exit code for that: 4.
    assert result.rc == 4, result
    statuses = dict((n, e["status"]) for n, e in audited["report"]["nodes"].items())
    assert statuses == {
        "ok-1.6": "OK", "ok-1.7": "OK", "ok-2.1": "OK", "ok-2.2": "OK", "ok-2.3": "OK", "ok-2.4": "OK",
        "orphan-1.7": "FINDINGS", "oldname-2.1": "FINDINGS",
        "no-containerd": "NOT CHECKED", "unreachable": "NOT CHECKED",
    }
    for name in ("ok-%s" % v for v in containerd_bins.ALL_VERSIONS):
        assert result.recap[name]["failed"] == 0
    for name in ("orphan-1.7", "oldname-2.1", "no-containerd"):
        assert result.recap[name]["failed"] == 1, (name, result.recap[name])
    # Not gathered: its reason is printed once, on its Summary line (not in an [ERROR] block of the gather too).
    assert result.recap["no-containerd"]["ignored"] == 0
    before_recap = result.out[:result.out.rfind("PLAY RECAP")]
    assert before_recap.count("containerd binary not found") == 1, result
    # Issue 26 item 2: one [ERROR] block for the failing nodes (ansible-core 2.19 prints it once per message);
    # the unreachable node's own (gather, retry) are ansible-core's connection errors.
    assert result.out.count("[ERROR]: Task failed: Action failed") <= 1, result
    assert result.recap["unreachable"]["unreachable"] == 1 and result.recap["unreachable"]["failed"] == 0


def test_missing_lines(audited):
    report = audited["report"]["nodes"]
    assert report["orphan-1.7"]["missing"] == ["MISSING=nvidia"]
    assert report["oldname-2.1"]["missing"] == ["MISSING=nvidia"]
    # The typo'd RuntimeClass selects pool=legacy; the Node objects put every host in pool=gpu.
    assert all("MISSING=nvida" not in e["missing"] for e in report.values())
    lines = audited["result"].gate_lines()
    # a failing node's line is its failed line (issue 35), a passing node's is in the summary
    assert re.search(r"^failed: \[orphan-1\.7\] \(item=orphan-1\.7: \d+ findings \(.*\); MISSING=nvidia\) => ",
                     audited["result"].out, re.M), audited["result"]
    assert "ok-2.1: OK" in lines


def test_not_checked_reasons(audited):
    nodes = audited["report"]["nodes"]
    assert "containerd binary not found" in nodes["no-containerd"]["reason"]
    assert "no-containerd" in nodes["no-containerd"]["reason"]  # the failure names the host
    assert nodes["unreachable"]["reason"].startswith("unreachable")
    lines = audited["result"].gate_lines()
    assert any(l.startswith("unreachable: NOT CHECKED") for l in lines)
    assert lines[-1] == ("checked 8 of 10 node(s): 6 OK, 2 with findings, 2 not checked; 4 failing (fail_on=error)")


def test_check_mode_changed_nothing(audited):
    assert audited["result"].changed() == 0
    assert audited["before"] == audited["after"]


def test_gather_reports_what_each_import_matches(fleet, tmp_path):
    """1.x dumps the merged files, 2.x the patterns: the module reports matches itself."""
    playbook = tmp_path / "gather.yml"
    playbook.write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - gpurt.runtime_gate.containerd_config_info:\n"
        "        containerd_bin: '{{ gpurt_containerd_bin }}'\n"
        "        config_path: '{{ gpurt_containerd_config_path }}'\n"
        "      register: gathered\n"
        "    - ansible.builtin.copy:\n"
        "        content: '{{ gathered | to_json }}'\n"
        "        dest: '%s/{{ inventory_hostname }}.json'\n"
        "        mode: '0644'\n"
        "      delegate_to: localhost\n" % tmp_path)
    result = ansible_run.playbook(str(playbook), fleet["inventory"], args=["--limit", "ok-1.6,ok-1.7,ok-2.1,orphan-1.7"])
    assert result.rc == 0, result
    for name, major in (("ok-1.6", 1), ("ok-1.7", 1), ("ok-2.1", 2)):
        with open(str(tmp_path / (name + ".json"))) as handle:
            got = json.load(handle)
        node = fleet["nodes"][name]
        assert got["version_major"] == major
        assert got["loaded"]["runtime_names"] == ["nvidia", "runc"]
        assert [(i["pattern"], i["matches"]) for i in got["imports"]] == [
            (node.path("etc/containerd/conf.d/*.toml"), sorted(glob.glob(node.path("etc/containerd/conf.d/*.toml"))))]
        if major == 1:
            assert node.path("etc/containerd/conf.d/50-cri.toml") in got["loaded"]["imports"]
        else:
            assert got["loaded"]["imports"] == [node.path("etc/containerd/conf.d/*.toml")]
    with open(str(tmp_path / "orphan-1.7.json")) as handle:
        orphan = json.load(handle)
    assert orphan["imports"][0]["matches"] == []
    assert [f["role"] for f in orphan["files"]] == ["main", "unreferenced"]


RC_DOC = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: %s}\nhandler: %s\n"


def test_crosscheck_contract(fleet, tmp_path):
    manifests = tmp_path / "rc"
    manifests.mkdir()
    (manifests / "all.yaml").write_text(RC_DOC % ("typo", "nvida"))
    rc, out, _err = fleet["nodes"]["ok-2.1"].dump()
    good = tmp_path / "good.toml"
    good.write_text(out)
    result = ansible_run.playbook(CROSSCHECK, "localhost,", {"dump_file": str(good), "runtimeclasses": str(manifests)})
    assert result.rc == 2
    assert result.gate_lines() == ["MISSING=nvida"]
    assert "did you mean 'nvidia'" in result.text
    # next to a RuntimeClass that asks for nvidia itself, nvida is no typo of it: no suggestion
    (manifests / "all.yaml").write_text(RC_DOC % ("nvidia", "nvidia") + "---\n" + RC_DOC % ("typo", "nvida"))
    result = ansible_run.playbook(CROSSCHECK, "localhost,", {"dump_file": str(good), "runtimeclasses": str(manifests)})
    assert result.rc == 2 and result.gate_lines() == ["MISSING=nvida"]
    assert "did you mean" not in result.text
    (manifests / "all.yaml").write_text(RC_DOC % ("nvidia", "nvidia"))
    result = ansible_run.playbook(CROSSCHECK, "localhost,", {"dump_file": str(good), "runtimeclasses": str(manifests)})
    assert result.rc == 0, result
    assert result.gate_lines() == ["OK"]
    rc, out, _err = fleet["nodes"]["oldname-2.1"].dump()
    bad = tmp_path / "bad.toml"
    bad.write_text(out)
    result = ansible_run.playbook(CROSSCHECK, "localhost,", {"dump_file": str(bad), "runtimeclasses": str(manifests)})
    assert result.rc == 2
    assert result.gate_lines() == ["MISSING=nvidia"]


@pytest.mark.parametrize("version", containerd_bins.ALL_VERSIONS)
def test_crosscheck_contract_on_every_release(fleet, tmp_path, version):
    """The one-file contract on a dump of each release (each in the config version it writes)."""
    manifests = tmp_path / "rc.yaml"
    manifests.write_text(RC_DOC % ("nvidia", "nvidia") + "---\n" + RC_DOC % ("nvidia-cdi", "nvidia-cdi"))
    rc, out, err = fleet["nodes"]["ok-%s" % version].dump()
    assert rc == 0, err
    dump = tmp_path / "dump.toml"
    dump.write_text(out)
    result = ansible_run.playbook(CROSSCHECK, "localhost,", {"dump_file": str(dump), "runtimeclasses": str(manifests)})
    assert result.rc == 2 and result.gate_lines() == ["MISSING=nvidia-cdi"], result
    manifests.write_text(RC_DOC % ("nvidia", "nvidia"))
    result = ansible_run.playbook(CROSSCHECK, "localhost,", {"dump_file": str(dump), "runtimeclasses": str(manifests)})
    assert result.rc == 0 and result.gate_lines() == ["OK"], result


@pytest.mark.parametrize("handler, line", [
    ("nv\nOK", "MISSING=nv\\nOK"),
    ("nv\x1b[32mOK\x1b[0m", "MISSING=nv\\x1b[32mOK\\x1b[0m"),
])
def test_crosscheck_handler_with_control_characters_prints_no_bare_ok(fleet, tmp_path, handler, line):
    rc, out, _err = fleet["nodes"]["ok-2.1"].dump()
    dump = tmp_path / "dump.toml"
    dump.write_text(out)
    manifest = tmp_path / "rc.json"
    manifest.write_text(json.dumps({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                    "metadata": {"name": "evil"}, "handler": handler}))
    result = ansible_run.playbook(CROSSCHECK, "localhost,", {"dump_file": str(dump), "runtimeclasses": str(manifest)})
    assert result.rc == 2, result
    assert result.gate_lines() == [line]
    assert "OK" not in result.gate_lines()


@pytest.mark.parametrize("files, message", [
    # a source with no RuntimeClass at all: nothing would be cross-checked
    ({"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"},
     "no RuntimeClass (apiVersion node.k8s.io/v1) in"),
    ({}, "read 0 file(s), holding no document"),
    # almost RuntimeClasses: kubectl would create none of them
    ({"rc.yaml": "apiVersion: node.k8s.io/v1\nkind: Runtimeclass\nmetadata: {name: x}\nhandler: nvidia\n"},
     "kind 'Runtimeclass' is not 'RuntimeClass' (kinds are case-sensitive)"),
    ({"rc.yaml": "apiVersion: node.k8s.io/v1beta1\nkind: RuntimeClass\nmetadata: {name: x}\nhandler: nvidia\n"},
     "apiVersion 'node.k8s.io/v1beta1' is not node.k8s.io/v1"),
])
def test_crosscheck_fails_when_the_source_yields_no_runtimeclass(fleet, tmp_path, files, message):
    rc, out, _err = fleet["nodes"]["ok-2.1"].dump()
    dump = tmp_path / "dump.toml"
    dump.write_text(out)
    manifests = tmp_path / "k8s"
    manifests.mkdir()
    for name, text in files.items():
        (manifests / name).write_text(text)
    result = ansible_run.playbook(CROSSCHECK, "localhost,", {"dump_file": str(dump), "runtimeclasses": str(manifests)})
    assert result.rc == 2, result
    assert message in result.text
    assert "OK" not in result.gate_lines()


def test_crosscheck_reads_a_kustomize_base(fleet, tmp_path):
    rc, out, _err = fleet["nodes"]["ok-2.1"].dump()
    dump = tmp_path / "dump.toml"
    dump.write_text(out)
    base = tmp_path / "k8s" / "base"
    base.mkdir(parents=True)
    (tmp_path / "k8s" / "kustomization.yaml").write_text("resources: [base]\n")
    (base / "kustomization.yaml").write_text("resources: [nvidia-cdi.yaml]\n")
    (base / "nvidia-cdi.yaml").write_text(RC_DOC % ("nvidia-cdi", "nvidia-cdi"))
    result = ansible_run.playbook(CROSSCHECK, "localhost,", {"dump_file": str(dump), "runtimeclasses": str(tmp_path / "k8s")})
    assert result.rc == 2, result
    assert result.gate_lines() == ["MISSING=nvidia-cdi"]


@pytest.mark.parametrize("inventory_hosts, extra, args, message", [
    ({}, {}, (), "the host pattern 'all' matched no host of the inventory (0 host(s))"),
    ({"gpu-1": {}}, {"gpurt_audit_hosts": "gpu-typo"}, (),
     "the host pattern 'gpu-typo' matched no host of the inventory (1 host(s))"),
    # A --limit outside the pattern skips every play on other hosts, localhost's included.
    ({"gpu-1": {}, "cpu-1": {}}, {"gpurt_audit_hosts": "gpu-1"}, ("--limit", "cpu-1"),
     "the host pattern 'gpu-1' matched no host of the inventory (2 host(s)) within --limit cpu-1"),
])
def test_audit_that_judged_no_host_fails(tmp_path, inventory_hosts, extra, args, message):
    manifest = tmp_path / "rc.yaml"
    manifest.write_text(RC_DOC % ("nvidia", "nvidia"))
    inventory = ansible_run.write_inventory(str(tmp_path / "hosts.json"), inventory_hosts)
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "audit.json").write_text('{"outcome": "passed"}')  # a previous run's
    extra_vars = {"gpurt_runtimeclasses_src": str(manifest), "gpurt_report_dir": str(reports)}
    extra_vars.update(extra)
    result = ansible_run.playbook(AUDIT, inventory, extra_vars, check=True, args=args)
    assert result.rc == 2, result
    assert message in result.text
    # The report says so too, in place of the previous run's.
    with open(str(reports / "audit.json")) as handle:
        report = json.load(handle)
    assert report["outcome"] == "failed" and report["nodes"] == {}
    assert report["run_failures"] == ["no host to judge: the play had no host (check the inventory, gpurt_audit_hosts "
                                      "and --limit)"]
    assert result.gate_lines()[0].startswith("FAILED: no host to judge")


def test_audit_with_no_runtimeclass_fails_unless_allowed(fleet, tmp_path, private_cluster):
    """A real cluster with Nodes and no RuntimeClass at all."""
    kubeconfig = private_cluster.kubeconfig
    with on_cluster(private_cluster, nodes=fleet["kube_nodes"]):
        refused = ansible_run.playbook(AUDIT, fleet["inventory"], {
            "gpurt_kubeconfig": kubeconfig, "gpurt_report_dir": str(tmp_path / "reports")},
            check=True, args=("--limit", "ok-2.1"))
        allowed = ansible_run.playbook(AUDIT, fleet["inventory"], {
            "gpurt_kubeconfig": kubeconfig, "gpurt_allow_no_runtimeclasses": True}, check=True,
            args=("--limit", "ok-2.1"))
    assert refused.rc == 2, refused
    assert "no RuntimeClass was read, so no handler was cross-checked" in refused.text
    assert "FAILED: no RuntimeClass was read" in "\n".join(refused.gate_lines())
    with open(str(tmp_path / "reports" / "audit.json")) as handle:
        report = json.load(handle)
    assert report["summary"]["passed"] is False and report["run_failures"]
    assert report["nodes"]["ok-2.1"]["checks_skipped"]["missing_handler"] == (
        "no RuntimeClass was read: nothing to cross-check")
    assert allowed.rc == 0, allowed
    assert allowed.gate_lines()[0] == "ok-2.1: OK"


def test_reports_metrics_and_junit_stay_valid(fleet, tmp_path):
    """gpurt_metrics_path writes a Prometheus textfile; a handler with an ANSI escape and control
    bytes keeps the JUnit file valid XML."""
    import xml.etree.ElementTree as ET
    manifest = tmp_path / "rc.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"},
        {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "evil"},
         "handler": "\x1b[31mnv\x00\x07\x0b"}]}))
    metrics = tmp_path / "textfile" / "runtime_gate.prom"
    result = ansible_run.playbook(AUDIT, fleet["inventory"], {
        "gpurt_runtimeclasses_src": str(manifest), "gpurt_report_dir": str(tmp_path / "reports"),
        "gpurt_metrics_path": str(metrics)}, check=True, args=("--limit", "ok-2.1,orphan-1.7,no-containerd"))
    assert result.rc == 2, result
    root = ET.parse(str(tmp_path / "reports" / "audit.junit.xml")).getroot()  # raises on invalid XML
    names = [c.get("name") for c in root.iter("testcase")]
    assert "[error] missing_handler: \\x1b[31mnv\\x00\\x07\\x0b" in names
    with open(str(metrics)) as handle:
        text = handle.read()
    samples = dict(line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))
    assert samples['gpurt_runtime_gate_node_status{node="ok-2.1",status="findings"}'] == "1"
    assert samples['gpurt_runtime_gate_node_status{node="no-containerd",status="not_checked"}'] == "1"
    assert samples['gpurt_runtime_gate_findings{node="orphan-1.7",check="missing_handler",severity="error"}'] == "2"
    assert samples['gpurt_runtime_gate_node_failing{node="ok-2.1"}'] == "1"
    assert samples["gpurt_runtime_gate_run_passed"] == "0"
    assert os.listdir(str(metrics.parent)) == ["runtime_gate.prom"]  # no temporary file left
    assert oct(os.stat(str(metrics)).st_mode & 0o777) == "0o644"


def test_crosscheck_against_live_cluster(fleet, tmp_path, private_cluster):
    rc, out, _err = fleet["nodes"]["ok-2.1"].dump()
    dump = tmp_path / "dump.toml"
    dump.write_text(out)
    with on_cluster(private_cluster, [runtimeclass("nvidia", "nvidia"), runtimeclass("cdi", "nvidia-cdi")]):
        result = ansible_run.playbook(CROSSCHECK, "localhost,", {"dump_file": str(dump),
                                                                 "gpurt_kubeconfig": private_cluster.kubeconfig})
    assert result.rc == 2, result
    assert result.gate_lines()[0] == "MISSING=nvidia-cdi"


@pytest.mark.parametrize("content, message", [
    ("garbage [[[", "is not valid TOML"),
    ("", "is empty"),
])
def test_crosscheck_bad_dump_is_a_clear_failure(tmp_path, content, message):
    dump = tmp_path / "dump.toml"
    dump.write_text(content)
    manifest = tmp_path / "rc.yaml"
    manifest.write_text("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n")
    result = ansible_run.playbook(CROSSCHECK, "localhost,", {"dump_file": str(dump), "runtimeclasses": str(manifest)})
    assert result.rc == 2
    assert message in result.text
    assert "Traceback" not in result.text


def test_demo_inventory(tmp_path):
    """`make demo`: the embedded inventory runs with no cluster and no real node."""
    inventory = os.path.join(REPO, "inventory", "demo", "hosts.yml")
    prepared = ansible_run.playbook(os.path.join(REPO, "inventory", "demo", "prepare.yml"), inventory)
    assert prepared.rc == 0, prepared
    result = ansible_run.playbook(AUDIT, inventory, check=True)
    assert result.rc == 2, result
    lines = result.gate_lines()
    # the failing nodes' lines are their failed lines (issue 35), the passing node's is in the summary
    assert lines[0] == "gpu-healthy: OK", lines
    for line in ("gpu-legacy: 1 finding (1 error)", "gpu-orphan-dropin: 5 findings (3 error, 2 warning)",
                 "gpu-v3-oldname: 4 findings (3 error, 1 warning)"):
        assert "(item=%s; MISSING=" % line in result.out, result
    assert "MISSING=nvida" in result.text and "did you mean 'nvidia'" in result.text
    assert result.changed() == 0
    assert "[WARNING]" not in prepared.text + result.text, result  # the demo's own variables are demo_*
    # `make demo`'s last step, in the same test (both wipe .demo/): remediate.yml leaves gpu-healthy (NVIDIA's
    # layout: nvidia and nvidia-cdi, each with its own binary) alone: changed=0, every file byte for byte.
    healthy = os.path.join(REPO, ".demo", "nodes", "gpu-healthy")
    before = _tree(healthy)
    remediated = ansible_run.playbook(os.path.join(REPO, "playbooks", "remediate.yml"), inventory)
    assert remediated.recap["gpu-healthy"]["changed"] == 0 and remediated.recap["gpu-healthy"]["failed"] == 0, remediated
    assert "gpu-healthy: OK (every runtime is loaded as wanted; nothing written)" in remediated.gate_lines(), remediated
    assert _tree(healthy) == before
    assert "unknown variable" not in remediated.text, remediated


def _tree(root):
    out = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, root)] = handle.read()
    return out


def _python38():
    """A working Python 3.8 interpreter (a pyenv shim may exist without the version active)."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python3.8")))
    candidates += [p for p in [shutil.which("python3.8")] if p]
    for candidate in candidates:
        if subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 8)"],
                          check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            return candidate
    return None


PY38 = _python38()


@pytest.mark.skipif(PY38 is None, reason="no python3.8 on this machine")
def test_gather_module_runs_on_a_python_38_target(fleet, tmp_path):
    node = fleet["nodes"]["ok-2.1"]
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible"), "ok", "-i", "ok,", "-c", "local",
                           "-e", "ansible_python_interpreter=%s" % PY38,
                           "-m", "gpurt.runtime_gate.containerd_config_info",
                           "-a", "containerd_bin=%s config_path=%s" % (node.binary, node.config_path)],
                          env=ansible_run.env(), cwd=REPO, check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "nvidia" in proc.stdout and "Python 3.8" not in proc.stderr

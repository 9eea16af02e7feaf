"""Issue 34: the verified labels of a sliced audit are the unsliced run's. ansible-runner runs audit.yml with
gpurt_label_nodes once over all hosts, then (the Nodes put back as they were) as 2 slices cut the way AWX
cuts them, then fleet_verdict.yml with gpurt_label_nodes on the slices' artifacts: the Nodes of the real
kube-apiserver end with the same labels under runtime-gate.gpurt.io/. A slice labels nothing: host l2 of slice
2 names the Node of l1 of slice 1 (gpurt_node_name), which no slice can see alone, and one run over both
labels that Node with neither's proof. A Node no host judged carries a label without a check time: the
unsliced run and the fleet verdict report it stale, and a slice neither reports it nor runs the labeling
play for it."""
import contextlib
import time

import pytest
from kubernetes.client.rest import ApiException

from tests.integration.test_fleet_verdict import runner
from tests.integration.test_labels_by_proof import RUNTIME, V2
from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
PREFIX = "runtime-gate.gpurt.io/"
CHECKED_AT = PREFIX + "checked-at"
SLICES = 2
# host: (its Node, what its containerd loads besides runc; None: unreachable)
HOSTS = {"l1": ("l1", ["nvidia"]), "l2": ("l1", []), "l3": ("l3", ["nvidia"]), "l4": ("l4", None),
         "l5": ("l5", [])}
ORDER = sorted(HOSTS)  # slice 1: l1, l3, l5; slice 2: l2, l4
# Node: (pool, status.runtimeHandlers, its labels under our prefix before each run, with a check time?)
NODES = {
    "l1": ("gpu", ["runc", "nvidia"], {"nvidia": "true"}, True),
    "l3": ("gpu", ["runc", "nvidia"], {"kata": "true"}, True),  # a label a person set: removed by proof
    "l4": ("gpu", ["runc", "nvidia"], {"nvidia": "true", "runc": "true"}, True),  # unreachable: loses them
    "l5": ("cpu", ["runc"], {}, False),
    "z9": ("cpu", ["runc"], {"runc": "true"}, False),  # no host judges it: stale (no check time)
}


def put_back(api):
    """Every Node as NODES says, re-created: its labels, its check time, its runtime handlers."""
    for name in NODES:
        try:
            api.core.delete_node(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
    for name in NODES:
        while True:
            try:
                api.core.read_node(name)
            except ApiException as exc:
                if exc.status == 404:
                    break
                raise
            time.sleep(0.1)
    for name, (pool, handlers, ours_before, checked) in NODES.items():
        labels = dict(("%s%s" % (PREFIX, h), v) for h, v in ours_before.items())
        api.node(name, labels=dict(labels, pool=pool), cpu="4", handlers=handlers)
        if checked:
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            api.core.patch_node(name, {"metadata": {"annotations": {CHECKED_AT: now}}})


def ours(api):
    return dict((n, dict((k, v) for k, v in (api.core.read_node(n).metadata.labels or {}).items()
                         if k.startswith(PREFIX))) for n in sorted(NODES))


def host_vars(base, host):
    node_name, runtimes = HOSTS[host]
    if runtimes is None:
        out = {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1,
               "ansible_ssh_common_args": "-o ConnectTimeout=3 -o BatchMode=yes"}
    else:
        node = Node(base, host, "2.1")
        node.runtime_binary()
        node.write("etc/containerd/config.toml", V2 + "".join(RUNTIME.replace("{name}", r) for r in runtimes))
        # no crictl: each handler is confirmed by the Node's status.runtimeHandlers
        out = node.host_vars(gpurt_crictl_bin=str(base / "no-crictl"))
    out["gpurt_node_name"] = node_name
    return out


@contextlib.contextmanager
def on_cluster(cluster):
    api = Api(cluster.kubeconfig)
    try:
        api.runtimeclass("nvidia", "nvidia", selector={"pool": "gpu"})
        yield api
    finally:
        try:
            api.node_k8s.delete_runtime_class("nvidia")
            for name in NODES:
                api.core.delete_node(name)
        finally:
            api.close()


@pytest.fixture(scope="module")
def labeled(tmp_path_factory, private_cluster, containerd):
    base = tmp_path_factory.mktemp("fleet-labels")
    hosts = dict((h, host_vars(base / "nodes", h)) for h in ORDER)
    kube = {"gpurt_kubeconfig": private_cluster.kubeconfig}
    out = {"slices": []}
    with on_cluster(private_cluster) as api:
        put_back(api)
        out["before"] = ours(api)
        whole = ansible_run.write_inventory(str(base / "whole.json"), hosts)
        out["whole"] = runner(base / "whole", "audit.yml", dict(kube, gpurt_label_nodes=True), whole)
        out["whole_labels"] = ours(api)
        put_back(api)
        artifacts = {}
        for k in range(1, SLICES + 1):
            part = ORDER[k - 1::SLICES]
            inventory = ansible_run.write_inventory(str(base / ("slice%d.json" % k)), dict((h, hosts[h]) for h in part))
            run = runner(base / ("job%d" % k), "audit.yml",
                         dict(kube, gpurt_slice=True, awx_job_id=4800 + k, gpurt_label_nodes=True), inventory)
            out["slices"].append(run + (part,))
            artifacts.update(run[1])
        out["slices_labels"] = ours(api)
        out["verdict"] = runner(base / "verdict", "fleet_verdict.yml",
                                dict(artifacts, gpurt_slices_expected=SLICES, gpurt_label_nodes=True, **kube))
        out["verdict_labels"] = ours(api)
        # one more slice, not asked to label: the Node no host judged carries a stale label all the same
        put_back(api)
        inventory = ansible_run.write_inventory(str(base / "alone.json"), {"l5": hosts["l5"]})
        out["alone"] = runner(base / "alone", "audit.yml", dict(kube, gpurt_slice=True, awx_job_id=4899), inventory,
                              check=True)
    return out


def test_the_unsliced_run_labels_by_proof_and_refuses_the_node_two_hosts_name(labeled):
    """The premises: what one run over all hosts writes."""
    run, _artifacts, out = labeled["whole"]
    assert labeled["whole_labels"] == {
        "l1": {},  # l1 and l2 both name it: neither host's proof is its proof
        "l3": {PREFIX + "nvidia": "true", PREFIX + "runc": "true"},
        "l4": {},  # unreachable, NOT CHECKED: a label is a claim the last run proved
        "l5": {PREFIX + "runc": "true"},
        "z9": {PREFIX + "runc": "true"},  # judged by no host: left, and reported stale
    }, out[-4000:]
    assert run.rc != 0
    flat = " ".join(out.split())
    assert "inventory hosts l1 and l2 all map to this Node (gpurt_node_name)" in flat
    assert "z9: verified labels (runtime-gate.gpurt.io/runc) carry no readable check time" in flat


def test_a_slice_labels_nothing_even_when_asked(labeled):
    assert [s[3] for s in labeled["slices"]] == [["l1", "l3", "l5"], ["l2", "l4"]]
    assert labeled["slices_labels"] == labeled["before"], [s[2][-3000:] for s in labeled["slices"]]
    for _run, _artifacts, out, _part in labeled["slices"]:
        assert "TASK [Label the judged Nodes with their verified handlers]" not in out


def test_the_fleet_verdict_labels_the_nodes_as_the_unsliced_run(labeled):
    run, _artifacts, out = labeled["verdict"]
    assert labeled["verdict_labels"] == labeled["whole_labels"], out[-4000:]
    flat = " ".join(out.split())
    # it fails as the unsliced run fails: the Node two hosts name is not labeled as proven, naming both
    assert run.rc == 2
    assert "inventory hosts l1 and l2 all map to this Node (gpurt_node_name)" in flat
    # and reports the stale label of the Node no host judged, as the unsliced run's Summary does
    assert "z9: verified labels (runtime-gate.gpurt.io/runc) carry no readable check time" in flat


def test_a_slice_runs_no_labeling_play_for_a_stale_label_it_does_not_report(labeled):
    """The labeling play's hosts and its Summary agree: a slice reports no stale label (another slice's Node,
    or one no slice judged), so the play has no host (the summary callback prints the verdict) and prints
    nothing, where a play with a host would print its skipped Summary task."""
    run, _artifacts, out = labeled["alone"]
    assert run.rc == 0, out[-4000:]
    play = out.split("PLAY [Label the judged Nodes and summarise the audit]", 1)[1].split("PLAY [", 1)[0]
    assert "skipping: no hosts matched" in play and "TASK [Summary]" not in play, play
    assert "carry no readable check time" not in out

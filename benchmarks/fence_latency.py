"""How fast the gate between runs acts (issue 33): with the real ansible-rulebook running the collection's
rulebook and event source against a real kube-apiserver (tests/lib/real_cluster.py), on two local nodes
whose configs a real containerd loads, EVENTS times:

1. gpu-a's status.runtimeHandlers loses nvidia (as its kubelet reports after a containerd restart without
   it) -> the time until its label runtime-gate.gpurt.io/nvidia is gone (the fence);
2. the status lists nvidia again (the file always had it) -> the time until the label is back, which only a
   re-audit's proof writes (settle window + one fence.yml run).

Prints the median and 95th percentile of both, against the goals (fence p95 <= 5 s, re-label p95 <= 30 s).
A benchmark, not a test: it exits 1 only when an event never completes, never because it is slow.

    .venv/bin/python benchmarks/fence_latency.py [--events 20] [--settle 10] [--workdir DIR]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, ".collections"))

from tests.lib import ansible_run  # noqa: E402
from tests.lib.cluster_objects import Api  # noqa: E402
from tests.lib.nodes import Node  # noqa: E402
from tests.lib.real_cluster import Cluster  # noqa: E402
from tests.lib.rulebook import Rulebook  # noqa: E402

LABEL = "runtime-gate.gpurt.io/nvidia"
CONFIG = '''version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "{root}/usr/bin/nvidia-container-runtime"
'''
GOALS = {"fence": 5.0, "re-label": 30.0}


def p95(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def wait_label(api, want, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        labels = api.core.read_node("gpu-a").metadata.labels or {}
        if (labels.get(LABEL) == "true") == want:
            return time.time()
        time.sleep(0.05)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--settle", type=float, default=10.0, help="gpurt_watch_settle (default 10, the default)")
    parser.add_argument("--workdir")
    args = parser.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="gpurt-fence-bench-")
    cluster = Cluster(os.path.join(workdir, "cluster")).up()
    rulebook = None
    try:
        api = Api(cluster.kubeconfig)
        api.runtimeclass("nvidia", "nvidia", selector={LABEL: "true"})
        hosts = {}
        for name in ("gpu-a", "gpu-b"):
            node = Node(os.path.join(workdir, "nodes"), name, "2.1")
            node.runtime_binary()
            node.write("etc/containerd/config.toml", CONFIG)
            hosts[name] = node.host_vars(gpurt_crictl_bin=os.path.join(workdir, "no-crictl"))
            api.node(name, cpu="4", handlers=["runc", "nvidia"], kwok=cluster.kwok)
        inventory = ansible_run.write_inventory(os.path.join(workdir, "hosts.json"), hosts)
        audit = ansible_run.playbook(os.path.join(REPO, "playbooks", "audit.yml"), inventory, {
            "gpurt_kubeconfig": cluster.kubeconfig, "gpurt_label_nodes": True})
        if audit.rc != 0:
            print("the first audit failed:\n%s" % audit)
            return 1
        rulebook = Rulebook(os.path.join(workdir, "rulebook"), inventory, {
            "gpurt_kubeconfig": cluster.kubeconfig, "gpurt_watch_settle": args.settle}).start()
        fence, relabel = [], []
        for index in range(args.events):
            start = time.time()
            api.node("gpu-a", cpu="4", handlers=["runc"], kwok=cluster.kwok)
            gone = wait_label(api, False, 60)
            back_at = time.time()
            api.node("gpu-a", cpu="4", handlers=["runc", "nvidia"], kwok=cluster.kwok)
            back = wait_label(api, True, 300)
            if gone is None or back is None:
                print("event %d did not complete (fence %s, re-label %s); log: %s" % (
                    index + 1, gone, back, rulebook.log_path))
                return 1
            fence.append(gone - start)
            relabel.append(back - back_at)
            print("event %2d: fence %.2f s, re-label %.2f s" % (index + 1, fence[-1], relabel[-1]), flush=True)
        print()
        print("| latency | median | p95 | goal (p95) | met |")
        print("|---|---|---|---|---|")
        for name, values in (("fence", fence), ("re-label", relabel)):
            met = "yes" if p95(values) <= GOALS[name] else "NO"
            row = (name, statistics.median(values), p95(values), GOALS[name], met)
            print("| %s | %.2f s | %.2f s | %.0f s | %s |" % row)
        print("\n%d events, settle %.0f s, %d cores, workdir %s" % (args.events, args.settle, os.cpu_count(), workdir))
        return 0
    finally:
        if rulebook is not None:
            rulebook.stop()
        cluster.down()


if __name__ == "__main__":
    sys.exit(main())

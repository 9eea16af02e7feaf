"""What prevent.yml costs at fleet size: a real control plane (tests/lib/real_cluster.py) with N Nodes carrying
L labels each (cloud, NFD, GPU feature discovery, as GPU nodes do) and the verified labels of a recent labeling
run, a few RuntimeClasses; prevent.yml runs twice (the second changes nothing). Prints, per run, the seconds,
the API requests prevent.yml's modules sent (from the kube-apiserver's own audit log) and the parameter
ConfigMap's size.

    .venv/bin/python benchmarks/prevent_scale.py [--nodes 5000] [--labels 50] [--mode deny]

A benchmark, not a test: it exits 1 only when a run fails, the second run changes something, or the
parameters pass the ConfigMap limit."""
import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

from audit_scale import BenchCluster, MODULE_USER_AGENT  # noqa: E402  (the audit-logged control plane)
from tests.lib import ansible_run  # noqa: E402

PREFIX = "runtime-gate.gpurt.io/"
PROFILE = {}
CONFIGMAP_LIMIT = 1024 * 1024
# besides audit_scale's own classes, which BenchCluster makes
CLASSES = [("bench-nvidia", "nvidia", {}), ("bench-a100", "nvidia", {"nvidia.com/gpu.product": "A100"}),
           ("bench-train", "nvidia", {"pool": "train"}), ("bench-kata", "kata", {}),
           ("bench-zone-a", "runc", {"topology.kubernetes.io/zone": "a"})]


def node_body(index, labels_per_node, checked, rng):
    name = "bench-%05d" % index
    labels = {"kubernetes.io/hostname": name, "node.kubernetes.io/instance-type": "p5.%dxlarge" % rng.randint(1, 4),
              "topology.kubernetes.io/zone": rng.choice("abc"), "nvidia.com/gpu.product": rng.choice(
                  ["A100", "H100", "L4", "T4"]), "pool": rng.choice(["train", "serve"]),
              "cloud.example.com/instance-id": "i-%012x" % index}
    handlers = ["runc"] + (["nvidia"] if rng.random() < 0.95 else []) + (["kata"] if rng.random() < 0.3 else [])
    labels.update((PREFIX + h, "true") for h in handlers)
    feature = 0
    while len(labels) < labels_per_node:
        labels["feature.node.kubernetes.io/f-%02d" % feature] = str(rng.random() < 0.9).lower()
        feature += 1
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": {PREFIX + "checked-at": checked}}}


def run(bench, kubeconfig, mode, label):
    bench.reset_requests()
    started = time.time()
    result = ansible_run.playbook(os.path.join(REPO, "playbooks", "prevent.yml"), "localhost,",
                                  {"gpurt_kubeconfig": kubeconfig, "gpurt_admission_mode": mode,
                                   "gpurt_gate_runtimeclasses": [c[0] for c in CLASSES if c[0] != "bench-kata"],
                                   # the classes' selectors are the admin's (kubectl create): keep their keys
                                   "gpurt_gate_force": True},
                                  timeout=1800, extra_env=PROFILE)
    seconds = time.time() - started
    events = bench.requests()
    by_kind = Counter("%s %s" % (e.get("verb"), (e.get("objectRef") or {}).get("resource", "-")) for e in events)
    if PROFILE:
        print("\n".join(line for line in result.out.splitlines() if " -- " in line or "---" in line))
    print("%-7s rc=%d changed=%d  %.1f s  %d API requests (%s)" % (
        label, result.rc, result.changed(), seconds, len(events), ", ".join(
            "%s: %d" % kv for kv in sorted(by_kind.items()))))
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--labels", type=int, default=50)
    parser.add_argument("--mode", default="deny", choices=["warn", "deny"])
    parser.add_argument("--profile", action="store_true", help="print each task's time (ansible.posix.profile_tasks)")
    args = parser.parse_args(argv)
    if args.profile:
        PROFILE["ANSIBLE_CALLBACKS_ENABLED"] = "ansible.posix.profile_tasks,gpurt.runtime_gate.summary"
    workdir = tempfile.mkdtemp(prefix="gpurt-prevent-bench-")
    bench = BenchCluster(workdir)
    failed = False
    try:
        api = bench.api
        api.namespace("gpurt-runtime-gate")
        for name, handler, selector in CLASSES:
            api.runtimeclass(name, handler, selector=selector or None)
        rng = random.Random(38)
        checked = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        started = time.time()
        for index in range(args.nodes):
            api.core.create_node(node_body(index, args.labels, checked, rng))
        print("%d Nodes with %d labels each made in %.0f s" % (args.nodes, args.labels, time.time() - started))
        kubeconfig = bench.kubeconfig
        first = run(bench, kubeconfig, args.mode, "first")
        second = run(bench, kubeconfig, args.mode, "second")
        if first.rc != 0 or second.rc != 0:
            print(first.text[-3000:] + second.text[-3000:])
            return 1
        data = api.core.read_namespaced_config_map("runtime-gate-verified-handlers", "gpurt-runtime-gate").data
        size = sum(len(k.encode()) + len(v.encode()) for k, v in data.items())
        every_label = sum(len(json.dumps(n.metadata.labels)) for n in api.core.list_node().items)
        print("parameter ConfigMap: %d bytes (%d keys, %d lines); every label of every Node: %d bytes" % (
            size, len(data), sum(v.count("\n") + 1 for k, v in data.items() if k.startswith("handler.")), every_label))
        failed = second.changed() != 0 or size >= CONFIGMAP_LIMIT
    finally:
        bench.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print("user agent counted: %s*" % MODULE_USER_AGENT)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

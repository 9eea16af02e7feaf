"""Scale benchmark of the verified-label write (playbooks/plays/label_nodes.yml, issue 38): N Nodes with
L labels each on a real kube-apiserver (tests/lib/real_cluster.py), labeled twice. Prints, per run, the
seconds of the labeling (plan, write, lines) and the requests on Node objects the apiserver itself counted
(its /metrics apiserver_request_total: LIST, GET, PATCH), beside what the module says it sent. The first run
writes every Node; the second, settled, must send none. Not a test: pytest does not collect it.

    .venv/bin/python benchmarks/label_scale.py [--nodes 5000] [--labels 50] [--workdir DIR] [--keep]

What it measures is the labeling alone: one run of node_info (the audit's one list) and of label_nodes.yml
on localhost, fed a report in which every Node verified runc and nvidia (as audit_report would make it from
N gathered hosts; gathering N hosts is audit_scale.py's subject). Exits 1 when a result is wrong (a label
missing, a GET of a Node, a write in the settled run), never because it is slow.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.lib import ansible_run, cluster_objects, real_cluster  # noqa: E402

PREFIX = "runtime-gate.gpurt.io/"
HANDLERS = ["runc", "nvidia"]
PLAYBOOK = """
- name: Label the Nodes as a labeling run does
  hosts: localhost
  gather_facts: false
  module_defaults:
    group/gpurt.runtime_gate.k8s: {kubeconfig: %(kubeconfig)s, deadline: 600}
  vars_files: [%(report)s]
  tasks:
    - name: List the Nodes once (the audit's list)
      gpurt.runtime_gate.node_info:
      register: listed
    - name: Label them
      ansible.builtin.include_tasks: %(label_nodes)s
      vars:
        _gpurt_label_report: "{{ report }}"
        _gpurt_label_cluster_nodes: "{{ listed.nodes }}"
"""
# The labeling's own last line: what the module says it sent.
SENT = re.compile(r"wrote (\d+) of (\d+) judged Node\(s\), (\d+) apiserver request\(s\)")


def node_body(name, labels):
    extra = dict(("bench.example.com/label-%02d" % i, "value-%02d" % i) for i in range(labels - 1))
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict(extra, **{"kubernetes.io/hostname": name})}}


def make_nodes(api_factory, names, labels, threads=8):
    status = {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
              "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
              "runtimeHandlers": [{"name": h, "features": {}} for h in [""] + HANDLERS]}

    def work(chunk):
        api = api_factory()
        try:
            for name in chunk:
                api.core.create_node(node_body(name, labels))
                api.core.patch_node_status(name, {"status": status})
        finally:
            api.close()

    chunks = [names[i::threads] for i in range(threads)]
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for future in [pool.submit(work, chunk) for chunk in chunks]:
            future.result()


def node_requests(cluster):
    with urllib.request.urlopen(cluster.server + "/metrics", context=cluster.admin_ssl_context(), timeout=30) as answer:
        text = answer.read().decode()
    counts = {}
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{"):
            fields = dict(re.findall(r'(\w+)="([^"]*)"', line[:line.index("}")]))
            if fields.get("resource") == "nodes" and fields.get("subresource") == "":
                counts[fields["verb"]] = counts.get(fields["verb"], 0) + int(float(line.rsplit(" ", 1)[1]))
    return counts


def labeling_run(cluster, playbook):
    before = node_requests(cluster)
    started = time.monotonic()
    local = {"ansible_python_interpreter": sys.executable, "ansible_connection": "local"}
    run = ansible_run.playbook(playbook, "localhost,", local, timeout=3600)
    seconds = time.monotonic() - started
    after = node_requests(cluster)
    sent = dict((verb, after.get(verb, 0) - before.get(verb, 0)) for verb in after
                if after.get(verb, 0) != before.get(verb, 0))
    found = SENT.search(run.out)
    module = {"written": int(found.group(1)), "api_requests": int(found.group(3))} if found else {}
    module["failures"] = [line for line in run.gate_lines() if line.startswith("labels: ")]
    return run, seconds, sent, module


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--labels", type=int, default=50, help="labels per Node before ours (default 50)")
    parser.add_argument("--workdir")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    missing = real_cluster.missing_binaries()
    if missing:
        raise SystemExit("%s not built in %s: run `make setup` first" % (", ".join(missing), real_cluster.bin_dir()))
    workdir = os.path.abspath(args.workdir) if args.workdir else tempfile.mkdtemp(prefix="gpurt-label-scale-")
    os.makedirs(workdir, exist_ok=True)
    cluster = real_cluster.Cluster(os.path.join(workdir, "cluster")).up()
    problems = []
    try:
        names = ["gpu-%05d" % i for i in range(args.nodes)]
        started = time.monotonic()
        make_nodes(lambda: cluster_objects.Api(cluster.kubeconfig), names, args.labels)
        print("made %d Nodes with %d labels each in %.0f s" % (len(names), args.labels, time.monotonic() - started),
              flush=True)
        report = dict((name, {"status": "OK", "runtimes": HANDLERS, "running": {"source": "process"}, "reason": None,
                              "node_name": name}) for name in names)
        report_path = os.path.join(workdir, "report.json")
        with open(report_path, "w") as handle:
            json.dump({"report": report}, handle)
        playbook = os.path.join(workdir, "label.yml")
        with open(playbook, "w") as handle:
            handle.write(PLAYBOOK % {"kubeconfig": cluster.kubeconfig, "report": report_path,
                                     "label_nodes": os.path.join(REPO, "playbooks", "plays", "label_nodes.yml")})
        rows = []
        for which in ("first", "second"):
            run, seconds, sent, module = labeling_run(cluster, playbook)
            if run.rc != 0:
                problems.append("%s run: rc=%d\n%s" % (which, run.rc, run.text[-3000:]))
                break
            rows.append((which, seconds, sent, module))
            if sent.get("GET"):
                problems.append("%s run: %d GET of a Node" % (which, sent["GET"]))
            if module.get("failures"):
                problems.append("%s run: %s" % (which, module["failures"][:3]))
        if len(rows) == 2 and (rows[1][2].get("PATCH") or rows[1][3].get("written")):
            problems.append("second run wrote %s Node(s)" % rows[1][3].get("written"))
        api = cluster_objects.Api(cluster.kubeconfig)
        unlabeled = [n.metadata.name for n in api.core.list_node().items
                     if set(k for k in n.metadata.labels if k.startswith(PREFIX)) != set(PREFIX + h for h in HANDLERS)]
        api.close()
        if unlabeled:
            problems.append("%d Node(s) without their labels (%s ...)" % (len(unlabeled), unlabeled[0]))
        print("\n%d Nodes, %d labels each (plus ours)" % (args.nodes, args.labels))
        print("%-7s %9s %6s %6s %7s %10s %13s" % ("run", "seconds", "LIST", "GET", "PATCH", "written", "module reqs"))
        for which, seconds, sent, module in rows:
            print("%-7s %9.1f %6d %6d %7d %10s %13s" % (which, seconds, sent.get("LIST", 0), sent.get("GET", 0),
                                                        sent.get("PATCH", 0) + sent.get("APPLY", 0),
                                                        module.get("written"), module.get("api_requests")))
    finally:
        cluster.down()
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    for problem in problems:
        print("WRONG: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

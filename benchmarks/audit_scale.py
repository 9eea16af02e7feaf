"""Scale benchmark of the check-mode audit (playbooks/audit.yml) against a bare playbook that
only runs `containerd --config FILE config dump` through ansible.builtin.command, on the same
N local-connection nodes, same forks, same ansible.cfg. Not a test: pytest does not collect it.

    /work/venv/bin/python benchmarks/audit_scale.py [--sizes 10,50,200] [--forks 10]
        [--repeat 1] [--keep] [--workdir DIR] [--no-warmup] [--profile]

See benchmarks/README.md for how to read the table.
"""

import argparse
import configparser
import json
import os
import re
import resource
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.lib import containerd_bins  # noqa: E402
from tests.lib.ansible_run import Run  # noqa: E402  (recap parsing)
from tests.lib.fake_apiserver import FakeApiServer, write_kubeconfig  # noqa: E402

TOKEN = "benchmark-token-3f9a"
TARGET_RATIO = 1.5
VERSIONS = ("2.1", "1.7")  # node i runs VERSIONS[i % 2]
RESOURCES = ("runtimeclasses", "nodes")
RUNTIMES = ["nvidia", "nvidia-cdi", "runc"]

RUNTIMECLASSES = [
    {"metadata": {"name": "nvidia"}, "handler": "nvidia",
     "scheduling": {"nodeSelector": {"pool": "gpu"}}, "overhead": {"podFixed": {"cpu": "100m"}}},
    {"metadata": {"name": "nvidia-cdi"}, "handler": "nvidia-cdi",
     "scheduling": {"nodeSelector": {"pool": "gpu"}}},
]

# ---- node files ('{root}' becomes the node root; containerd resolves these paths for real) ----
V3_MAIN = """\
version = 3
imports = ["{root}/etc/containerd/conf.d/*.toml"]
root = "{root}/var/lib/containerd"
state = "{root}/run/containerd"

[plugins."io.containerd.cri.v1.runtime"]
  enable_cdi = true
  cdi_spec_dirs = ["{root}/etc/cdi"]

[plugins."io.containerd.cri.v1.runtime".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  SystemdCgroup = true
"""
V3_DROPIN = """\
version = 3

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.{name}]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.{name}.options]
  BinaryName = "{root}/usr/bin/{binary}"
  SystemdCgroup = true
"""
# containerd 1.x lets each imported file replace a plugin's whole section, so (as the
# containerd_runtime role does) the 1.7 main file imports one drop-in with the full CRI section.
V2_MAIN = """\
version = 2
imports = ["{root}/etc/containerd/conf.d/*.toml"]
root = "{root}/var/lib/containerd"
state = "{root}/run/containerd"
"""
V2_DROPIN = """\
version = 2

[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = true
  cdi_spec_dirs = ["{root}/etc/cdi"]

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
  BinaryName = "{root}/usr/bin/nvidia-container-runtime"
  SystemdCgroup = true

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi.options]
  BinaryName = "{root}/usr/bin/nvidia-container-runtime.cdi"
  SystemdCgroup = true
"""
CDI_SPEC = """\
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
  - name: "0"
    containerEdits:
      deviceNodes:
        - path: {root}/dev/nvidia0
containerEdits:
  hooks:
    - hookName: createContainer
      path: {root}/usr/bin/nvidia-container-runtime
      args: [nvidia-cdi-hook, update-ldcache]
"""
KUBELET = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
"""
FAKE_RUNTIME = "#!/bin/sh\n# stand-in for the NVIDIA container runtime\nexit 0\n"

BARE_PLAYBOOK = """\
---
# The floor: what Ansible itself costs to run one command per host.
- name: Bare containerd config dump
  hosts: all
  gather_facts: false
  tasks:
    - name: containerd config dump
      ansible.builtin.command:
        argv: ["{{ gpurt_containerd_bin }}", --config, "{{ gpurt_containerd_config_path }}", config, dump]
        chdir: /
      changed_when: false
"""


def write(root, rel, text, executable=False):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text.replace("{root}", root))
    if executable:
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def build_node(nodes_dir, name, version):
    root = os.path.join(nodes_dir, name)
    if version.startswith("1."):
        write(root, "etc/containerd/config.toml", V2_MAIN)
        write(root, "etc/containerd/conf.d/99-nvidia.toml", V2_DROPIN)
    else:
        write(root, "etc/containerd/config.toml", V3_MAIN)
        for runtime, binary in (("nvidia", "nvidia-container-runtime"), ("nvidia-cdi", "nvidia-container-runtime.cdi")):
            write(root, "etc/containerd/conf.d/99-%s.toml" % runtime,
                  V3_DROPIN.replace("{name}", runtime).replace("{binary}", binary))
    write(root, "usr/bin/nvidia-container-runtime", FAKE_RUNTIME, executable=True)
    write(root, "usr/bin/nvidia-container-runtime.cdi", FAKE_RUNTIME, executable=True)
    write(root, "etc/cdi/nvidia.yaml", CDI_SPEC)
    write(root, "dev/nvidia0", "stand-in device node\n")
    write(root, "var/lib/kubelet/config.yaml", KUBELET)
    return root


def node_object(name, version):
    full = {"1.7": "1.7.24", "2.1": "2.1.9"}[version]
    return {
        "metadata": {"name": name, "labels": {"pool": "gpu", "kubernetes.io/hostname": name}},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "runtimeHandlers": [{"name": n, "features": {"recursiveReadOnlyMounts": False, "userNamespaces": False}}
                                for n in [""] + RUNTIMES],
            "nodeInfo": {"containerRuntimeVersion": "containerd://%s" % full, "kubeletVersion": "v1.33.1"},
        },
    }


class Fleet(object):
    def __init__(self, workdir, size):
        self.workdir = workdir
        binaries = containerd_bins.ensure_binaries()
        nodes_dir = os.path.join(workdir, "nodes")
        self.hosts = {}
        self.node_objects = []
        for index in range(size):
            name = "gpu-%03d" % index
            version = VERSIONS[index % len(VERSIONS)]
            root = build_node(nodes_dir, name, version)
            self.hosts[name] = {
                "gpurt_containerd_bin": binaries[version],
                "gpurt_containerd_config_path": os.path.join(root, "etc/containerd/config.toml"),
                "gpurt_kubelet_config_path": os.path.join(root, "var/lib/kubelet/config.yaml"),
            }
            self.node_objects.append(node_object(name, version))
        self.bare_playbook = os.path.join(workdir, "bare.yml")
        with open(self.bare_playbook, "w") as handle:
            handle.write(BARE_PLAYBOOK)

    def inventory(self, n, kubeconfig, report_dir):
        names = sorted(self.hosts)[:n]
        doc = {"all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                     "gpurt_kubeconfig": kubeconfig, "gpurt_report_dir": report_dir},
            "children": {"gpu": {"hosts": dict((h, self.hosts[h]) for h in names)}},
        }}
        path = os.path.join(self.workdir, "inventory-%d.json" % n)
        with open(path, "w") as handle:
            json.dump(doc, handle, indent=1)
        return path


def ansible_env(workdir, forks, extra=None):
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith(("ANSIBLE_", "K8S_AUTH_", "JUNIT_")) and k != "KUBECONFIG")
    env.update(
        ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
        ANSIBLE_FORKS=str(forks),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=os.path.join(workdir, "ansible-local"),
        ANSIBLE_REMOTE_TEMP=os.path.join(workdir, "ansible-remote"),
        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
    )
    env.update(extra or {})
    return env


def run_playbook(ansible_playbook, playbook, inventory, env, check, extra_args=()):
    argv = [ansible_playbook, "-i", inventory, playbook] + (["--check"] if check else []) + list(extra_args)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=3600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(proc), wall, cpu


def bare_verdict(run, n):
    ok = run.rc == 0 and len(run.recap) == n and all(
        r["ok"] == 1 and r["failed"] == 0 and r["unreachable"] == 0 for r in run.recap.values())
    return ok, "" if ok else "rc=%s, %d hosts in recap" % (run.rc, len(run.recap))


def audit_verdict(run, n, report_dir):
    problems = []
    if run.rc != 0:
        problems.append("rc=%d" % run.rc)
    # The audit's last play runs on localhost (it fails a run that judged no host): not a node.
    recap = dict((h, r) for h, r in run.recap.items() if h != "localhost")
    if len(recap) != n or any(r["failed"] or r["unreachable"] for r in recap.values()):
        problems.append("recap: %d hosts, failed/unreachable present" % len(recap))
    try:
        with open(os.path.join(report_dir, "audit.json")) as handle:
            report = json.load(handle)
        summary = report["summary"]
        if summary["nodes"] != n or summary["ok"] != n:
            problems.append("report: %d/%d nodes OK" % (summary["ok"], summary["nodes"]))
        bad = [e["node"] for e in report["nodes"].values() if e["runtimes"] != RUNTIMES]
        if bad:
            problems.append("unexpected loaded runtimes on %d nodes (%s...)" % (len(bad), bad[0]))
        not_ok = [e for e in report["nodes"].values() if e["status"] != "OK"]
        if not_ok:
            e = not_ok[0]
            problems.append("e.g. %s: %s %s" % (e["node"], e["status"], e["reason"] or
                                                [f.get("message") for f in e["findings"]][:2]))
    except (IOError, OSError, ValueError, KeyError) as exc:
        problems.append("no usable report: %s" % exc)
    return not problems, "; ".join(problems)


def api_counts(server):
    """{resource: (list calls, all requests)}; a list call is a GET of the collection without
    a continue token. "other" counts requests outside the two resources (discovery)."""
    counts = dict((res, [0, 0]) for res in RESOURCES + ("other",))
    for r in list(server.requests):
        res = r.get("resource") if r.get("resource") in RESOURCES else "other"
        counts[res][1] += 1
        if (res != "other" and r.get("method", "GET") == "GET" and r.get("name") is None
                and not r["query"].get("continue")):
            counts[res][0] += 1
    return dict((res, tuple(c)) for res, c in counts.items())


def profile_junit(junit_dir):
    """[(task, hosts, span s)] from the junit callback (its time is host result - task start)."""
    tasks = {}
    order = []
    for name in sorted(os.listdir(junit_dir)):
        for case in ET.parse(os.path.join(junit_dir, name)).iter("testcase"):
            task = re.sub(r"^\[[^\]]*\] [^:]*: ", "", case.get("name"))
            key = (case.get("classname"), task)
            if key not in tasks:
                tasks[key] = []
                order.append(key)
            tasks[key].append(float(case.get("time") or 0))
    return [(key[1], len(tasks[key]), max(tasks[key])) for key in order]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default="10,50,200", help="comma-separated node counts")
    parser.add_argument("--forks", type=int, default=None, help="forks for both playbooks (default: ansible.cfg's)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per playbook and size; >1 prints the median")
    parser.add_argument("--workdir", help="build here instead of a temp dir")
    parser.add_argument("--keep", action="store_true", help="keep the workdir")
    parser.add_argument("--no-warmup", action="store_true", help="skip the unmeasured 2-node warm-up run")
    parser.add_argument("--profile", action="store_true",
                        help="after measuring, rerun both playbooks at the largest size with the junit "
                             "callback and print per-task times (not part of the table)")
    parser.add_argument("--ansible-playbook", help="default: the one next to this Python",
                        default=os.path.join(os.path.dirname(sys.executable), "ansible-playbook"))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.forks is None:
        cfg = configparser.ConfigParser()
        cfg.read(os.path.join(REPO, "ansible.cfg"))
        args.forks = cfg.getint("defaults", "forks", fallback=5)

    workdir = os.path.abspath(args.workdir) if args.workdir else tempfile.mkdtemp(prefix="gpurt-audit-scale-")
    os.makedirs(workdir, exist_ok=True)
    audit_playbook = os.path.join(REPO, "playbooks", "audit.yml")
    env = ansible_env(workdir, args.forks)
    started = time.perf_counter()
    print("workdir %s, forks %d, repeat %d, %d cpu, load %.1f, ansible-playbook %s" % (
        workdir, args.forks, args.repeat, os.cpu_count() or 0, os.getloadavg()[0], args.ansible_playbook), flush=True)
    fleet = Fleet(workdir, max(sizes + [2]))
    server = FakeApiServer(runtimeclasses=RUNTIMECLASSES, token=TOKEN).start()
    kubeconfig = write_kubeconfig(os.path.join(workdir, "kubeconfig"), server.url, token=TOKEN)
    rows = []
    all_ok = True
    try:
        def measure(n, measured=True):
            server.set_objects("nodes", fleet.node_objects[:n])
            report_dir = os.path.join(workdir, "reports-%d" % n)
            inventory = fleet.inventory(n, kubeconfig, report_dir)
            samples = {"bare": [], "audit": [], "bare_cpu": [], "audit_cpu": []}
            api, verdicts = [], []
            for index in range(args.repeat if measured else 1):
                # bare first on even repeats, audit first on odd ones (drift on a shared machine)
                for kind in (("bare", "audit") if index % 2 == 0 else ("audit", "bare")):
                    if kind == "bare":
                        run, wall, cpu = run_playbook(args.ansible_playbook, fleet.bare_playbook, inventory, env, False)
                        verdicts.append(("bare",) + bare_verdict(run, n) + (run,))
                    else:
                        shutil.rmtree(report_dir, ignore_errors=True)
                        server.reset_requests()
                        run, wall, cpu = run_playbook(args.ansible_playbook, audit_playbook, inventory, env, True)
                        api.append(api_counts(server))
                        verdicts.append(("audit",) + audit_verdict(run, n, report_dir) + (run,))
                    samples[kind].append(wall)
                    samples[kind + "_cpu"].append(cpu)
            return samples, api, verdicts, inventory

        if not args.no_warmup:
            print("warm-up: one unmeasured run of each playbook on 2 nodes", flush=True)
            _unused, _unused, verdicts, _unused = measure(2, measured=False)
            for kind, ok, why, run in verdicts:
                if not ok:
                    print("WARM-UP %s FAILED: %s\n%r" % (kind, why, run), flush=True)
        for n in sizes:
            samples, api, verdicts, _unused = measure(n)
            med = dict((k, statistics.median(v)) for k, v in samples.items())
            api_ok = all(a[res] == (1, 1) for a in api for res in RESOURCES)
            verdict_ok = all(ok for _unused, ok, _unused, _unused in verdicts)
            all_ok = all_ok and api_ok and verdict_ok
            rows.append(dict(n=n, api=api[-1], api_ok=api_ok, verdict_ok=verdict_ok, verdicts=verdicts, **med))
            print("  N=%d done: bare %.1f s, audit %.1f s" % (n, med["bare"], med["audit"]), flush=True)

        print()
        head = ("N", "bare s", "audit s", "bare ms/host", "audit ms/host", "ratio", "RC lists/reqs",
                "Node lists/reqs", "other reqs", "verdict")
        table = [head]
        for r in rows:
            table.append((
                str(r["n"]), "%.2f" % r["bare"], "%.2f" % r["audit"],
                "%.0f" % (1000 * r["bare"] / r["n"]), "%.0f" % (1000 * r["audit"] / r["n"]),
                "%.2f" % (r["audit"] / r["bare"]),
                "%d/%d" % r["api"]["runtimeclasses"] + ("" if r["api_ok"] else " !!"),
                "%d/%d" % r["api"]["nodes"] + ("" if r["api_ok"] else " !!"), str(r["api"]["other"][1]),
                ("all %d OK, rc 0" % r["n"]) if r["verdict_ok"] else "UNEXPECTED"))
        widths = [max(len(row[i]) for row in table) for i in range(len(head))]
        for row in table:
            print("  ".join(cell.rjust(w) for cell, w in zip(row, widths)))
        print()
        suffix = " (median of %d)" % args.repeat if args.repeat > 1 else ""
        print("wall times%s; per-host = wall / N; ratio = audit / bare; bare runs without --check; "
              "load average now %.1f" % (suffix, os.getloadavg()[0]))
        print("controller CPU (user+sys, all processes): " + ", ".join(
            "N=%d bare %.1f s audit %.1f s" % (r["n"], r["bare_cpu"], r["audit_cpu"]) for r in rows))
        for a, b in zip(rows, rows[1:]):
            dn = b["n"] - a["n"]
            print("marginal cost per extra host, N=%d->%d: bare %.0f ms, audit %.0f ms" % (
                a["n"], b["n"], 1000 * (b["bare"] - a["bare"]) / dn, 1000 * (b["audit"] - a["audit"]) / dn))
        for r in rows:
            if not r["api_ok"]:
                print("!!! API REQUESTS NOT 1 LIST PER RESOURCE at N=%d: %r" % (r["n"], r["api"]))
            for kind, ok, why, run in r["verdicts"]:
                if not ok:
                    print("!!! UNEXPECTED %s VERDICT at N=%d: %s\n%s" % (kind, r["n"], why, run.text[-3000:]))
        big = max(rows, key=lambda r: r["n"])
        ratio = big["audit"] / big["bare"]
        print("target: audit <= %.1fx bare at N=%d: %s (%.2fx)" % (
            TARGET_RATIO, big["n"], "MET" if ratio <= TARGET_RATIO else "NOT MET", ratio))

        if args.profile:
            n = big["n"]
            server.set_objects("nodes", fleet.node_objects[:n])
            inventory = fleet.inventory(n, kubeconfig, os.path.join(workdir, "reports-profile"))
            for kind, playbook, check in (("bare", fleet.bare_playbook, False), ("audit", audit_playbook, True)):
                junit_dir = os.path.join(workdir, "junit-%s" % kind)
                shutil.rmtree(junit_dir, ignore_errors=True)
                penv = ansible_env(workdir, args.forks, dict(
                    ANSIBLE_CALLBACKS_ENABLED="gpurt.runtime_gate.summary,ansible.builtin.junit",
                    JUNIT_OUTPUT_DIR=junit_dir, JUNIT_HIDE_TASK_ARGUMENTS="true"))
                _unused, wall, _unused = run_playbook(args.ansible_playbook, playbook, inventory, penv, check)
                print("\nprofile %s N=%d (junit callback on, wall %.2f s): span = task start to last host result"
                      % (kind, n, wall))
                total = 0.0
                for task, hosts, span in profile_junit(junit_dir):
                    total += span
                    per_host = ("%5.1f ms/host" % (1000 * span / hosts)) if hosts > 1 else " " * 12
                    print("  %6.2f s span  %s  %3d hosts  %s" % (span, per_host, hosts, task))
                print("  %6.2f s outside tasks (startup, parsing, play setup, stats, junit write)" % (wall - total))
    finally:
        server.stop()
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print("kept %s" % workdir)
    print("total benchmark time %.0f s" % (time.perf_counter() - started))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())

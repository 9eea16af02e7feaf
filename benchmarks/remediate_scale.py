"""Scale benchmark of remediation (playbooks/remediate.yml) on N local containerd 2.1 nodes, against
the least a play can do for the same change: copy one drop-in with `validate:` plus a restart handler.
Also runs remediate.yml --check on the bare nodes (it stages and re-audits what it would write),
remediate.yml again on the now-correct nodes (it must be changed=0) and the check-mode audit on them,
all on the same hosts, same forks, one run each. Not a test: pytest does not collect it.

    .venv/bin/python benchmarks/remediate_scale.py [--sizes 20,100] [--forks 10] [--keep] [--workdir DIR]

Ratios printed from one run, side by side; goals: remediate / minimal <= 3 at N=100 (issue 12),
remediate on already-correct nodes <= 1.2 x the check-mode audit and remediate.yml --check <= 1.5 x the
audit (issue 27). See benchmarks/README.md.
"""

import argparse
import configparser
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

import audit_scale  # noqa: E402  (node files, ansible env and the timed ansible-playbook run)
from tests.lib import containerd_bins  # noqa: E402

GOAL_MINIMAL = 3.0
GOAL_CORRECT = 1.2  # remediate.yml on already-correct nodes / the check-mode audit
GOAL_CHECK = 1.5  # remediate.yml --check on bare nodes / the check-mode audit

# A bare version 3 main config whose imports already read conf.d: both plays write one drop-in.
MAIN = 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n'
DROPIN = """\
version = 3

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]
  BinaryName = "{{ bench_root }}/usr/bin/nvidia-container-runtime"
"""
MINIMAL_PLAYBOOK = """\
---
# The floor for this change: one validated copy of the drop-in, one restart handler.
- name: Minimal registration of nvidia
  hosts: all
  gather_facts: false
  tasks:
    - name: Write the drop-in
      ansible.builtin.copy:
        dest: "{{ bench_root }}/etc/containerd/conf.d/99-nvidia.toml"
        content: |
%s
        mode: "0644"
        validate: "{{ gpurt_containerd_bin }} --config %%s config dump"
      notify: Restart containerd
  handlers:
    - name: Restart containerd
      ansible.builtin.command:
        argv: ["true"]
      changed_when: true
""" % "\n".join("          " + line if line else "" for line in DROPIN.splitlines())
RUNTIMECLASSES = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n"


def reset_nodes(workdir, names):
    """Every node back to the bare main config, its nvidia binary present, no drop-in, no backup."""
    for name in names:
        root = os.path.join(workdir, "nodes", name)
        shutil.rmtree(root, ignore_errors=True)
        audit_scale.write(root, "etc/containerd/config.toml", MAIN)
        audit_scale.write(root, "usr/bin/nvidia-container-runtime", audit_scale.FAKE_RUNTIME, executable=True)
        os.makedirs(os.path.join(root, "etc/containerd/conf.d"))


def inventory(workdir, names, binary, manifests):
    hosts = {}
    for name in names:
        root = os.path.join(workdir, "nodes", name)
        hosts[name] = {
            "bench_root": root,
            "gpurt_containerd_bin": binary,
            "gpurt_containerd_config_path": os.path.join(root, "etc/containerd/config.toml"),
            "gpurt_kubelet_config_path": os.path.join(root, "var/lib/kubelet/config.yaml"),
            "containerd_runtime_runtimes": [{"name": "nvidia",
                                             "binary_name": os.path.join(root, "usr/bin/nvidia-container-runtime")}],
            "containerd_runtime_backup_dir": os.path.join(root, "var/backups/gpurt"),
            "containerd_runtime_restart_command": ["true"],
        }
    doc = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                            "gpurt_runtimeclasses_src": manifests},
                   "hosts": hosts}}
    path = os.path.join(workdir, "inventory-%d.json" % len(names))
    with open(path, "w") as handle:
        json.dump(doc, handle, indent=1)
    return path


def verdict(run, n, changed_per_host):
    """'' when every host is in the recap, nothing failed, and each changed as expected."""
    problems = []
    if run.rc != 0:
        problems.append("rc=%d" % run.rc)
    nodes = dict((h, r) for h, r in run.recap.items() if h != "localhost")  # the audit's last play runs there
    if len(nodes) != n:
        problems.append("%d hosts in recap" % len(nodes))
    wrong = [h for h, r in run.recap.items() if r["failed"] or r["unreachable"] or
             (h in nodes and changed_per_host is not None and r["changed"] != changed_per_host)]
    if wrong:
        problems.append("%d hosts not changed=%d or failed (%s ...)" % (len(wrong), changed_per_host, wrong[0]))
    return "; ".join(problems)


def counting_binary(workdir, real):
    """A wrapper that logs each containerd command line, then runs the real binary: how many times
    each play runs containerd, per host."""
    log = os.path.join(workdir, "containerd-calls.log")
    path = os.path.join(workdir, "bin", "containerd")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write('#!/bin/sh\necho "$*" >> "%s"\nexec "%s" "$@"\n' % (log, real))
    os.chmod(path, 0o755)
    return path, log


def take_calls(log):
    """{kind: count} of the logged containerd commands since the last call; empties the log."""
    counts = {}
    if os.path.exists(log):
        with open(log) as handle:
            for line in handle:
                args = line.split()
                if args[:1] == ["--version"]:
                    kind = "version"
                else:
                    kind = " ".join(a for a in args if a in ("config", "dump", "default", "migrate")) or line.strip()
                counts[kind] = counts.get(kind, 0) + 1
        os.remove(log)
    return counts


def calls_text(counts, n):
    total = sum(counts.values())
    return "%.1f (%s)" % (float(total) / n, ", ".join("%s %.1f" % (k, float(v) / n) for k, v in sorted(counts.items())))


def loaded_everywhere(workdir, names, binary):
    import subprocess
    missing = []
    for name in names:
        config = os.path.join(workdir, "nodes", name, "etc/containerd/config.toml")
        out = subprocess.run([binary, "--config", config, "config", "dump"], stdout=subprocess.PIPE, check=False,
                             stderr=subprocess.DEVNULL, universal_newlines=True, cwd="/").stdout
        if "runtimes.nvidia]" not in out:
            missing.append(name)
    return missing


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default="20,100", help="comma-separated node counts")
    parser.add_argument("--forks", type=int, default=None, help="default: ansible.cfg's")
    parser.add_argument("--workdir", help="build here instead of a temp dir (kept)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    parser.add_argument("--serial", default="100%", help="remediate.yml's batch size (gpurt_serial); the minimal "
                        "play has one batch, so the default compares like with like")
    parser.add_argument("--ansible-playbook", default=os.path.join(os.path.dirname(sys.executable), "ansible-playbook"))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.forks is None:
        cfg = configparser.ConfigParser()
        cfg.read(os.path.join(REPO, "ansible.cfg"))
        args.forks = cfg.getint("defaults", "forks", fallback=5)
    workdir = os.path.abspath(args.workdir) if args.workdir else tempfile.mkdtemp(prefix="gpurt-remediate-scale-")
    os.makedirs(workdir, exist_ok=True)
    real_binary = containerd_bins.ensure_binaries()["2.1"]
    env = audit_scale.ansible_env(workdir, args.forks)
    binary, calls_log = counting_binary(workdir, real_binary)
    manifests = os.path.join(workdir, "runtimeclasses.yaml")
    with open(manifests, "w") as handle:
        handle.write(RUNTIMECLASSES)
    minimal = os.path.join(workdir, "minimal.yml")
    with open(minimal, "w") as handle:
        handle.write(MINIMAL_PLAYBOOK)
    remediate = os.path.join(REPO, "playbooks", "remediate.yml")
    audit = os.path.join(REPO, "playbooks", "audit.yml")
    started = time.perf_counter()
    load_start = os.getloadavg()
    loads = [load_start[0]]
    print("workdir %s, forks %d, %d cpu, load %.1f %.1f %.1f, containerd 2.1 nodes" % (
        workdir, args.forks, os.cpu_count() or 0, load_start[0], load_start[1], load_start[2]), flush=True)

    def play(playbook, names, check=False):
        take_calls(calls_log)
        run, wall, _cpu = audit_scale.run_playbook(args.ansible_playbook, playbook,
                                                   inventory(workdir, names, binary, manifests), env, check,
                                                   ["-e", "gpurt_serial=%s" % args.serial])
        loads.append(os.getloadavg()[0])
        return run, wall, take_calls(calls_log)

    rows = []
    ok = True
    try:
        warm = ["warm-%d" % i for i in range(2)]
        reset_nodes(workdir, warm)
        play(minimal, warm)
        reset_nodes(workdir, warm)
        play(remediate, warm)
        calls = {}
        for n in sizes:
            names = ["gpu-%03d" % i for i in range(n)]
            reset_nodes(workdir, names)
            run, t_min, calls["minimal"] = play(minimal, names)
            problems = [("minimal", verdict(run, n, 2))]
            reset_nodes(workdir, names)
            run, t_check, calls["check"] = play(remediate, names, check=True)
            problems.append(("remediate --check, bare nodes", verdict(run, n, None)))
            if loaded_everywhere(workdir, names, real_binary) != names:
                problems.append(("remediate --check, bare nodes", "check mode wrote a file"))
            run, t_bare, calls["remediate"] = play(remediate, names)
            problems.append(("remediate, bare nodes", verdict(run, n, 3)))
            missing = loaded_everywhere(workdir, names, real_binary)
            if missing:
                problems.append(("remediate, bare nodes", "nvidia not loaded on %d nodes" % len(missing)))
            run, t_correct, calls["correct"] = play(remediate, names)
            problems.append(("remediate, already-correct nodes", verdict(run, n, 0)))
            run, t_audit, calls["audit"] = play(audit, names, check=True)
            problems.append(("check-mode audit", verdict(run, n, 0)))
            problems = [p for p in problems if p[1]]
            ok = ok and not problems
            rows.append(dict(n=n, minimal=t_min, check=t_check, bare=t_bare, correct=t_correct, audit=t_audit,
                             problems=problems,
                             calls=dict(calls)))
            print("  N=%d done" % n, flush=True)
        print()
        head = ("N", "minimal s", "check s", "remediate s", "correct s", "audit s", "remediate/minimal",
                "correct/audit", "check/audit", "remediate ms/host", "verdict")
        table = [head] + [(
            str(r["n"]), "%.2f" % r["minimal"], "%.2f" % r["check"], "%.2f" % r["bare"], "%.2f" % r["correct"],
            "%.2f" % r["audit"], "%.2f" % (r["bare"] / r["minimal"]), "%.2f" % (r["correct"] / r["audit"]),
            "%.2f" % (r["check"] / r["audit"]),
            "%.0f" % (1000 * r["bare"] / r["n"]), "as expected" if not r["problems"] else "UNEXPECTED") for r in rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(head))]
        for row in table:
            print("  ".join(cell.rjust(w) for cell, w in zip(row, widths)))
        print()
        print("one run each, wall time of the whole ansible-playbook; minimal = copy with validate + restart "
              "handler; check = remediate.yml --check on bare nodes; remediate = playbooks/remediate.yml on bare "
              "nodes; correct = remediate.yml again "
              "(changed=0); audit = playbooks/audit.yml --check on the correct nodes; load average (1 min) %.1f at "
              "the start, %.1f-%.1f during, %.1f now" % (loads[0], min(loads), max(loads), os.getloadavg()[0]))
        for r in rows:
            print("containerd runs per host at N=%d: " % r["n"] + "; ".join(
                "%s %s" % (kind, calls_text(r["calls"][kind], r["n"]))
                for kind in ("minimal", "check", "remediate", "correct", "audit")))
        for r in rows:
            for kind, why in r["problems"]:
                print("!!! UNEXPECTED at N=%d, %s: %s" % (r["n"], kind, why))
        big = max(rows, key=lambda r: r["n"])
        print("goal remediate/minimal <= %.1f at N=%d: %s (%.2f)" % (
            GOAL_MINIMAL, big["n"], "MET" if big["bare"] / big["minimal"] <= GOAL_MINIMAL else "NOT MET",
            big["bare"] / big["minimal"]))
        for name, key, goal in (("correct/audit", "correct", GOAL_CORRECT), ("check/audit", "check", GOAL_CHECK)):
            print("goal %s <= %.1f at N=%d: %s (%.2f)" % (
                name, goal, big["n"], "MET" if big[key] / big["audit"] <= goal else "NOT MET", big[key] / big["audit"]))
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print("kept %s" % workdir)
    print("total benchmark time %.0f s" % (time.perf_counter() - started))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

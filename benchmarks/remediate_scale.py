"""Scale benchmark of remediation (playbooks/remediate.yml) on N local containerd 2.1 nodes, against
the least a play can do for the same change: copy one drop-in with `validate:` plus a restart handler.
Also runs remediate.yml again on the now-correct nodes (it must be changed=0) and the check-mode audit
on them, all on the same hosts, same forks, one run each. Not a test: pytest does not collect it.

    .venv/bin/python benchmarks/remediate_scale.py [--sizes 20,100] [--forks 10] [--keep] [--workdir DIR]

Ratios printed from one run; goals (issue 12): remediate / minimal <= 3 at N=100, and remediate on
already-correct nodes <= 1.5 x the check-mode audit. See benchmarks/README.md.
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
GOAL_AUDIT = 1.5

# A bare version 3 main config whose imports already read conf.d: both plays write one drop-in.
MAIN = 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n'
DROPIN = """\
version = 3

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]
  BinaryName = "{{ gpurt_root }}/usr/bin/nvidia-container-runtime"
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
        dest: "{{ gpurt_root }}/etc/containerd/conf.d/99-nvidia.toml"
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
            "gpurt_root": root,
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
    # The playbooks' last play runs on localhost (it fails a run that matched no host): not a node.
    recap = dict((h, r) for h, r in run.recap.items() if h != "localhost")
    if len(recap) != n:
        problems.append("%d hosts in recap" % len(recap))
    wrong = [h for h, r in recap.items() if r["failed"] or r["unreachable"] or r["changed"] != changed_per_host]
    if wrong:
        problems.append("%d hosts not changed=%d or failed (%s ...)" % (len(wrong), changed_per_host, wrong[0]))
    return "; ".join(problems)


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
    binary = containerd_bins.ensure_binaries()["2.1"]
    env = audit_scale.ansible_env(workdir, args.forks)
    manifests = os.path.join(workdir, "runtimeclasses.yaml")
    with open(manifests, "w") as handle:
        handle.write(RUNTIMECLASSES)
    minimal = os.path.join(workdir, "minimal.yml")
    with open(minimal, "w") as handle:
        handle.write(MINIMAL_PLAYBOOK)
    remediate = os.path.join(REPO, "playbooks", "remediate.yml")
    audit = os.path.join(REPO, "playbooks", "audit.yml")
    started = time.perf_counter()
    print("workdir %s, forks %d, %d cpu, load %.1f, containerd 2.1 nodes" % (
        workdir, args.forks, os.cpu_count() or 0, os.getloadavg()[0]), flush=True)

    def play(playbook, names, check=False):
        run, wall, _cpu = audit_scale.run_playbook(args.ansible_playbook, playbook,
                                                   inventory(workdir, names, binary, manifests), env, check,
                                                   ["-e", "gpurt_serial=%s" % args.serial])
        return run, wall

    rows = []
    ok = True
    try:
        warm = ["warm-%d" % i for i in range(2)]
        reset_nodes(workdir, warm)
        play(minimal, warm)
        reset_nodes(workdir, warm)
        play(remediate, warm)
        for n in sizes:
            names = ["gpu-%03d" % i for i in range(n)]
            reset_nodes(workdir, names)
            run, t_min = play(minimal, names)
            problems = [("minimal", verdict(run, n, 2))]
            reset_nodes(workdir, names)
            run, t_bare = play(remediate, names)
            problems.append(("remediate, bare nodes", verdict(run, n, 2)))
            missing = loaded_everywhere(workdir, names, binary)
            if missing:
                problems.append(("remediate, bare nodes", "nvidia not loaded on %d nodes" % len(missing)))
            run, t_correct = play(remediate, names)
            problems.append(("remediate, already-correct nodes", verdict(run, n, 0)))
            run, t_audit = play(audit, names, check=True)
            problems.append(("check-mode audit", verdict(run, n, 0)))
            problems = [p for p in problems if p[1]]
            ok = ok and not problems
            rows.append(dict(n=n, minimal=t_min, bare=t_bare, correct=t_correct, audit=t_audit, problems=problems))
            print("  N=%d done" % n, flush=True)
        print()
        head = ("N", "minimal s", "remediate s", "correct s", "audit s", "remediate/minimal", "correct/audit",
                "remediate ms/host", "verdict")
        table = [head] + [(
            str(r["n"]), "%.2f" % r["minimal"], "%.2f" % r["bare"], "%.2f" % r["correct"], "%.2f" % r["audit"],
            "%.2f" % (r["bare"] / r["minimal"]), "%.2f" % (r["correct"] / r["audit"]),
            "%.0f" % (1000 * r["bare"] / r["n"]), "as expected" if not r["problems"] else "UNEXPECTED") for r in rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(head))]
        for row in table:
            print("  ".join(cell.rjust(w) for cell, w in zip(row, widths)))
        print()
        print("one run each, wall time of the whole ansible-playbook; minimal = copy with validate + restart "
              "handler; remediate = playbooks/remediate.yml on bare nodes; correct = remediate.yml again "
              "(changed=0); audit = playbooks/audit.yml --check on the correct nodes; load now %.1f" % os.getloadavg()[0])
        for r in rows:
            for kind, why in r["problems"]:
                print("!!! UNEXPECTED at N=%d, %s: %s" % (r["n"], kind, why))
        big = max(rows, key=lambda r: r["n"])
        print("goal remediate/minimal <= %.1f at N=%d: %s (%.2f)" % (
            GOAL_MINIMAL, big["n"], "MET" if big["bare"] / big["minimal"] <= GOAL_MINIMAL else "NOT MET",
            big["bare"] / big["minimal"]))
        print("goal correct/audit <= %.1f at N=%d: %s (%.2f)" % (
            GOAL_AUDIT, big["n"], "MET" if big["correct"] / big["audit"] <= GOAL_AUDIT else "NOT MET",
            big["correct"] / big["audit"]))
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print("kept %s" % workdir)
    print("total benchmark time %.0f s" % (time.perf_counter() - started))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Scale benchmark of the check-mode audit (playbooks/audit.yml) against a bare playbook that
only runs `containerd --config FILE config dump` through ansible.builtin.command, on the same
N local-connection nodes, same forks, same ansible.cfg. Not a test: pytest does not collect it.

    /work/venv/bin/python benchmarks/audit_scale.py [--sizes 10,50,200] [--forks 10]
        [--repeat 1] [--keep] [--workdir DIR] [--no-warmup] [--profile]

See benchmarks/README.md for how to read the table.
"""

import argparse
import concurrent.futures
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
import threading
import time
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.lib import containerd_bins  # noqa: E402
from tests.lib.ansible_run import Run  # noqa: E402  (recap parsing)
from tests.lib import cluster_objects, real_cluster  # noqa: E402

# audit / bare at these sizes (issue 34), measured on the same run
TARGETS = {10: 1.25, 200: 1.10}
# issue 34 at N = 5,000: the audit's wall time per host at most this much above N = 200's, and the peak RSS of
# the ansible-playbook main process under this many MiB
PER_HOST_GROWTH = 1.10
MAX_MAIN_RSS_MIB = 300
# threads that make (or delete) the benchmark's Nodes in the apiserver, each with its own client
NODE_THREADS = 8
# USER_AGENT of plugins/module_utils/_k8s/session.py: how the apiserver's audit log tells the
# modules' requests from the benchmark's own (a mismatch shows as 0 list calls, goal NOT MET)
MODULE_USER_AGENT = "gpurt.runtime_gate"
PAGE_SIZE = 500  # the list modules' default page_size
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


NODE_VERSIONS = {"1.7": "1.7.24", "2.1": "2.1.9"}


class BenchCluster(object):
    """A real control plane (tests/lib/real_cluster.py) in WORKDIR/cluster whose kube-apiserver writes
    an audit log of the requests of AUDITED_USER: the benchmark counts the audit's list calls from
    what the apiserver itself recorded, by the module's User-Agent."""

    AUDITED_USER = "gpurt-admin"
    POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    users: [%s]
  - level: None
"""

    def __init__(self, workdir):
        missing = real_cluster.missing_binaries()
        if missing:
            raise SystemExit("%s not built in %s: run `make setup` first" % (", ".join(missing), real_cluster.bin_dir()))
        directory = os.path.join(workdir, "cluster")
        os.makedirs(directory, exist_ok=True)
        policy = os.path.join(directory, "audit-policy.yaml")
        with open(policy, "w") as handle:
            handle.write(self.POLICY % self.AUDITED_USER)
        self.audit_log = os.path.join(directory, "apiserver-audit.log")
        self.cluster = real_cluster.Cluster(directory, apiserver_args=[
            "--audit-policy-file", policy, "--audit-log-path", self.audit_log, "--audit-log-mode", "blocking",
            "--audit-log-maxsize", "0"]).up()
        self.kubeconfig = self.cluster.kubeconfig_for(
            self.AUDITED_USER, os.path.join(workdir, "kubeconfig"), auth="token")
        self.api = cluster_objects.Api(self.cluster.kubeconfig)
        self.nodes = set()
        for rc in RUNTIMECLASSES:
            self.api.runtimeclass(rc["metadata"]["name"], rc["handler"], overhead=rc["overhead"]["podFixed"]
                                  if "overhead" in rc else None, selector=rc["scheduling"]["nodeSelector"])
        self._offset = 0

    def set_nodes(self, names_and_versions):
        """Exactly these Nodes (name, containerd version) exist, each with labels, allocatable and
        status.runtimeHandlers written through the status subresource; made or deleted by NODE_THREADS
        threads (5,000 Nodes one by one take minutes)."""
        wanted = dict(names_and_versions)
        gone = sorted(self.nodes - set(wanted))
        new = sorted(set(wanted) - self.nodes)

        def work(chunk):
            api = cluster_objects.Api(self.cluster.kubeconfig)
            try:
                for name in chunk:
                    if name in wanted:
                        api.node(name, labels={"pool": "gpu"}, cpu="8", memory="32Gi", handlers=RUNTIMES,
                                 runtime_version="containerd://%s" % NODE_VERSIONS[wanted[name]])
                    else:
                        api.core.delete_node(name)
            finally:
                api.close()

        for names in (gone, new):
            chunks = [names[i::NODE_THREADS] for i in range(NODE_THREADS) if names[i::NODE_THREADS]]
            with concurrent.futures.ThreadPoolExecutor(NODE_THREADS) as pool:
                for future in [pool.submit(work, chunk) for chunk in chunks]:
                    future.result()
        self.nodes = set(wanted)

    def reset_requests(self):
        self._offset = os.path.getsize(self.audit_log) if os.path.exists(self.audit_log) else 0

    def requests(self):
        """The audit events since reset_requests() of requests the gpurt modules made."""
        time.sleep(0.2)  # the last ResponseComplete event is written just after the response
        events = []
        with open(self.audit_log) as handle:
            handle.seek(self._offset)
            for line in handle:
                event = json.loads(line)
                if event.get("userAgent", "").startswith(MODULE_USER_AGENT):
                    events.append(event)
        return events

    def stop(self):
        self.api.close()
        self.cluster.down()


class Fleet(object):
    def __init__(self, workdir, size):
        self.workdir = workdir
        binaries = containerd_bins.ensure_binaries()
        nodes_dir = os.path.join(workdir, "nodes")
        self.hosts = {}
        self.versions = {}
        self.node_specs = []
        self.names = []  # in index order: with 4-digit names, sorted() would put gpu-1000 before gpu-101
        width = max(3, len(str(size - 1)))
        for index in range(size):
            name = "gpu-%0*d" % (width, index)
            self.names.append(name)
            version = VERSIONS[index % len(VERSIONS)]
            self.versions[name] = "containerd %s node" % version
            root = build_node(nodes_dir, name, version)
            self.hosts[name] = {
                "gpurt_containerd_bin": binaries[version],
                "gpurt_containerd_config_path": os.path.join(root, "etc/containerd/config.toml"),
                "gpurt_kubelet_config_path": os.path.join(root, "var/lib/kubelet/config.yaml"),
            }
            self.node_specs.append((name, version))
        self.bare_playbook = os.path.join(workdir, "bare.yml")
        with open(self.bare_playbook, "w") as handle:
            handle.write(BARE_PLAYBOOK)

    def inventory(self, n, kubeconfig, report_dir, name=None):
        names = self.names[:n]
        doc = {"all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                     "gpurt_kubeconfig": kubeconfig, "gpurt_report_dir": report_dir},
            "children": {"gpu": {"hosts": dict((h, self.hosts[h]) for h in names)}},
        }}
        path = os.path.join(self.workdir, name or "inventory-%d.json" % n)
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


PAGE = os.sysconf("SC_PAGE_SIZE")


def _read(path, mode="r"):
    try:
        with open(path, mode) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


class ControllerMemory(threading.Thread):
    """Samples the controller's memory while ansible-playbook runs: the main process, where
    registered results and hostvars live, and its workers (forks of it, with the same command
    line; the modules they start and containerd are not the controller). Every `interval` s:
    the main process's RSS, and the sum over main + workers of RSS and of PSS (smaps_rollup:
    pages a worker shares with the main process count once, split between them)."""

    def __init__(self, pid, interval=0.1):
        threading.Thread.__init__(self, name="controller-memory")
        self.daemon = True
        self.pid = pid
        self.interval = interval
        self.cmdline = None
        self.peak_main_rss = 0
        self.peak_rss = 0
        self.peak_pss = 0
        self.peak_workers = 0
        self.main_cpu = 0.0
        self.samples = 0
        self._done = threading.Event()

    def _controller_pids(self):
        pids = [self.pid]
        for task in os.listdir("/proc/%d/task" % self.pid):
            text = _read("/proc/%d/task/%s/children" % (self.pid, task)) or ""
            for child in text.split():
                if _read("/proc/%s/cmdline" % child, "rb") == self.cmdline:
                    pids.append(int(child))
        return pids

    @staticmethod
    def _rss(pid):
        statm = _read("/proc/%d/statm" % pid)
        return int(statm.split()[1]) * PAGE if statm else 0

    @staticmethod
    def _pss(pid):
        for line in (_read("/proc/%d/smaps_rollup" % pid) or "").splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
        return 0

    def sample(self):
        try:
            if not self.cmdline or b"ansible-playbook" not in self.cmdline:  # not exec'd yet
                self.cmdline = _read("/proc/%d/cmdline" % self.pid, "rb")
                if not self.cmdline or b"ansible-playbook" not in self.cmdline:
                    return
            pids = self._controller_pids()
        except OSError:
            return  # ended
        main = self._rss(self.pid)
        stat = _read("/proc/%d/stat" % self.pid)
        if stat:
            fields = stat[stat.rindex(")") + 2:].split()
            self.main_cpu = (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))
        self.peak_main_rss = max(self.peak_main_rss, main)
        self.peak_rss = max(self.peak_rss, sum(self._rss(p) for p in pids))
        self.peak_pss = max(self.peak_pss, sum(self._pss(p) for p in pids))
        self.peak_workers = max(self.peak_workers, len(pids) - 1)
        self.samples += 1

    def run(self):
        while not self._done.is_set():
            self.sample()
            self._done.wait(self.interval)

    def stop(self):
        self._done.set()
        self.join()

    def peaks(self):
        return {"main_rss": self.peak_main_rss, "rss": self.peak_rss, "pss": self.peak_pss,
                "workers": self.peak_workers, "samples": self.samples, "main_cpu": self.main_cpu}


class _Finished(object):
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_playbook(ansible_playbook, playbook, inventory, env, check, extra_args=(), memory=None):
    """(Run, wall s, CPU s of everything it started); with memory={} it also gets the
    ControllerMemory peaks."""
    argv = [ansible_playbook, "-i", inventory, playbook] + (["--check"] if check else []) + list(extra_args)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True)
    sampler = None
    if memory is not None:
        sampler = ControllerMemory(proc.pid)
        sampler.start()
    try:
        out, err = proc.communicate(timeout=6 * 3600)
    finally:
        if sampler is not None:
            sampler.stop()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if sampler is not None:
        memory.update(sampler.peaks())
    return Run(_Finished(proc.returncode, out, err)), wall, cpu


def bare_verdict(run, n):
    ok = run.rc == 0 and len(run.recap) == n and all(
        r["ok"] == 1 and r["failed"] == 0 and r["unreachable"] == 0 for r in run.recap.values())
    return ok, "" if ok else "rc=%s, %d hosts in recap" % (run.rc, len(run.recap))


def audit_verdict(run, n, report_dir):
    problems = []
    if run.rc != 0:
        problems.append("rc=%d" % run.rc)
    # localhost runs the last play (a run that judged no host fails)
    nodes = dict((h, r) for h, r in run.recap.items() if h != "localhost")
    if len(nodes) != n or any(r["failed"] or r["unreachable"] for r in run.recap.values()):
        problems.append("recap: %d hosts, failed/unreachable present" % len(nodes))
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


def api_counts(events):
    """{resource: (list calls, all requests)} from the apiserver's audit events; a list call is a list
    of the collection without a continue token. "other" counts requests outside the two resources
    (discovery)."""
    counts = dict((res, [0, 0]) for res in RESOURCES + ("other",))
    for event in events:
        res = (event.get("objectRef") or {}).get("resource")
        res = res if res in RESOURCES else "other"
        counts[res][1] += 1
        if res != "other" and event.get("verb") == "list" and "continue=" not in event.get("requestURI", ""):
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


RESULT_SIZE_PLAYBOOK = """\
---
# The size of what the audit registers per host (gpurt_loaded's packed text), without and with the raw texts.
- name: Size of the registered gather result
  hosts: all
  gather_facts: false
  tasks:
    - name: Gather as the audit does
      gpurt.runtime_gate.containerd_config_info:
        host_vars: true
        on_refused: report
        keep_texts: "{{ gpurt_keep_texts | bool }}"
        packed: true
      register: gpurt_loaded
    - name: Write its size
      ansible.builtin.copy:
        content: "{{ gpurt_loaded.packed | length }}"
        dest: "{{ gpurt_size_dir }}/{{ inventory_hostname }}-{{ gpurt_keep_texts }}"
        mode: "0644"
      delegate_to: localhost
"""


def result_sizes(args, fleet, workdir, env):
    """{(host, keep_texts): characters of the registered gather result's packed text} on a 2.1 and a 1.7 node."""
    playbook = os.path.join(workdir, "result-size.yml")
    with open(playbook, "w") as handle:
        handle.write(RESULT_SIZE_PLAYBOOK)
    size_dir = os.path.join(workdir, "result-sizes")
    shutil.rmtree(size_dir, ignore_errors=True)
    os.makedirs(size_dir)
    inventory = fleet.inventory(2, "unused", os.path.join(workdir, "unused"), name="inventory-result-size.json")
    sizes = {}
    for keep in ("false", "true"):
        run, _wall, _cpu = run_playbook(args.ansible_playbook, playbook, inventory, env, False,
                                        ["-e", "gpurt_keep_texts=%s gpurt_size_dir=%s" % (keep, size_dir)])
        if run.rc != 0:
            print("!!! result size run failed: %r" % run)
            return None
        for host in fleet.names[:2]:
            with open(os.path.join(size_dir, "%s-%s" % (host, keep))) as handle:
                sizes[(host, keep == "true")] = int(handle.read())
    return sizes


def expected_requests(objects, page_size=PAGE_SIZE):
    """Requests of one complete list of `objects` objects, page by page."""
    return max(1, -(-objects // page_size))


def mib(value):
    return value / (1024.0 * 1024.0)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default="10,50,200", help="comma-separated node counts (1000 works; it takes "
                        "about 10 minutes more)")
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
    load_start = os.getloadavg()
    print("workdir %s, forks %d, repeat %d, %d cpu, load %.1f %.1f %.1f, ansible-playbook %s" % (
        workdir, args.forks, args.repeat, os.cpu_count() or 0, load_start[0], load_start[1], load_start[2],
        args.ansible_playbook), flush=True)
    fleet = Fleet(workdir, max(sizes + [2]))
    print("starting a real control plane (etcd, kube-apiserver, kube-scheduler) in %s/cluster" % workdir, flush=True)
    cluster = BenchCluster(workdir)
    kubeconfig = cluster.kubeconfig
    rows = []
    all_ok = True
    loads = [load_start[0]]
    try:
        def measure(n, measured=True):
            made = time.perf_counter()
            cluster.set_nodes(fleet.node_specs[:n])
            report_dir = os.path.join(workdir, "reports-%d" % n)
            inventory = fleet.inventory(n, kubeconfig, report_dir)
            samples = {"bare": [], "audit": [], "bare_cpu": [], "audit_cpu": [], "bare_mem": [], "audit_mem": [],
                       "nodes_s": [time.perf_counter() - made], "report_bytes": []}
            api, verdicts = [], []
            for index in range(args.repeat if measured else 1):
                # bare first on even repeats, audit first on odd ones (drift on a shared machine)
                for kind in (("bare", "audit") if index % 2 == 0 else ("audit", "bare")):
                    memory = {}
                    if kind == "bare":
                        run, wall, cpu = run_playbook(args.ansible_playbook, fleet.bare_playbook, inventory, env, False,
                                                      memory=memory)
                        verdicts.append(("bare",) + bare_verdict(run, n) + (run,))
                    else:
                        shutil.rmtree(report_dir, ignore_errors=True)
                        cluster.reset_requests()
                        run, wall, cpu = run_playbook(args.ansible_playbook, audit_playbook, inventory, env, True,
                                                      memory=memory)
                        api.append(api_counts(cluster.requests()))
                        verdicts.append(("audit",) + audit_verdict(run, n, report_dir) + (run,))
                        # the JSON report is the run's set_stats artifact (gpurt_audit_slice_<id>) as written
                        json_report = os.path.join(report_dir, "audit.json")
                        samples["report_bytes"].append(
                            os.path.getsize(json_report) if os.path.exists(json_report) else 0)
                    samples[kind].append(wall)
                    samples[kind + "_cpu"].append(cpu)
                    samples[kind + "_mem"].append(memory)
                    loads.append(os.getloadavg()[0])
            return samples, api, verdicts, inventory

        if not args.no_warmup:
            print("warm-up: one unmeasured run of each playbook on 2 nodes", flush=True)
            _unused, _unused, verdicts, _unused = measure(2, measured=False)
            for kind, ok, why, run in verdicts:
                if not ok:
                    print("WARM-UP %s FAILED: %s\n%r" % (kind, why, run), flush=True)
        for n in sizes:
            size_started = time.perf_counter()
            samples, api, verdicts, _unused = measure(n)
            med = dict((k, statistics.median(v)) for k, v in samples.items() if not k.endswith("_mem"))
            # memory: the highest peak of the repeats; the main process's CPU: the median
            mem = dict((kind, dict((key, (statistics.median if key == "main_cpu" else max)(m[key] for m in samples[kind + "_mem"]))
                                   for key in samples[kind + "_mem"][0])) for kind in ("bare", "audit"))
            want = {"runtimeclasses": (1, expected_requests(len(RUNTIMECLASSES))), "nodes": (1, expected_requests(n))}
            api_ok = all(a[res] == want[res] for a in api for res in RESOURCES)
            verdict_ok = all(ok for _unused, ok, _unused, _unused in verdicts)
            all_ok = all_ok and api_ok and verdict_ok
            # each repeat's two runs are adjacent in time: their ratio shows the spread the medians hide
            pair_ratios = [a / b for a, b in zip(samples["audit"], samples["bare"])]
            pair_cpu_ratios = [a / b for a, b in zip(samples["audit_cpu"], samples["bare_cpu"])]
            rows.append(dict(n=n, api=api[-1], api_ok=api_ok, verdict_ok=verdict_ok, verdicts=verdicts, mem=mem,
                             pair_ratios=pair_ratios, pair_cpu_ratios=pair_cpu_ratios,
                             size_s=time.perf_counter() - size_started, **med))
            print("  N=%d done in %.0f s (Nodes made in %.0f s): bare %.1f s, audit %.1f s, load %.1f" % (
                n, rows[-1]["size_s"], med["nodes_s"], med["bare"], med["audit"], os.getloadavg()[0]), flush=True)
        sizes_of_result = result_sizes(args, fleet, workdir, env)

        print()
        head = ("N", "bare s", "audit s", "bare ms/host", "audit ms/host", "ratio", "bare CPU s", "audit CPU s",
                "CPU ratio", "RC lists/reqs",
                "Node lists/reqs", "other reqs", "bare MiB", "audit MiB", "verdict")
        table = [head]
        for r in rows:
            table.append((
                str(r["n"]), "%.2f" % r["bare"], "%.2f" % r["audit"],
                "%.0f" % (1000 * r["bare"] / r["n"]), "%.0f" % (1000 * r["audit"] / r["n"]),
                "%.2f" % (r["audit"] / r["bare"]),
                "%.2f" % r["bare_cpu"], "%.2f" % r["audit_cpu"], "%.2f" % (r["audit_cpu"] / r["bare_cpu"]),
                "%d/%d" % r["api"]["runtimeclasses"] + ("" if r["api_ok"] else " !!"),
                "%d/%d" % r["api"]["nodes"] + ("" if r["api_ok"] else " !!"), str(r["api"]["other"][1]),
                "%.0f" % mib(r["mem"]["bare"]["main_rss"]), "%.0f" % mib(r["mem"]["audit"]["main_rss"]),
                ("all %d OK, rc 0" % r["n"]) if r["verdict_ok"] else "UNEXPECTED"))
        widths = [max(len(row[i]) for row in table) for i in range(len(head))]
        for row in table:
            print("  ".join(cell.rjust(w) for cell, w in zip(row, widths)))
        print()
        suffix = " (median of %d)" % args.repeat if args.repeat > 1 else ""
        print("wall times%s; per-host = wall / N; ratio = audit / bare; bare runs without --check; MiB = peak RSS "
              "of the ansible-playbook main process; load average (1 min) %.1f at the start, %.1f-%.1f during, "
              "%.1f now" % (suffix, loads[0], min(loads), max(loads), os.getloadavg()[0]))
        print("controller CPU (user+sys, all processes; of it the ansible-playbook main process): " + ", ".join(
            "N=%d bare %.1f s (%.1f) audit %.1f s (%.1f)" % (r["n"], r["bare_cpu"], r["mem"]["bare"]["main_cpu"], r["audit_cpu"],
                                                             r["mem"]["audit"]["main_cpu"]) for r in rows))
        # CPU moves far less than wall with other load on the machine: each repeat's two ratios, side by side
        for r in rows:
            print("N=%d each repeat's audit/bare: wall %s; CPU %s" % (
                r["n"], " ".join("%.2f" % x for x in r["pair_ratios"]),
                " ".join("%.2f" % x for x in r["pair_cpu_ratios"])))
        print("peak controller memory, ansible-playbook and its workers (sum of PSS; sum of RSS counts the pages "
              "workers share with it once each):")
        for r in rows:
            bare, audit = r["mem"]["bare"], r["mem"]["audit"]
            extra = audit["main_rss"] - bare["main_rss"]
            print("  N=%-4d main RSS bare %6.1f MiB, audit %6.1f MiB (%+.1f MiB, %+.1f KiB per host over bare); main+%d "
                  "workers: PSS bare %6.1f MiB, audit %6.1f MiB; RSS bare %6.1f MiB, audit %6.1f MiB"
                  % (r["n"], mib(bare["main_rss"]), mib(audit["main_rss"]), mib(extra), extra / 1024.0 / r["n"],
                     audit["workers"], mib(bare["pss"]), mib(audit["pss"]), mib(bare["rss"]), mib(audit["rss"])))
        for a, b in zip(rows, rows[1:]):
            dn = b["n"] - a["n"]
            print("marginal cost per extra host, N=%d->%d: bare %.0f ms, audit %.0f ms; main RSS bare %.1f KiB, "
                  "audit %.1f KiB" % (a["n"], b["n"], 1000 * (b["bare"] - a["bare"]) / dn, 1000 * (b["audit"] - a["audit"]) / dn,
                                      (b["mem"]["bare"]["main_rss"] - a["mem"]["bare"]["main_rss"]) / 1024.0 / dn,
                                      (b["mem"]["audit"]["main_rss"] - a["mem"]["audit"]["main_rss"]) / 1024.0 / dn))
        print("time per size (Nodes made, every repeat of both playbooks): " + ", ".join(
            "N=%d %.0f s" % (r["n"], r["size_s"]) for r in rows))
        print("JSON report = the run's set_stats artifact (gpurt_audit_slice_<id>), held by the main process: "
              + ", ".join("N=%d %.0f KiB (%.2f KiB per host)"
                          % (r["n"], r["report_bytes"] / 1024.0, r["report_bytes"] / 1024.0 / r["n"]) for r in rows))
        if sizes_of_result:
            print("registered gather result per host (gpurt_loaded's packed text): " + ", ".join(
                "%s %.1f KiB (%.1f KiB with keep_texts=true)" % (
                    fleet.versions[host], sizes_of_result[(host, False)] / 1024.0, sizes_of_result[(host, True)] / 1024.0)
                for host in fleet.names[:2]))
        for r in rows:
            if not r["api_ok"]:
                print("!!! API REQUESTS NOT 1 LIST PER RESOURCE at N=%d: %r" % (r["n"], r["api"]))
            for kind, ok, why, run in r["verdicts"]:
                if not ok:
                    print("!!! UNEXPECTED %s VERDICT at N=%d: %s\n%s" % (kind, r["n"], why, run.text[-3000:]))
        print("goal: one list per resource at every N: %s" % ("MET" if all(r["api_ok"] for r in rows) else "NOT MET"))
        for r in rows:
            if r["n"] in TARGETS:
                ratio = r["audit"] / r["bare"]
                cpu_ratio = r["audit_cpu"] / r["bare_cpu"]
                print("goal: audit <= %.2fx bare at N=%d: %s (%.2fx; each repeat's audit/bare: %s; CPU %.2fx, "
                      "each repeat's: %s)" % (
                          TARGETS[r["n"]], r["n"], "MET" if ratio <= TARGETS[r["n"]] else "NOT MET", ratio,
                          " ".join("%.2f" % x for x in r["pair_ratios"]), cpu_ratio,
                          " ".join("%.2f" % x for x in r["pair_cpu_ratios"])))

        base = [r for r in rows if r["n"] == 200]
        for r in rows:
            if base and r["n"] > 200:
                growth = (r["audit"] / r["n"]) / (base[0]["audit"] / 200)
                print("goal: audit time per host at N=%d <= %.2fx N=200's: %s (%.2fx: %.0f against %.0f ms/host)" % (
                    r["n"], PER_HOST_GROWTH, "MET" if growth <= PER_HOST_GROWTH else "NOT MET", growth,
                    1000 * r["audit"] / r["n"], 1000 * base[0]["audit"] / 200))
        peak = max(rows, key=lambda r: r["n"])
        peak_rss = mib(peak["mem"]["audit"]["main_rss"])
        print("goal: audit main process RSS < %d MiB at N=%d: %s (%.0f MiB)" % (
            MAX_MAIN_RSS_MIB, peak["n"], "MET" if peak_rss < MAX_MAIN_RSS_MIB else "NOT MET", peak_rss))

        if args.profile:
            big = max(rows, key=lambda r: r["n"])
            n = big["n"]
            cluster.set_nodes(fleet.node_specs[:n])
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
        cluster.stop()
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print("kept %s" % workdir)
    print("total benchmark time %.0f s" % (time.perf_counter() - started))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())

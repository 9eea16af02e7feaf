"""Run the real ansible-playbook / ansible CLIs against this checkout's collection."""
import json
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# GPURT_ANSIBLE_BIN runs the playbooks with another controller (make test-oldest: ansible-core 2.16 on Python 3.10).
BIN = os.environ.get("GPURT_ANSIBLE_BIN") or os.path.dirname(sys.executable)
# Its sitecustomize keeps the bytecode of what the modules import from their AnsiballZ zip (it says why).
ZIP_BYTECODE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zip_bytecode")
_RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+"
                    r"skipped=(\d+)\s+rescued=(\d+)\s+ignored=(\d+)", re.MULTILINE)


class Run(object):
    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.recap = dict(
            (m.group(1), dict(zip(("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored"),
                                  (int(g) for g in m.groups()[1:]))))
            for m in _RECAP.finditer(self.out))

    @property
    def text(self):
        return self.out + self.err

    @property
    def flat(self):
        """The run's output with the callback's line wrapping undone."""
        return " ".join(self.text.split())

    def said(self, host):
        """The words of host's result lines ("<status>: [host]" or "[host -> ...]", with the indented JSON that
        continues them), escaped newlines and the callback's wrapping undone: what the run said of that host."""
        mine, lines = False, []
        for line in self.text.replace("\\n", " ").splitlines():
            if line and not line[0].isspace() and not line.startswith("}"):
                mine = re.match(r"^[a-z]+: \[%s[\] ]" % re.escape(host), line) is not None
            if mine:
                lines.append(line)
        return " ".join(" ".join(lines).split())

    def changed(self):
        return sum(h["changed"] for h in self.recap.values())

    def gate_lines(self):
        """The plain lines the gpurt.runtime_gate.summary callback prints after the recap."""
        marker = self.out.rfind("RUNTIME GATE ")
        if marker < 0:
            return []
        return [l for l in self.out[marker:].splitlines()[1:] if l.strip()]

    def __repr__(self):
        return "<Run rc=%s>\n%s\n%s" % (self.rc, self.out[-6000:], self.err[-3000:])


def env(extra=None):
    environ = dict(os.environ)
    environ.update(
        ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".collections"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_DEPRECATION_WARNINGS="0",
        ANSIBLE_LOCAL_TEMP=os.environ.get("ANSIBLE_LOCAL_TEMP", "/tmp/gpurt-ansible-local"),
        PATH=BIN + os.pathsep + os.environ.get("PATH", ""),
        PYTHONPATH=os.pathsep.join([ZIP_BYTECODE] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
        GPURT_TEST_BYTECODE_CACHE=os.environ.get("GPURT_TEST_BYTECODE_CACHE", "/tmp/gpurt-zip-bytecode"),
    )
    environ.update(extra or {})
    return environ


def playbook(playbook_path, inventory, extra_vars=None, check=False, diff=False, args=(), extra_env=None, timeout=600):
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, playbook_path]
    if check:
        argv.append("--check")
    if diff:
        argv.append("--diff")
    if extra_vars:
        argv += ["-e", json.dumps(extra_vars)]
    argv += list(args)
    proc = subprocess.run(argv, cwd=REPO, env=env(extra_env), check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=timeout)
    return Run(proc)


def write_inventory(path, hosts, group_vars=None, groups=None):
    """An inventory of local-connection nodes: hosts = {name: vars}; groups = {group: [names]}."""
    children = dict((g, {"hosts": dict((h, {}) for h in members)}) for g, members in (groups or {}).items())
    all_vars = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    all_vars.update(group_vars or {})
    doc = {"all": {"vars": all_vars, "hosts": hosts, "children": children}}
    with open(path, "w") as handle:
        json.dump(doc, handle, indent=2)
    return path

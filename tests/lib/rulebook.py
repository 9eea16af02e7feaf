"""Run the real ansible-rulebook with this checkout's collection (its rulebook and event source), as a
person would: `ansible-rulebook -r gpurt.runtime_gate.runtime_gate -i INVENTORY --vars FILE`, its output in
a log file, stopped by its PID. DOCUMENTED is the command docs/continuous.md shows: Rulebook(command=DOCUMENTED)
runs it exactly as written, in a directory holding the inventory and the vars file under the names it gives."""
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time

from tests.lib import ansible_run

RULEBOOK = "gpurt.runtime_gate.runtime_gate"
CONTINUOUS = os.path.join(ansible_run.REPO, "docs", "continuous.md")


def documented_commands(path=CONTINUOUS):
    """The ansible-rulebook command lines of the doc's sh blocks."""
    with open(path) as handle:
        blocks = re.findall(r"^```sh\n(.*?)^```", handle.read(), flags=re.S | re.M)
    return [line.strip() for block in blocks for line in block.splitlines()
            if line.strip().startswith("ansible-rulebook")]


DOCUMENTED = (documented_commands() or [None])[0]


class Rulebook(object):
    def __init__(self, workdir, inventory, variables, verbosity=1, rulebook=RULEBOOK, extra_env=None, command=None):
        """command: a command line run as written (through PATH, in workdir) instead of the one made from
        verbosity and rulebook; INVENTORY (a file) is copied into the directory its -i names, the variables
        are written to the file its --vars names."""
        self.workdir = str(workdir)
        self.inventory = inventory
        self.variables = variables
        self.verbosity = verbosity
        self.rulebook = rulebook
        self.command = command
        self.log_path = os.path.join(self.workdir, "rulebook.log")
        self.vars_path = os.path.join(self.workdir, "rulebook-vars.json")
        if command:
            words = shlex.split(command)
            self.vars_path = os.path.join(self.workdir, words[words.index("--vars") + 1])
            inventory_dir = os.path.join(self.workdir, words[words.index("-i") + 1])
            os.makedirs(inventory_dir, exist_ok=True)
            shutil.copy(inventory, os.path.join(inventory_dir, os.path.basename(inventory)))
        self.extra_env = extra_env
        self.proc = None

    def argv(self):
        if self.command:
            return shlex.split(self.command)
        argv = [os.path.join(ansible_run.BIN, "ansible-rulebook"), "-r", self.rulebook, "-i", self.inventory,
                "--vars", self.vars_path]
        if self.verbosity:
            argv.append("-" + "v" * self.verbosity)
        return argv

    def start(self, wait_for="watching the [0-9]* Nodes of", timeout=120):
        os.makedirs(self.workdir, exist_ok=True)
        with open(self.vars_path, "w") as handle:
            json.dump(self.variables, handle)  # JSON is YAML
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.argv(), cwd=self.workdir, env=ansible_run.env(self.extra_env), stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        if wait_for:
            self.wait_for(wait_for, timeout)
        return self

    def log(self):
        try:
            with open(self.log_path, "rb") as handle:
                return handle.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def count(self, pattern):
        return len(re.findall(pattern, self.log()))

    def wait_for(self, pattern, timeout=120, count=1):
        """Until PATTERN (a regular expression) appears COUNT times in the log; fails with the log's tail."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.count(pattern) >= count:
                return
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError("ansible-rulebook exited with %s before %r appeared:\n%s" % (
                    self.proc.returncode, pattern, self.log()[-6000:]))
            time.sleep(0.2)
        raise AssertionError("%r did not appear %d time(s) within %d s:\n%s" % (
            pattern, count, timeout, self.log()[-6000:]))

    def stop(self, timeout=20):
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout)

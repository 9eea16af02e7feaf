"""A real containerd daemon for a test, on a scratch socket: root, state, the gRPC and ttrpc
sockets all under a short temporary directory (unix socket paths are limited to 108 bytes),
started without systemd as ../shared/crictl/README.md describes, and stopped by its PID.

    with Daemon(binary, body) as daemon:      # body: the config's CRI part; {root} as in Node
        daemon.endpoint                       # unix://.../containerd.sock for crictl
"""
import os
import shutil
import signal
import subprocess
import tempfile
import time

# Stands in for `systemctl restart containerd` (a role's containerd_runtime_restart_command) on a scratch
# daemon whose run dir holds its pid and socket: stop it by its pid, start it again, wait for the socket.
RESTART = """#!/bin/sh
set -e
pid=$(cat "{run}/pid" 2>/dev/null || true)
if [ -n "$pid" ] && [ "$pid" -gt 1 ]; then
  kill "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
fi
rm -f "{run}/c.sock"
setsid "{binary}" --config "{config}" >>"{run}/daemon.log" 2>&1 < /dev/null &
echo $! > "{run}/pid"
i=0; while [ ! -S "{run}/c.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
"""


HEAD = '''root = "{dir}/root"
state = "{dir}/state"

[grpc]
  address = "{dir}/containerd.sock"

[ttrpc]
  address = "{dir}/containerd.sock.ttrpc"

'''


class DaemonError(Exception):
    pass


class Daemon(object):
    def __init__(self, binary, body, version_line="version = 2", config_path=None, env=None):
        self.binary = binary
        self.env = env  # the daemon's environment (default: the test's)
        self.body = body
        self.version_line = version_line
        self.dir = tempfile.mkdtemp(prefix="gpurt-d-", dir="/tmp")
        self.config_path = config_path or os.path.join(self.dir, "config.toml")
        self.socket = os.path.join(self.dir, "containerd.sock")
        self.endpoint = "unix://" + self.socket
        self.proc = None
        self.log = os.path.join(self.dir, "containerd.log")

    def config_text(self, body=None):
        return "%s\n%s%s" % (self.version_line, HEAD.format(dir=self.dir), self.body if body is None else body)

    def write_config(self, body=None):
        with open(self.config_path, "w") as handle:
            handle.write(self.config_text(body))

    def start(self, timeout=30):
        self.write_config()
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([self.binary, "--config", self.config_path], stdout=log, stderr=log,
                                         cwd="/", start_new_session=True, env=self.env)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise DaemonError("containerd exited %s:\n%s" % (self.proc.returncode, self.log_text()[-3000:]))
            if os.path.exists(self.socket):
                time.sleep(0.5)  # the gRPC server and its plugins come up right after the socket
                return self
            time.sleep(0.1)
        self.stop()
        raise DaemonError("containerd did not create %s within %d s:\n%s" % (self.socket, timeout, self.log_text()[-3000:]))

    def log_text(self):
        try:
            with open(self.log, "rb") as handle:
                return handle.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        return False

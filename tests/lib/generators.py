"""Stand-ins for what real generators do when containerd starts, run by the tests as the role's restart
command (containerd_runtime_restart_command): the generator rewrites its output, then containerd starts.

    python3 tests/lib/generators.py microk8s NODE_ROOT [CONTAINERD SCRATCH_DIR]
    python3 tests/lib/generators.py k3s NODE_ROOT

k3s: render var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl over config.toml the way k3s does
at every start when the template exists. The stand-in renders only a template without Go directives
(which k3s' text/template renders unchanged) and fails on one with '{{'.

microk8s: render var/snap/microk8s/current/args/containerd-template.toml over args/containerd.toml the
way the snap's run-containerd-with-args does (the same ${...} substitutions). With CONTAINERD and a
short SCRATCH_DIR, also (re)start that real containerd on the rendered file with root, state and socket
under SCRATCH_DIR, as the snap's args file passes them, and wait for its socket (stopped by the pid
file the previous start left there). Every call appends a line to NODE_ROOT/restarts.log.
"""
import os
import signal
import subprocess
import sys
import time

MICROK8S_VALUES = {"${RUNTIME}": "runc", "${RUNTIME_TYPE}": "io.containerd.runc.v2", "${SNAPSHOTTER}": "overlayfs"}


def render_microk8s(root):
    args = os.path.join(root, "var/snap/microk8s/current/args")
    data_dir = "/var/snap/microk8s/" + os.path.basename(os.path.realpath(os.path.join(root, "var/snap/microk8s/current")))
    with open(os.path.join(args, "containerd-template.toml")) as handle:
        text = handle.read()
    for placeholder, value in dict(MICROK8S_VALUES, **{"${SNAP_DATA}": data_dir}).items():
        text = text.replace(placeholder, value)
    with open(os.path.join(args, "containerd.toml"), "w") as handle:
        handle.write(text)
    return os.path.join(args, "containerd.toml")


def stop_by_pid_file(pid_file):
    """Stop the daemon whose pid the file holds (SIGTERM, then wait up to 10 s); nothing when there is none."""
    if not os.path.exists(pid_file):
        return
    with open(pid_file) as handle:
        pid = int(handle.read().strip() or 0)
    if pid > 1:
        try:
            os.kill(pid, signal.SIGTERM)
            for _unused in range(100):
                os.kill(pid, 0)
                time.sleep(0.1)
        except OSError:
            pass


def restart_daemon(binary, config, scratch):
    pid_file = os.path.join(scratch, "pid")
    stop_by_pid_file(pid_file)
    socket = os.path.join(scratch, "containerd.sock")
    if os.path.exists(socket):
        os.unlink(socket)
    with open(os.path.join(scratch, "daemon.log"), "ab") as log:
        proc = subprocess.Popen([binary, "--config", config, "--root", os.path.join(scratch, "root"),
                                 "--state", os.path.join(scratch, "state"), "--address", socket],
                                stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd="/", start_new_session=True)
    with open(pid_file, "w") as handle:
        handle.write(str(proc.pid))
    for _unused in range(300):
        if os.path.exists(socket) or proc.poll() is not None:
            break
        time.sleep(0.1)
    time.sleep(0.5)


def render_k3s(root):
    directory = os.path.join(root, "var/lib/rancher/k3s/agent/etc/containerd")
    template = os.path.join(directory, "config.toml.tmpl")
    if not os.path.exists(template):
        return os.path.join(directory, "config.toml")  # the built-in template: the file as k3s wrote it
    with open(template) as handle:
        text = handle.read()
    if "{{" in text:
        sys.exit("the k3s stand-in renders only templates without Go directives: %s" % template)
    with open(os.path.join(directory, "config.toml"), "w") as handle:
        handle.write(text)
    return os.path.join(directory, "config.toml")


def main(argv):
    kind, root = argv[0], argv[1]
    renderers = {"microk8s": render_microk8s, "k3s": render_k3s}
    if kind not in renderers:
        sys.exit("unknown generator %r" % kind)
    config = renderers[kind](root)
    if len(argv) > 3:
        restart_daemon(argv[2], config, argv[3])
    with open(os.path.join(root, "restarts.log"), "a") as handle:
        handle.write("restarted\n")


if __name__ == "__main__":
    main(sys.argv[1:])

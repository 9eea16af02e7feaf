"""The containerd config shapes of real tools in tests/fixtures/shapes, laid out on a test node."""
import json
import os
import stat
import subprocess

from tests.lib.nodes import Node

SHAPES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "shapes")


class MountUnavailable(Exception):
    """The shape needs real mounts (read-only binds, tmpfs) and this process cannot make them."""


def meta(name):
    with open(os.path.join(SHAPES, name, "shape.json")) as handle:
        return json.load(handle)


def install(base, node_name, shape, version, mounts=False):
    """A Node rooted under base with the shape's files ({root} filled in, encodings applied),
    its runtime binaries as executables, its host files, symlinks and executable scripts.

    mounts=True also makes the shape's "mounts" real: each "tmpfs" dir gets a tmpfs before the
    files are written, each "read-only" dir a read-only bind mount after; MountUnavailable when
    this process cannot mount (not root). Undo them with unmount(node)."""
    info = meta(shape)
    node = Node(base, node_name, version)
    node.mounted = []
    wanted = info.get("mounts") or []
    if mounts and wanted:
        _check_can_mount()
        for entry in wanted:
            if entry["kind"] == "tmpfs":
                _mount(node, ["-t", "tmpfs", "-o", "mode=0755", "tmpfs"], entry["path"])
    try:
        for rel in info["files"]:
            with open(os.path.join(SHAPES, shape, rel), encoding="utf-8") as handle:
                text = handle.read().replace("{root}", node.root)
            target = node.path(rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(text.encode((info.get("encodings") or {}).get(rel, "utf-8")))
        for rel in info.get("executables") or []:
            os.chmod(node.path(rel), 0o755)
        for rel in info.get("runtime_binaries") or []:
            node.write(rel, "#!/bin/sh\nexit 0\n", executable=True)
        for rel in info.get("host_files") or []:
            node.write(rel, "")
        for rel, target in sorted((info.get("symlinks") or {}).items()):
            os.makedirs(os.path.dirname(node.path(rel)), exist_ok=True)
            os.symlink(target, node.path(rel))
        if mounts:
            for entry in wanted:
                if entry["kind"] == "read-only":
                    _mount(node, ["--bind"], entry["path"])
                    subprocess.run(["mount", "-o", "remount,bind,ro", node.path(entry["path"])], check=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except BaseException:
        unmount(node)
        raise
    node.config_rel = info.get("config", "etc/containerd/config.toml")
    node.kubelet_rel = info.get("kubelet_config", "var/lib/kubelet/config.yaml")
    return node


def _check_can_mount():
    if os.geteuid() != 0:
        raise MountUnavailable("the shape's read-only and tmpfs mounts need root (mount(8))")


def _mount(node, args, rel):
    target = node.path(rel)
    os.makedirs(target, exist_ok=True)
    source = [] if args and args[0] == "-t" else [target]
    proc = subprocess.run(["mount"] + args + source + [target], check=False, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)
    if proc.returncode != 0:
        raise MountUnavailable("mount %s %s failed: %s" % (" ".join(args), target, proc.stderr.strip()))
    node.mounted.append(target)


def unmount(node):
    """Undo install(mounts=True), innermost first; lazily when a mount is busy."""
    for target in reversed(getattr(node, "mounted", [])):
        if subprocess.run(["umount", target], check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE).returncode:
            subprocess.run(["umount", "-l", target], check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    node.mounted = []


def tree(root):
    """{path: (mode, bytes)} of every file under root: a run that changes no byte leaves it equal."""
    out = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                out[path] = (stat.S_IMODE(os.lstat(path).st_mode), handle.read())
    return out

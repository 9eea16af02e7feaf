"""The containerd config shapes of real tools in tests/fixtures/shapes, laid out on a test node."""
import json
import os
import stat

from tests.lib.nodes import Node

SHAPES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "shapes")


def meta(name):
    with open(os.path.join(SHAPES, name, "shape.json")) as handle:
        return json.load(handle)


def install(base, node_name, shape, version):
    """A Node rooted under base with the shape's files ({root} filled in, encodings applied),
    its runtime binaries as executables and its host files."""
    info = meta(shape)
    node = Node(base, node_name, version)
    for rel in info["files"]:
        with open(os.path.join(SHAPES, shape, rel), encoding="utf-8") as handle:
            text = handle.read().replace("{root}", node.root)
        target = node.path(rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(text.encode((info.get("encodings") or {}).get(rel, "utf-8")))
    for rel in info.get("runtime_binaries") or []:
        node.write(rel, "#!/bin/sh\nexit 0\n", executable=True)
    for rel in info.get("host_files") or []:
        node.write(rel, "")
    node.config_rel = info.get("config", "etc/containerd/config.toml")
    node.kubelet_rel = info.get("kubelet_config", "var/lib/kubelet/config.yaml")
    return node


def tree(root):
    """{path: (mode, bytes)} of every file under root: a run that changes no byte leaves it equal."""
    out = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                out[path] = (stat.S_IMODE(os.lstat(path).st_mode), handle.read())
    return out

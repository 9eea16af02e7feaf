"""A loaded config, and the dump of the same config with a fragment imported, for the unit tests of a
fragment's load evidence (test_fragment_carry.py) and of the orphan_dropin check (test_checks_files.py)."""
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec

V3 = shapes.CRI_PLUGIN_V3
LOADED = {"version": 3, "imports": ["/etc/cri/conf.d/cri.toml"], "plugins": {V3: {"containerd": {"runtimes": {
    "runc": {"runtime_type": "io.containerd.runc.v2"},
    "nvidia": {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": "/usr/bin/nv"}}}}},
    "io.containerd.cri.v1.images": {"snapshotter": "overlayfs"}}}


def parse(text):
    return toml_codec.loads(text, "dump")


def with_fragment(**changes):
    doc = parse(toml_codec.dumps(LOADED))
    doc["imports"] = ["/etc/cri/conf.d/cri.toml", "<scratch>/fragment.toml"]
    for dotted, value in changes.items():
        node = doc
        keys = dotted.split("/")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return doc

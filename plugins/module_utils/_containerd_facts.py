# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Facts about containerd that the node side and the controller side share, defined once: the
runc-type runtime types, the default paths, and the options of a gather. Node side (Python 3.8+,
standard library only); plugin_utils imports them from here."""

import os

# runtime_types that containerd runs with its own runc shim: they take runc's options (SystemdCgroup,
# BinaryName) and need no shim installed apart.
RUNC_TYPES = ("io.containerd.runc.v2", "io.containerd.runc.v1", "io.containerd.runtime.v1.linux")
DEFAULT_RUNTIME_TYPE = RUNC_TYPES[0]

CONFIG_PATH = "/etc/containerd/config.toml"
KUBELET_CONFIG_PATH = "/var/lib/kubelet/config.yaml"
CDI_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
CRI_ENDPOINT = "unix:///run/containerd/containerd.sock"
BACKUP_DIR = "/var/backups/gpurt-runtime-gate"
# The role's own state on the node (the restart marker, _restart_marker.py), under the node's root.
STATE_DIR = "/var/lib/gpurt-runtime-gate"
# Drop-in directories next to the main config: conf.d, where containerd's default imports read and
# the remediation writes, and config.d, where a released nvidia-ctk wrote its drop-in.
DROPIN_DIR_NAMES = ("conf.d", "config.d")
DROPIN_DIR = os.path.join(os.path.dirname(CONFIG_PATH), DROPIN_DIR_NAMES[0])
# Where known tools put drop-ins whatever config a node runs with: containerd 2.2+'s default import and
# nvidia-ctk / the GPU Operator (conf.d), a released nvidia-ctk (config.d), k0s (containerd.d).
KNOWN_DROPIN_DIRS = ("/etc/containerd/conf.d", "/etc/containerd/config.d", "/etc/k0s/containerd.d")


def dropin_dirs(config_path):
    """The drop-in directories next to config_path, as the gather lists them by default."""
    return [os.path.join(os.path.dirname(config_path), name) for name in DROPIN_DIR_NAMES]


def own_dropin_dir(config_path):
    """The directory the remediation writes its drop-ins to by default."""
    return dropin_dirs(config_path)[0]


# The options of a gather (containerd_config_info and register_runtimes_node's gather step).
GATHER_SPEC = dict(
    containerd_bin=dict(type="str", default="containerd"),
    config_path=dict(type="path", default=CONFIG_PATH),
    dropin_dirs=dict(type="list", elements="path"),
    kubelet_config_path=dict(type="path", default=KUBELET_CONFIG_PATH),
    cdi_spec_dirs=dict(type="list", elements="path"),
    timeout=dict(type="int", default=30),
    max_file_bytes=dict(type="int", default=1048576),
    max_dump_bytes=dict(type="int", default=67108864),
    max_memory_mb=dict(type="int", default=1024),
    crictl_bin=dict(type="str", default="crictl"),
    cri_endpoint=dict(type="str"),
    # Where the node's / is ('/' unless the node is mounted elsewhere, a test node's directory), and the
    # role's state directory on the node (read under that root): a restart marker there is a pending restart.
    host_root=dict(type="path", default="/"),
    state_dir=dict(type="path", default=STATE_DIR),
)

"""Fake nodes for the tests: a directory per node that holds its /etc/containerd (and kubelet
config, CDI specs, runtime binaries), loaded by a real containerd binary."""
import os
import stat

from tests.lib import containerd_bins


def node_binary(version):
    """The real containerd of that release (1.6 ... 2.4)."""
    return containerd_bins.binary(version)


class Node(object):
    def __init__(self, base, name, version):
        self.name = name
        self.version = version
        self.root = os.path.join(str(base), name)
        self.binary = node_binary(version)
        os.makedirs(self.path("etc/containerd"), exist_ok=True)

    def path(self, rel):
        return os.path.join(self.root, rel.lstrip("/"))

    @property
    def config_path(self):
        return self.path("etc/containerd/config.toml")

    @property
    def kubelet_config_path(self):
        return self.path("var/lib/kubelet/config.yaml")

    def write(self, rel, text, executable=False):
        """Write a file under the node root; '{root}' in the text becomes the node root."""
        target = self.path(rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as handle:
            handle.write(text.replace("{root}", self.root))
        if executable:
            os.chmod(target, os.stat(target).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        return target

    def runtime_binary(self, rel="usr/bin/nvidia-container-runtime"):
        return self.write(rel, "#!/bin/sh\nexit 0\n", executable=True)

    def dump(self):
        return containerd_bins.dump(self.binary, self.config_path)

    def host_vars(self, **extra):
        facts = {
            "gpurt_containerd_bin": self.binary,
            "gpurt_containerd_config_path": self.config_path,
            "gpurt_kubelet_config_path": self.kubelet_config_path,
            # The role's state (its restart marker) inside the node, not in this machine's /var/lib.
            "gpurt_state_dir": self.path("var/lib/gpurt-runtime-gate"),
        }
        facts.update(extra)
        return facts

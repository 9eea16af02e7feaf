"""The real containerd binaries the tests load configs with, and the real crictl.

1.6, 1.7 and 2.1 are Debian's (tools/fetch-containerd): $GPURT_CONTAINERD_DIR/<v>/containerd, else
<repo>/.cache/containerd/<v>/containerd, fetched there on first use when absent. 2.2, 2.3, 2.4 and
crictl are built from the Go module proxy by tools/build-go-binaries (`make setup`) and linked in
$GPURT_BIN_DIR, else <repo>/.cache/bin, as containerd-<v>/containerd (a daemon's argv[0] must be named
containerd, as on a node: the gather finds it so) and crictl.
"""
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEBIAN_VERSIONS = ("1.6", "1.7", "2.1")
GO_VERSIONS = ("2.2", "2.3", "2.4")
# Every release the audit, crosscheck and remediation tests run on.
ALL_VERSIONS = DEBIAN_VERSIONS + GO_VERSIONS
# The last release that refuses a drop-in whose version is above the root file's (measured: 2.3.7
# and 2.4.2 load it; 2.3.5's source has no such check): tests of that refusal name it.
REFUSING_RELEASE = "2.3.4"
# Kept for the callers that mean the Debian three (make_node's default fixture, the benchmarks).
VERSIONS = DEBIAN_VERSIONS


class NotBuilt(Exception):
    pass


def binaries_dir():
    return os.environ.get("GPURT_CONTAINERD_DIR") or os.path.join(REPO, ".cache", "containerd")


def go_bin_dir():
    return os.environ.get("GPURT_BIN_DIR") or os.path.join(REPO, ".cache", "bin")


def ensure_binaries():
    """{version: path} of the Debian three; fetches them once when they are missing."""
    directory = binaries_dir()
    paths = dict((v, os.path.join(directory, v, "containerd")) for v in DEBIAN_VERSIONS)
    if not all(os.access(p, os.X_OK) for p in paths.values()):
        subprocess.run([os.path.join(REPO, "tools", "fetch-containerd"), directory], check=True)
    return paths


def _built(name):
    path = os.path.join(go_bin_dir(), name)
    if not os.access(path, os.X_OK):
        raise NotBuilt("%s is not built in %s: run `make setup` (tools/build-go-binaries builds it from the "
                       "Go module proxy)" % (name, go_bin_dir()))
    return path


def binary(version):
    """The real containerd of that release ('1.6' ... '2.4'); NotBuilt when setup did not build it."""
    if version in GO_VERSIONS or version == REFUSING_RELEASE:
        return _built(os.path.join("containerd-" + version, "containerd"))
    return ensure_binaries()[version]


def all_binaries():
    """{version: path} of all six releases."""
    return dict((v, binary(v)) for v in ALL_VERSIONS)


def crictl_binary():
    return _built("crictl")


def full_version(binary_path):
    """'2.3.7' from `containerd --version` (Debian's print e.g. '1.7.24~ds1')."""
    out = subprocess.run([binary_path, "--version"], check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout.split()
    return out[2].lstrip("v").split("~")[0].split("+")[0]


def dump(binary, config_path, cwd="/"):
    """(returncode, stdout, stderr) of `containerd --config FILE config dump`."""
    proc = subprocess.run([binary, "--config", config_path, "config", "dump"], cwd=cwd,
                          check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr

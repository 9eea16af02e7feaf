"""The real containerd binaries the tests load configs with (1.6, 1.7 and 2.1; 2.3 and crictl
when ../shared provides them).

Found in $GPURT_CONTAINERD_DIR, else <repo>/.cache/containerd (which `make setup` fills with
tools/fetch-containerd and tools/fetch-shared); 1.6/1.7/2.1 are fetched there on first use when absent.
"""
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VERSIONS = ("1.6", "1.7", "2.1")
# Built from upstream tags and kept in ../shared: no Debian suite ships them.
SHARED_VERSIONS = ("2.3",)
SKIP_SHARED = ("containerd 2.3.4 is not unpacked: ../shared is absent here "
               "(tools/fetch-shared unpacks it from ../shared/containerd/2.3.4)")
SKIP_CRICTL = ("crictl 1.36.0 is not unpacked: ../shared is absent here "
               "(tools/fetch-shared unpacks it from ../shared/crictl/1.36.0)")


def binaries_dir():
    return os.environ.get("GPURT_CONTAINERD_DIR") or os.path.join(REPO, ".cache", "containerd")


def ensure_binaries():
    """{version: path}; fetches the binaries once when they are missing."""
    directory = binaries_dir()
    paths = dict((v, os.path.join(directory, v, "containerd")) for v in VERSIONS)
    if not all(os.access(p, os.X_OK) for p in paths.values()):
        subprocess.run([os.path.join(REPO, "tools", "fetch-containerd"), directory], check=True)
    return paths


def _cache_root():
    """Where tools/fetch-shared unpacks: the parent of the containerd dir (GPURT_CACHE)."""
    return os.path.dirname(os.path.realpath(binaries_dir()))


def _unpacked(path):
    if not os.access(path, os.X_OK):
        subprocess.run([os.path.join(REPO, "tools", "fetch-shared"), _cache_root()], check=False,
                       stdout=subprocess.DEVNULL)
    return path if os.access(path, os.X_OK) else None


def shared_binary(version):
    """Path of a containerd from ../shared (e.g. '2.3'), unpacked once; None when ../shared is absent."""
    return _unpacked(os.path.join(_cache_root(), "containerd", version, "containerd"))


def crictl_binary():
    """Path of the real crictl 1.36.0; None when ../shared is absent."""
    return _unpacked(os.path.join(_cache_root(), "crictl", "1.36", "crictl"))


def dump(binary, config_path, cwd="/"):
    """(returncode, stdout, stderr) of `containerd --config FILE config dump`."""
    proc = subprocess.run([binary, "--config", config_path, "config", "dump"], cwd=cwd,
                          check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr

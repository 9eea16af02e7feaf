"""The real containerd binaries the tests load configs with (1.6, 1.7 and 2.1).

Found in $GPURT_CONTAINERD_DIR, else <repo>/.cache/containerd (which `make setup` fills with
tools/fetch-containerd); fetched there on first use when absent.
"""
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VERSIONS = ("1.6", "1.7", "2.1")


def binaries_dir():
    return os.environ.get("GPURT_CONTAINERD_DIR") or os.path.join(REPO, ".cache", "containerd")


def ensure_binaries():
    """{version: path}; fetches the binaries once when they are missing."""
    directory = binaries_dir()
    paths = dict((v, os.path.join(directory, v, "containerd")) for v in VERSIONS)
    if not all(os.access(p, os.X_OK) for p in paths.values()):
        subprocess.run([os.path.join(REPO, "tools", "fetch-containerd"), directory], check=True)
    return paths


def dump(binary, config_path, cwd="/"):
    """(returncode, stdout, stderr) of `containerd --config FILE config dump`."""
    proc = subprocess.run([binary, "--config", config_path, "config", "dump"], cwd=cwd,
                          check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr

"""A fresh checkout of this repository for a test: its tracked files copied, nothing a run made here
(no .collections link, no venv, no caches, no .demo)."""
import os
import shutil
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def copy(dest):
    """Copy the tracked files (symlinks as links, modes and times kept) into dest; return its path."""
    listed = subprocess.run(["git", "-C", REPO, "ls-files", "-z"], check=True, stdout=subprocess.PIPE).stdout
    for rel in [p for p in listed.decode().split("\0") if p]:
        source = os.path.join(REPO, rel)
        if os.path.lexists(source):
            target = os.path.join(str(dest), rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
    return str(dest)

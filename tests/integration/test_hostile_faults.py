"""Hostile-input suite, class "faults while writing": a conf.d that is a file or a dangling
symlink, a full disk, two runs at once. Each through the real role (register_runtimes) on a node
loaded by the real containerd: afterwards the config still loads, nothing the node had is lost,
and the message says what happened (never "None")."""
import os
import re
import subprocess
import threading

import pytest

from tests.integration.test_remediation_hostile import one_node, run

pytestmark = pytest.mark.integration


def loads(node):
    rc, out, err = node.dump()
    assert rc == 0, err
    return out


def lost(before, after):
    """Files the node had that are gone or changed (backups and our own drop-in may be new)."""
    return sorted(p for p, v in before.items() if after.get(p) != v)


def assert_clear(text):
    assert "Traceback" not in text
    assert ": None" not in text and "in None" not in text, text[-3000:]


def msg(result):
    found = re.findall(r'"msg": "((?:[^"\\]|\\.)*)"', result.text)
    return found[-1] if found else ""


def fill(directory):
    """Fill the file system until even a one-byte write and a new empty file fail: root may use
    ext4's reserved blocks, and blocks held back for delayed allocation come free after a sync."""
    path = os.path.join(directory, ".filler")
    for _pass in range(2):
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for size in (65536, 4096, 512, 1):
                try:
                    while True:
                        os.write(descriptor, b"\0" * size)
                except OSError:
                    pass
        finally:
            os.close(descriptor)
        os.sync()
    count = 0
    try:
        while True:
            open(os.path.join(directory, ".empty-%d" % count), "w").close()
            count += 1
    except OSError:
        pass
    with pytest.raises(OSError):
        with open(os.path.join(directory, ".probe"), "w") as handle:
            handle.write("x" * 100)
    return path


def tree(root):
    """{path: content or ('symlink', target)} of every file and symlink under root (a dangling
    symlink included, which shapes.tree cannot open)."""
    out = {}
    for directory, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(directory, d))]:
            path = os.path.join(directory, name)
            if os.path.islink(path):
                out[path] = ("symlink", os.readlink(path))
            else:
                with open(path, "rb") as handle:
                    out[path] = handle.read()
    return out


def make_conf_d_unusable(node, kind):
    conf_d = node.path("etc/containerd/conf.d")
    if kind == "conf.d-file":
        with open(conf_d, "w") as handle:
            handle.write("not a directory\n")
    else:
        os.symlink(node.path("etc/containerd/gone"), conf_d)


FAULTS = ("conf.d-file", "conf.d-dangling-symlink", "full-disk", "two-runs-at-once")


@pytest.fixture(scope="module", params=FAULTS)
def fault(request, tmp_path_factory, containerd):
    """(kind, [results], node files before, after, node) of one run of the real role under the fault."""
    kind = request.param
    tmp_path = tmp_path_factory.mktemp(kind)
    mount_point = None
    if kind == "full-disk":
        mount_point = str(tmp_path / "nodes" / "n1" / "etc" / "containerd")
        os.makedirs(mount_point)
        # A small ext4 image, not a tmpfs: the ownership gate refuses a volatile /etc/containerd before writing.
        image = str(tmp_path / "disk.img")
        with open(image, "wb") as handle:
            handle.truncate(4 * 1024 * 1024)
        proc = subprocess.run("mkfs.ext4 -q -F %s && mount -o loop %s %s" % (image, image, mount_point), shell=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        if proc.returncode != 0:
            pytest.skip("cannot mount a loop ext4 image here: %s" % proc.stdout.strip())
    try:
        node, inventory, playbook = one_node(tmp_path, "2.1")
        if kind.startswith("conf.d-"):
            make_conf_d_unusable(node, kind)
        else:
            os.makedirs(node.path("etc/containerd/conf.d"), exist_ok=True)
        loads(node)
        if kind == "full-disk":
            fill(mount_point)
        before = tree(node.root)
        results = [None, None] if kind == "two-runs-at-once" else [None]

        def one(index):
            results[index] = run(playbook, inventory)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(results))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(600)
        after = tree(node.root)
        again = run(playbook, inventory) if kind == "two-runs-at-once" else None
        yield kind, results, before, after, node, again
    finally:
        if mount_point:
            subprocess.run(["umount", "-l", mount_point], check=False)


def test_a_fault_while_writing_loses_nothing_and_the_config_still_loads(fault):
    kind, results, before, after, node, again = fault
    for result in results:
        assert "Traceback" not in result.text, result
    assert lost(before, after) == [], lost(before, after)
    loaded = loads(node)
    if kind == "two-runs-at-once":
        assert any(r.rc == 0 for r in results), results
        assert 'runtimes.nvidia]' in loaded or "runtimes.nvidia." in loaded, loaded[-2000:]
        own = [p for p in os.listdir(node.path("etc/containerd/conf.d")) if "nvidia" in p]
        assert own == ["zz-gpurt-nvidia.toml"], own
        assert again.rc == 0 and again.changed() == 0, again
    else:
        assert results[0].rc != 0, results[0]
        assert not os.path.exists(node.path("restarts.log"))


CAUSE = {"conf.d-file": "conf.d: File exists", "conf.d-dangling-symlink": "conf.d",
         "full-disk": "No space left on device"}


def test_a_fault_while_writing_is_named_in_the_message(fault):
    kind, results, _before, _after, _node, _again = fault
    for result in results:
        if result.rc != 0 and kind in CAUSE:
            assert CAUSE[kind] in msg(result), msg(result)


def test_a_fault_while_writing_says_what_changed_truly(fault):
    """Before the remediation's true messages: 'files could NOT all be put back: None; backups in None'."""
    _kind, results, _before, _after, _node, _again = fault
    for result in results:
        if result.rc != 0:
            assert_clear(msg(result))
            assert any(words in msg(result) for words in ("nothing was changed", "nothing was written",
                                                          "every file was put back")), msg(result)

"""tests/lib/zip_bytecode: what a module imports from a zip is compiled once, kept, and named by the zip it
came from; a cache directory another user could write is never used."""
import os
import subprocess
import sys
import zipfile

from tests.lib import ansible_run

PROBE = "import sys\nsys.path.insert(0, sys.argv[1])\nimport m\nprint(m.where.__code__.co_filename)\n"


def _zip(path):
    with zipfile.ZipFile(str(path), "w") as archive:
        archive.writestr("m.py", "def where():\n    return 1\n")
    return str(path)


def _import_from(archive, cache):
    env = dict(os.environ, PYTHONPATH=ansible_run.ZIP_BYTECODE, GPURT_TEST_BYTECODE_CACHE=str(cache))
    proc = subprocess.run([sys.executable, "-c", PROBE, archive], env=env, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.stderr == ""
    return proc.stdout.strip()


def test_a_zipped_module_is_compiled_once_and_named_by_its_own_zip(tmp_path):
    cache = tmp_path / "cache"
    first = _zip(tmp_path / "first.zip")
    assert _import_from(first, cache) == os.path.join(first, "m.py")
    kept = os.listdir(str(cache))
    assert len(kept) == 1
    # the next run's zip has another path (AnsiballZ's temporary directory): the kept code, under its name
    os.utime(str(cache / kept[0]), (0, 0))
    second = _zip(tmp_path / "second.zip")
    assert _import_from(second, cache) == os.path.join(second, "m.py")
    assert os.listdir(str(cache)) == kept and os.stat(str(cache / kept[0])).st_mtime == 0


def test_a_cache_directory_others_can_write_is_not_used(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    os.chmod(str(cache), 0o777)
    archive = _zip(tmp_path / "m.zip")
    assert _import_from(archive, cache) == os.path.join(archive, "m.py")
    assert os.listdir(str(cache)) == []


ROUTING = b"plugin_routing:\n  modules:\n    old_name: {redirect: gpurt.runtime_gate.new_name}\n"
# a stand-in for an ansible CLI: what sitecustomize looks at is the name of the program it runs in
CLI = ("from ansible.utils.collection_loader import _collection_finder as finder\n"
       "print(repr(finder._meta_yml_to_dict(%r, ('gpurt.runtime_gate', 'runtime.yml'))))\n" % ROUTING)


def _routing_in(program, cache):
    env = dict(os.environ, PYTHONPATH=ansible_run.ZIP_BYTECODE, GPURT_TEST_BYTECODE_CACHE=str(cache))
    proc = subprocess.run([sys.executable, str(program)], env=env, check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.stderr == ""
    return proc.stdout.strip()


def test_an_ansible_cli_parses_a_routing_table_once_and_gets_the_same_table(tmp_path):
    from ansible.utils.collection_loader._collection_meta import _meta_yml_to_dict
    expected = repr(_meta_yml_to_dict(ROUTING, None))
    cli = tmp_path / "ansible-probe"
    cli.write_text(CLI)
    cache = tmp_path / "cache"
    assert _routing_in(cli, cache) == expected
    kept = [name for name in os.listdir(str(cache)) if name.startswith("routing-")]
    assert len(kept) == 1
    os.utime(str(cache / kept[0]), (0, 0))
    assert _routing_in(cli, cache) == expected  # read, not parsed and written again
    assert os.stat(str(cache / kept[0])).st_mtime == 0
    # any other program (a module on a node) leaves the loader as it is
    other = tmp_path / "probe"
    other.write_text(CLI)
    assert _routing_in(other, tmp_path / "other") == expected
    assert [n for n in os.listdir(str(tmp_path / "other")) if n.startswith("routing-")] == []

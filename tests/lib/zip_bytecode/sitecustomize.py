"""Caches for the tests' ansible-playbook runs (tests/lib/ansible_run.py puts this directory on PYTHONPATH,
so every Python of a run imports it at start): what each run would otherwise compute again from the same bytes.

Bytecode of the modules: an AnsiballZ module imports ansible's module_utils and the collection's from a zip
file, and zipimport compiles every source file on every run: measured 0.25 of the 0.35 CPU seconds of one
containerd_config_info run, paid again by each host of each task of each test. Here a compiled module is
kept on disk, keyed by the interpreter's bytecode magic and the source's hash, as CPython's own __pycache__
keeps the files it imports from a directory: the same source gives the same code object, under the file
name zipimport gives it (what a traceback names).

Routing tables of the controller (the ansible CLIs only): at every start the collection loader parses
ansible-core's config/ansible_builtin_runtime.yml (376 kB of routing for ansible.builtin) and each collection's
meta/runtime.yml: measured 0.20 of the 2.2 CPU seconds of a one-host audit. ansible-core leaves a hook for it,
_collection_finder._meta_yml_to_dict(data, content_id), which tools may replace (ansible-test's import sanity
test does) and whose content_id is there "to allow other implementations to cache the output". Here the
loader's own function is wrapped once its module is imported: its table (strings, lists and mappings: what
its BaseLoader makes) is kept on disk, keyed by the file's bytes.

Nothing else changes; any error falls back to the original compile or parse. Plain syntax: Python 2.7 and
3.6 targets read this file too (and skip it).
"""
import os
import stat
import sys

_FINDER = "ansible.utils.collection_loader._collection_finder"


def _kept(path, make):
    """make()'s result (marshal-able), kept at path: read when there, else made and written for the next run."""
    import marshal

    try:
        with open(path, "rb") as handle:
            return marshal.load(handle)
    except (OSError, EOFError, ValueError, TypeError):
        pass
    value = make()
    try:
        partial = "%s.%d.tmp" % (path, os.getpid())
        with open(partial, "wb") as handle:
            marshal.dump(value, handle)
        os.replace(partial, path)
    except (OSError, ValueError):
        pass
    return value


def _cache_bytecode(directory):
    import _imp
    import hashlib
    import importlib.util
    import zipimport

    compile_source = zipimport._compile_source
    # what else decides the code compile() makes: the interpreter's bytecode, and -O (asserts dropped)
    salt = importlib.util.MAGIC_NUMBER + str(sys.flags.optimize).encode() + b"\0"

    def cached_compile_source(pathname, source):
        path = os.path.join(directory, hashlib.sha256(salt + source).hexdigest())
        code = _kept(path, lambda: compile_source(pathname, source))
        _imp._fix_co_filename(code, pathname)
        return code

    zipimport._compile_source = cached_compile_source


def _cache_routing(directory):
    import hashlib
    import importlib.abc
    import importlib.util

    def wrap(parse):
        def meta_yml_to_dict(yaml_string_data, content_id):
            data = yaml_string_data if isinstance(yaml_string_data, bytes) else yaml_string_data.encode("utf-8")
            path = os.path.join(directory, "routing-" + hashlib.sha256(data).hexdigest())
            return _kept(path, lambda: parse(yaml_string_data, content_id))
        return meta_yml_to_dict

    class WrapOnImport(importlib.abc.MetaPathFinder):
        """Finds nothing itself: the collection finder's module, once imported, gets its hook wrapped."""

        def find_spec(self, fullname, path, target=None):
            if fullname != _FINDER:
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(fullname)
            if spec is None or spec.loader is None:
                return spec
            exec_module = spec.loader.exec_module

            def exec_and_wrap(module):
                exec_module(module)
                if getattr(module, "_meta_yml_to_dict", None) is not None:
                    module._meta_yml_to_dict = wrap(module._meta_yml_to_dict)
            spec.loader.exec_module = exec_and_wrap
            return spec

    if _FINDER not in sys.modules:
        sys.meta_path.insert(0, WrapOnImport())


def _install(directory):
    # this user's own directory, written by no one else: what is loaded from it runs as this user
    os.makedirs(directory, mode=0o700, exist_ok=True)
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        return
    _cache_bytecode(directory)
    if sys.argv and os.path.basename(sys.argv[0]).startswith("ansible"):  # a controller: ansible-playbook, ansible
        _cache_routing(directory)


if sys.version_info >= (3, 8) and os.environ.get("GPURT_TEST_BYTECODE_CACHE"):
    try:
        _install(os.environ["GPURT_TEST_BYTECODE_CACHE"])
    except Exception:  # a cache that cannot be set up is no cache, never a failed start
        pass

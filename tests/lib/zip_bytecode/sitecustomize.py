"""Bytecode caching for the modules the tests' ansible-playbook runs (tests/lib/ansible_run.py puts this
directory on PYTHONPATH, so every Python of a run imports it at start).

An AnsiballZ module imports ansible's module_utils and the collection's from a zip file, and zipimport
compiles every source file on every run: measured 0.25 of the 0.35 CPU seconds of one
containerd_config_info run, paid again by each host of each task of each test. Here a compiled module is
kept on disk, keyed by the interpreter's bytecode magic and the source's hash, as CPython's own __pycache__
keeps the files it imports from a directory: the same source gives the same code object, under the file
name zipimport gives it (what a traceback names). Nothing else changes; any error falls back to
zipimport's own compile. Plain syntax: Python 2.7 and 3.6 targets read this file too (and skip it).
"""
import os
import stat
import sys


def _install(directory):
    import _imp
    import hashlib
    import importlib.util
    import marshal
    import zipimport

    compile_source = zipimport._compile_source
    # what else decides the code compile() makes: the interpreter's bytecode, and -O (asserts dropped)
    salt = importlib.util.MAGIC_NUMBER + str(sys.flags.optimize).encode() + b"\0"
    # this user's own directory, written by no one else: what is loaded from it runs as this user
    os.makedirs(directory, mode=0o700, exist_ok=True)
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        return

    def cached_compile_source(pathname, source):
        path = os.path.join(directory, hashlib.sha256(salt + source).hexdigest())
        try:
            with open(path, "rb") as handle:
                code = marshal.load(handle)
        except (OSError, EOFError, ValueError, TypeError):
            code = compile_source(pathname, source)
            try:
                partial = "%s.%d.tmp" % (path, os.getpid())
                with open(partial, "wb") as handle:
                    marshal.dump(code, handle)
                os.replace(partial, path)
            except OSError:
                pass
            return code
        _imp._fix_co_filename(code, pathname)
        return code

    zipimport._compile_source = cached_compile_source


if sys.version_info >= (3, 8) and os.environ.get("GPURT_TEST_BYTECODE_CACHE"):
    try:
        _install(os.environ["GPURT_TEST_BYTECODE_CACHE"])
    except Exception:  # a cache that cannot be set up is no cache, never a failed start
        pass

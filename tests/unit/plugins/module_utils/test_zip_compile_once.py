"""module_utils/_zip_compile_once (issue 34): what a module imports from its AnsiballZ zip is compiled once per
run, not twice, and the code it runs is the same. Each case runs in a fresh Python that imports a package from
a real zip file, counting zipimport's compiles (under the hook, as the first compile of a file is)."""
import json
import os
import subprocess
import sys
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PROBE = """
import collections, json, sys, zipimport
sys.path.insert(0, sys.argv[1])
compiles = collections.Counter()
compile_source = zipimport._compile_source
def counted(pathname, source):
    compiles[pathname.rsplit("/", 1)[-1]] += 1
    return compile_source(pathname, source)
zipimport._compile_source = counted
if sys.argv[2] == "hook":
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _zip_compile_once
    assert _zip_compile_once.install() is True  # a second install keeps the first
from pkg import first
print(json.dumps({"compiles": compiles, "value": first.value(), "file": first.__file__}))
"""


def run(tmp_path, mode, second="VALUE = 2\n"):
    archive = str(tmp_path / "payload.zip")
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("pkg/__init__.py", "")
        zipped.writestr("pkg/first.py", "from pkg import second\n\ndef value():\n    return second.VALUE + 1\n")
        zipped.writestr("pkg/second.py", second)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, ".collections"))
    env.pop("GPURT_TEST_BYTECODE_CACHE", None)
    out = subprocess.run([sys.executable, "-B", "-c", PROBE, archive, mode], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def test_each_source_of_the_zip_compiles_once_and_runs_the_same(tmp_path):
    hooked = run(tmp_path, "hook")
    assert hooked["compiles"] == {"__init__.py": hooked["compiles"]["__init__.py"], "first.py": 1, "second.py": 1}
    plain = run(tmp_path, "plain")
    assert hooked["value"] == plain["value"] == 3
    assert hooked["file"] == plain["file"] and hooked["file"].endswith(os.path.join("payload.zip", "pkg", "first.py"))


def test_without_it_zipimport_compiles_each_source_twice(tmp_path):
    # measured on Python 3.8, 3.9, 3.11, 3.12 and 3.13
    assert run(tmp_path, "plain")["compiles"]["second.py"] == 2


def test_the_key_is_the_file_and_its_text():
    # a changed source never gets an earlier code object, and a file's code is reused once, then compiled anew
    code = """
import zipimport
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _zip_compile_once
compile_source = zipimport._compile_source
one, two = compile_source("/z.zip/m.py", b"A = 1\\n"), compile_source("/z.zip/m.py", b"A = 2\\n")
first = {}
exec(one, first)
second = {}
exec(two, second)
again = compile_source("/z.zip/m.py", b"A = 1\\n")
print(first["A"], second["A"], again is one, compile_source("/z.zip/m.py", b"A = 1\\n") is one)
"""
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, ".collections"))
    out = subprocess.run([sys.executable, "-B", "-c", code], env=env, check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["1", "2", "True", "False"]

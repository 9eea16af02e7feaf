"""The collection as a Galaxy user gets it: the tarball `ansible-galaxy collection build` makes,
installed with `ansible-galaxy collection install`, and every read-only playbook run by FQCN from a
directory outside the repo with no repo ansible.cfg; and the controllers the collection claims."""
import glob
import json
import os
import subprocess
import tarfile

import pytest

from tests.lib import ansible_run
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
REPO = ansible_run.REPO
FIXTURES = os.path.join(REPO, "tests", "integration", "fixtures", "bootstrap")
# What a Galaxy user needs (galaxy.yml says why); anything else in the tarball is a packaging bug.
SHIPPED_TOP = {"FILES.json", "MANIFEST.json", "LICENSE", "README.md", "changelogs", "docs", "extensions", "meta",
               "playbooks", "plugins", "rbac", "requirements.txt", "roles"}
NEVER_SHIPPED = ("Makefile", "pytest.ini", ".ansible-lint", "ansible.cfg", "benchmarks", "requirements-test.txt",
                 "requirements-oldest.txt", "tests/output", ".ci", "tools", "tests/unit", "tests/integration",
                 "tests/lib", "tests/conftest.py", "tests/sanity/run", "tests/fixtures", "inventory", ".cache",
                 ".collections",
                 "changelogs/fragments", ".git", ".gitignore")
RUNTIMECLASS = ("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n")


def galaxy(*args, env):
    proc = subprocess.run([os.path.join(ansible_run.BIN, "ansible-galaxy")] + list(args), env=env, check=False,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """A user's directory outside the repo: an empty ansible.cfg and the collection installed from the
    built tarball (no .collections symlink, no repo ansible.cfg)."""
    home = tmp_path_factory.mktemp("galaxy-user")
    (home / "ansible.cfg").write_text("[defaults]\n")
    env = ansible_run.env({"ANSIBLE_CONFIG": str(home / "ansible.cfg"),
                           "ANSIBLE_COLLECTIONS_PATH": str(home / "collections"),
                           # The README tells users to enable the callback that prints the verdict lines.
                           "ANSIBLE_CALLBACKS_ENABLED": "gpurt.runtime_gate.summary"})
    galaxy("collection", "build", REPO, "--output-path", str(home / "dist"), env=env)
    tarballs = os.listdir(str(home / "dist"))
    assert len(tarballs) == 1 and tarballs[0].startswith("gpurt-runtime_gate-"), tarballs
    tarball = str(home / "dist" / tarballs[0])
    # --no-deps: Galaxy (kubernetes.core, for gpurt_drain) is not reachable here; the playbooks run below need none.
    galaxy("collection", "install", "--no-deps", tarball, "-p", str(home / "collections"), env=env)
    installed = home / "collections" / "ansible_collections" / "gpurt" / "runtime_gate"
    return {"home": home, "env": env, "tarball": tarball, "installed": installed}


def members(tarball):
    with tarfile.open(tarball) as archive:
        return sorted(m.name for m in archive.getmembers())


def test_tarball_ships_what_a_user_needs_and_nothing_else(user):
    names = members(user["tarball"])
    assert set(n.split("/")[0] for n in names) == SHIPPED_TOP
    for name in NEVER_SHIPPED:
        assert not any(n == name or n.startswith(name + "/") for n in names), name
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    with tarfile.open(user["tarball"]) as archive:
        license_text = archive.extractfile("LICENSE").read().decode()
        manifest = json.load(archive.extractfile("MANIFEST.json"))
    with open(os.path.join(REPO, "LICENSE")) as handle:
        assert license_text == handle.read()
    assert "GNU GENERAL PUBLIC LICENSE" in license_text and "Version 3, 29 June 2007" in license_text
    info = manifest["collection_info"]
    assert info["license"] == ["GPL-3.0-or-later"]
    assert not any(info.get(k) for k in ("repository", "documentation", "homepage", "issues")), info


def test_sanity_ignore_files_ship_with_what_they_name(user):
    """ansible-test sanity on the installed collection (as Automation Hub runs it) reads them."""
    names = set(members(user["tarball"]))
    ignores = sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "tests", "sanity", "ignore-*.txt")))
    for ignore in ignores:
        assert ignore in names, "%s is not shipped: see build_ignore in galaxy.yml" % ignore
        with open(os.path.join(REPO, ignore)) as handle:
            for line in handle:
                if line.strip() and not line.startswith("#"):
                    assert line.split()[0] in names, (ignore, line)


def playbook(user, name, extra_vars, inventory="localhost,", check=False):
    argv = [os.path.join(ansible_run.BIN, "ansible-playbook"), "-i", inventory, "gpurt.runtime_gate." + name,
            "-e", json.dumps(extra_vars)] + (["--check"] if check else [])
    proc = subprocess.run(argv, cwd=str(user["home"]), env=user["env"], check=False, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=600)
    return ansible_run.Run(proc)


def test_only_the_installed_copy_is_found(user):
    out = galaxy("collection", "list", "gpurt.runtime_gate", env=user["env"])
    # The listing heads each search path that holds the collection with "# <path>".
    found = [line[2:].strip() for line in out.splitlines() if line.startswith("# /")]
    assert found == [str(user["home"] / "collections" / "ansible_collections")], out


def test_validate_bootstrap_by_fqcn(user, containerd):
    result = playbook(user, "validate_bootstrap", {
        "gpurt_bootstrap_template": os.path.join(FIXTURES, "config.toml.j2"),
        "gpurt_bootstrap_files": [{"src": os.path.join(FIXTURES, "99-nvidia.toml.j2"),
                                   "dest": "/etc/containerd/conf.d/99-nvidia.toml"}],
        "gpurt_bootstrap_vars": os.path.join(FIXTURES, "vars.yml"),
        "gpurt_runtimeclasses_src": os.path.join(FIXTURES, "runtimeclass-nvidia.yaml"),
        "gpurt_bootstrap_containerd_bins": {"1": containerd["1.7"], "2": containerd["2.1"]}})
    assert result.rc == 0, result
    assert result.gate_lines() == ["bootstrap: OK"]


def test_audit_and_crosscheck_by_fqcn(user, containerd, tmp_path):
    node = Node(tmp_path / "nodes", "gpu-1", "2.1")
    node.runtime_binary()
    node.write("etc/containerd/config.toml", 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n')
    node.write("etc/containerd/conf.d/99-nvidia.toml",
               'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
               '  runtime_type = "io.containerd.runc.v2"\n'
               '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]\n'
               '  BinaryName = "{root}/usr/bin/nvidia-container-runtime"\n')
    manifests = tmp_path / "runtimeclasses"
    manifests.mkdir()
    (manifests / "nvidia.yaml").write_text(RUNTIMECLASS)
    inventory = ansible_run.write_inventory(str(tmp_path / "inventory.json"), {"gpu-1": node.host_vars()})
    result = playbook(user, "audit", {"gpurt_runtimeclasses_src": str(manifests),
                                      "gpurt_report_dir": str(tmp_path / "reports")}, inventory=inventory, check=True)
    assert result.rc == 0, result
    assert result.gate_lines()[0] == "gpu-1: OK"
    rc, dump, _err = node.dump()
    assert rc == 0
    (tmp_path / "dump.toml").write_text(dump)
    result = playbook(user, "crosscheck", {"dump_file": str(tmp_path / "dump.toml"), "runtimeclasses": str(manifests)})
    assert result.rc == 0, result
    assert result.gate_lines() == ["OK"]


def test_installed_modules_have_docs(user):
    proc = subprocess.run([os.path.join(ansible_run.BIN, "ansible-doc"), "-t", "module", "-l", "gpurt.runtime_gate"],
                          env=user["env"], cwd=str(user["home"]), check=False, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout
    for module in ("controller_check", "bootstrap_sandbox", "containerd_config_info", "runtimeclass_info"):
        assert "gpurt.runtime_gate.%s" % module in proc.stdout


# --- controllers -----------------------------------------------------------------------------

def controller_check(bin_dir, extra_env=None):
    env = ansible_run.env(extra_env)
    env["PATH"] = bin_dir + os.pathsep + env["PATH"]
    proc = subprocess.run([os.path.join(bin_dir, "ansible"), "localhost", "-i", "localhost,", "-c", "local",
                           "-m", "gpurt.runtime_gate.controller_check", "-o"], cwd=REPO, env=env, check=False,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
    return proc.returncode, proc.stdout


def test_the_controller_under_test_can_run_the_collection():
    """Also tells which controller this run tests: make test-oldest sets GPURT_EXPECT_CONTROLLER."""
    rc, out = controller_check(ansible_run.BIN)
    assert rc == 0, out
    facts = json.loads(out.split("=>", 1)[1])
    assert facts["problems"] == [] and facts["toml_reader"]
    expected = os.environ.get("GPURT_EXPECT_CONTROLLER")
    if expected:
        ansible_version, python_version = expected.split()
        assert facts["ansible_version"] == ansible_version, facts
        assert facts["python_version"].startswith(python_version + "."), facts


UNSUPPORTED = os.environ.get("GPURT_UNSUPPORTED_ANSIBLE_BIN")


@pytest.mark.skipif(not UNSUPPORTED, reason="GPURT_UNSUPPORTED_ANSIBLE_BIN is not set (make test-oldest sets it to an "
                                            "ansible-core 2.15 on Python 3.9)")
def test_an_unsupported_controller_fails_at_play_start_saying_what_it_needs(containerd):
    """ansible-core 2.16 does not run on Python 3.9; 2.15 does, and loads the collection with only a warning."""
    env = ansible_run.env({"GPURT_ANSIBLE_BIN": UNSUPPORTED})
    env["PATH"] = UNSUPPORTED + os.pathsep + env["PATH"]
    argv = [os.path.join(UNSUPPORTED, "ansible-playbook"), "-i", "localhost,",
            os.path.join(REPO, "playbooks", "validate_bootstrap.yml"),
            "-e", json.dumps({"gpurt_bootstrap_template": os.path.join(FIXTURES, "config.toml.j2"),
                              "gpurt_bootstrap_vars": os.path.join(FIXTURES, "vars.yml"),
                              "gpurt_runtimeclasses_src": os.path.join(FIXTURES, "runtimeclass-nvidia.yaml"),
                              "gpurt_bootstrap_containerd_bins": {"2": containerd["2.1"]}})]
    proc = subprocess.run(argv, cwd=REPO, env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300)
    assert proc.returncode == 2, proc.stdout
    assert "gpurt.runtime_gate needs Python 3.10+ on the controller" in proc.stdout, proc.stdout
    assert "needs ansible-core 2.16+" in proc.stdout
    # It stopped at the first task: nothing was rendered or loaded.
    assert "Render the templates" not in proc.stdout and "Traceback" not in proc.stdout

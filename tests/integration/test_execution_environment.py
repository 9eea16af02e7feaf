"""Issue 26 item 9: the execution environment for AWX / Automation Controller. The real ansible-builder
(pinned in requirements-test.txt) creates the build context from the definition the tarball ships
(extensions/ee/execution-environment.yml), with the built collection tarball and real containerd
binaries beside it. No image is built here (no container runtime): the context's stages are replayed
on this machine instead, as far as they do not need the base image: the galaxy stage's install, the
builder stage's introspection of the collection's requirements, the final stage's binary check, and
validate_bootstrap run from the collection that stage installed with the binaries where the image
puts them."""
import json
import os
import shutil
import subprocess
import tarfile

import pytest
import yaml

from tests.lib import ansible_run

pytestmark = pytest.mark.integration
REPO = ansible_run.REPO
DEFINITION = "extensions/ee/execution-environment.yml"
FIXTURES = os.path.join(REPO, "tests", "integration", "fixtures", "bootstrap")
RELEASES = ("1.7", "2.1")
# Where the final stage puts the binaries; the playbook variable points there (docs/awx.md).
IMAGE_DIR = "/opt/gpurt/containerd"


def run(argv, cwd, env=None, timeout=300):
    proc = subprocess.run(argv, cwd=str(cwd), env=env or ansible_run.env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=timeout, check=False)
    return proc.returncode, proc.stdout


@pytest.fixture(scope="module")
def context(tmp_path_factory, containerd):
    """The directory docs/awx.md has a user lay out, and the context ansible-builder creates from it."""
    work = tmp_path_factory.mktemp("ee")
    rc, out = run([os.path.join(ansible_run.BIN, "ansible-galaxy"), "collection", "build", REPO,
                   "--output-path", str(work / "dist")], work)
    assert rc == 0, out
    (tarball,) = os.listdir(str(work / "dist"))
    ee = work / "ee"
    ee.mkdir()
    shutil.copy(str(work / "dist" / tarball), str(ee / "gpurt-runtime_gate.tar.gz"))
    with tarfile.open(str(ee / "gpurt-runtime_gate.tar.gz")) as archive:
        (ee / "execution-environment.yml").write_bytes(archive.extractfile(DEFINITION).read())
    for release in RELEASES:
        (ee / "containerd" / release).mkdir(parents=True)
        shutil.copy(containerd[release], str(ee / "containerd" / release / "containerd"))
    rc, out = run([os.path.join(ansible_run.BIN, "ansible-builder"), "create", "-f", "execution-environment.yml",
                   "-c", "context", "--output-filename", "Containerfile"], ee)
    assert rc == 0, out
    assert "No matches" not in out, out
    with open(str(ee / "context" / "Containerfile")) as handle:
        containerfile = handle.read()
    return {"ee": ee, "build": ee / "context" / "_build", "containerfile": containerfile, "create_output": out}


def steps(containerfile):
    return [line for line in containerfile.splitlines() if line and not line.startswith("#")]


def test_the_containerfile_installs_the_collection_its_requirements_and_containerd(context):
    lines = steps(context["containerfile"])
    assert 'ARG EE_BASE_IMAGE="docker.io/redhat/ubi9:latest"' in lines
    assert 'ARG PYCMD="/usr/bin/python3.11"' in lines
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core>=2.16 ansible-runner"' in lines
    install = [l for l in lines if "ansible-galaxy collection install" in l]
    assert len(install) == 1 and "-r requirements.yml" in install[0], install
    assert any("introspect.py introspect --write-bindep=" in l for l in lines)
    final = lines[max(i for i, l in enumerate(lines) if l.startswith("FROM ")):]
    assert "COPY _build/containerd/ %s/" % IMAGE_DIR in final
    assert any(l.startswith("RUN ") and "%s/*/containerd" % IMAGE_DIR in l and "--version" in l for l in final)


def test_the_context_has_the_tarball_and_the_binaries(context):
    build = context["build"]
    with open(str(build / "requirements.yml")) as handle:
        assert yaml.safe_load(handle) == {"collections": [{"name": "collections/gpurt-runtime_gate.tar.gz",
                                                           "type": "file"}]}
    assert (build / "collections" / "gpurt-runtime_gate.tar.gz").read_bytes() == (
        context["ee"] / "gpurt-runtime_gate.tar.gz").read_bytes()
    for release in RELEASES:
        binary = build / "containerd" / release / "containerd"
        assert os.access(str(binary), os.X_OK), binary
        assert binary.read_bytes() == (context["ee"] / "containerd" / release / "containerd").read_bytes()


def image_env(collections, home):
    """Ansible as in the image: no repository ansible.cfg, only the collections the image installed."""
    (home / "ansible.cfg").write_text("[defaults]\n")
    return ansible_run.env({"ANSIBLE_CONFIG": str(home / "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": str(collections),
                            "ANSIBLE_CALLBACKS_ENABLED": "gpurt.runtime_gate.summary"})


@pytest.fixture(scope="module")
def installed(context, tmp_path_factory):
    """The galaxy stage, replayed: its install command, run in the context's _build as WORKDIR /build."""
    collections = tmp_path_factory.mktemp("ee-collections")
    rc, out = run([os.path.join(ansible_run.BIN, "ansible-galaxy"), "collection", "install", "-r", "requirements.yml",
                   "--collections-path", str(collections)], context["build"],
                  env=image_env(collections, tmp_path_factory.mktemp("ee-home")))
    assert rc == 0, out
    assert (collections / "ansible_collections" / "gpurt" / "runtime_gate" / "MANIFEST.json").is_file(), out
    return collections


def test_the_builder_stage_finds_the_collections_requirements(context, installed, tmp_path):
    """The introspection the builder stage runs: the collection's Python packages, and no system
    package (containerd does not come from bindep: docs/awx.md says why)."""
    rc, out = run([os.path.join(ansible_run.BIN, "python"), str(context["build"] / "scripts" / "introspect.py"),
                   "introspect", "--write-pip", str(tmp_path / "requirements.txt"),
                   "--write-bindep", str(tmp_path / "bindep.txt"), str(installed)], tmp_path)
    assert rc == 0, out
    pip = [line.split("#")[0].strip() for line in (tmp_path / "requirements.txt").read_text().splitlines()]
    assert "kubernetes>=24.2.0" in pip and "tomlkit>=0.11" in pip, pip
    assert not any(line.startswith("ansible-core") for line in pip), pip  # the image's own ansible-core
    assert not (tmp_path / "bindep.txt").exists() or not (tmp_path / "bindep.txt").read_text().strip()


def final_check(context, root):
    """The final stage's check of the binaries, run on this machine with the image's directory at root."""
    (step,) = [l for l in steps(context["containerfile"]) if l.startswith("RUN ") and IMAGE_DIR in l]
    return run(["sh", "-c", step[len("RUN "):].replace(IMAGE_DIR, str(root))], root)


def test_the_final_stage_check_runs_the_binaries_and_fails_on_one_that_does_not_run(context, tmp_path):
    root = tmp_path / "containerd"
    shutil.copytree(str(context["build"] / "containerd"), str(root))
    rc, out = final_check(context, root)
    assert rc == 0, out
    assert out.count("containerd github.com/containerd/containerd") == len(RELEASES), out
    (root / "2.2").mkdir()
    (root / "2.2" / "containerd").write_text("not a binary\n")
    os.chmod(str(root / "2.2" / "containerd"), 0o755)
    rc, out = final_check(context, root)
    assert rc != 0, out
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, out = final_check(context, empty)
    assert rc != 0, out


@pytest.mark.parametrize("major", [1, 2])
def test_validate_bootstrap_runs_from_what_the_image_holds(context, installed, tmp_path, major):
    """The collection the galaxy stage installed, the binaries where the image has them, the variable
    docs/awx.md tells the job template to set; no repository checkout involved. A node group of each
    major picks its own binary."""
    env = image_env(installed, tmp_path)
    bins = context["build"] / "containerd"
    # 1.x: every runtime in the main file (a drop-in replaces the whole CRI section there).
    files = {"gpurt_bootstrap_template": os.path.join(FIXTURES, "config-1x-inline.toml.j2")} if major == 1 else {
        "gpurt_bootstrap_template": os.path.join(FIXTURES, "config.toml.j2"),
        "gpurt_bootstrap_files": [{"src": os.path.join(FIXTURES, "99-nvidia.toml.j2"),
                                   "dest": "/etc/containerd/conf.d/99-nvidia.toml"}]}
    extra = dict(files, gpurt_bootstrap_vars={"containerd_major": major, "gpu_runtime_name": "nvidia"},
                 gpurt_bootstrap_containerd_version=str(major),
                 gpurt_runtimeclasses_src=os.path.join(FIXTURES, "runtimeclass-nvidia.yaml"),
                 gpurt_report_dir=str(tmp_path / "reports"),
                 gpurt_bootstrap_containerd_bins={"1": str(bins / "1.7" / "containerd"),
                                                  "2": str(bins / "2.1" / "containerd")})
    rc, out = run([os.path.join(ansible_run.BIN, "ansible-playbook"), "-i", "localhost,",
                   "gpurt.runtime_gate.validate_bootstrap", "-e", json.dumps(extra)], tmp_path, env=env)
    assert rc == 0, out
    assert "bootstrap: OK" in out, out
    with open(str(tmp_path / "reports" / "validate-bootstrap.json")) as handle:
        report = json.load(handle)
    assert report["outcome"] == "passed"
    assert report["nodes"]["bootstrap"]["containerd_version"].startswith(RELEASES[major - 1] + "."), report

"""The commands the docs show, run as a user types them.

- The seed lab's contract from a checkout: `ansible-playbook playbooks/crosscheck.yml` in the
  repository root, with the repository's ansible.cfg (which points at the demo inventory) and no
  test-only environment; an inventory variable that cannot be templated is reported by name.
- Every shell command of README.md, exactly as written (through bash), in the order the README shows
  them: the whole README from the installed tarball in an empty directory (the install block, then each
  ansible-playbook command of the FQCN playbooks), the install block in a fresh copy of the checkout (it
  must not install into the checkout), and from a checkout (the repository root, its ansible.cfg) the
  ansible-playbook commands that name no inventory, whose hosts there come from that ansible.cfg (the
  demo inventory). Those given `-i inventory` run the same there as from the tarball: they run once
  (prevent.yml too: it needs the labels the README's audit writes after remediate.yml).
  The README's placeholders are filled in from PLACEHOLDERS below; a command the test does not know
  fails it, so a new command in the README gets its expected outcome here.
"""
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.lib import ansible_run, containerd_bins
from tests.lib import checkout as fresh_checkout
from tests.lib.cluster_objects import Api
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
REPO = ansible_run.REPO
BIN = ansible_run.BIN
V2_NVIDIA = '''version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-legacy]
  runtime_type = "io.containerd.runc.v2"
'''


def user_env():
    """What a user's shell has: the venv on PATH, nothing that points ansible at a config."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("ANSIBLE_"))
    env.update(PATH=BIN + os.pathsep + os.environ.get("PATH", ""), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=os.environ.get("ANSIBLE_LOCAL_TEMP", "/tmp/gpurt-ansible-local"))
    return env


def run_as_written(command, placeholders, cwd=REPO):
    """Run a documented command line with its placeholders (D, M, $KUBECONFIG...) filled in."""
    argv = [placeholders.get(word, word) for word in shlex.split(command)]
    argv = ["=".join([part.split("=", 1)[0], placeholders.get(part.split("=", 1)[1], part.split("=", 1)[1])])
            if "=" in part and not part.startswith("-") else part for part in argv]
    proc = subprocess.run(argv, cwd=cwd, env=user_env(), check=False, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    return ansible_run.Run(proc)


def dump(tmp_path, text):
    config = tmp_path / "config.toml"
    config.write_text(text)
    proc = subprocess.run([containerd_bins.binary("2.1"), "--config", str(config), "config", "dump"], check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
    path = tmp_path / "dump.toml"
    path.write_text(proc.stdout)
    return str(path)


SEED = "ansible-playbook playbooks/crosscheck.yml -e dump_file=D -e runtimeclasses=M"
MANIFESTS = os.path.join(REPO, "inventory", "demo", "runtimeclasses")


def test_seed_lab_contract_from_a_checkout(tmp_path):
    """The demo inventory's variables (built from inventory_dir) stay off the implicit localhost."""
    only_nvidia = V2_NVIDIA.split('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-cdi]', maxsplit=1)[0]
    missing = run_as_written(SEED, {"D": dump(tmp_path, only_nvidia), "M": MANIFESTS})
    assert missing.rc == 2, missing
    assert "inventory_dir" not in missing.text, missing
    assert missing.gate_lines() == ["MISSING=nvida", "MISSING=nvidia-cdi"], missing
    complete = tmp_path / "complete"
    complete.mkdir()
    ok = run_as_written(SEED, {"D": dump(complete, V2_NVIDIA.replace("nvidia-legacy", "nvida")), "M": MANIFESTS})
    assert ok.rc == 0, ok
    assert ok.gate_lines() == ["OK"], ok


def test_an_inventory_variable_that_cannot_be_templated_is_named(tmp_path):
    """A user's group_vars/all that builds gpurt_* variables from inventory_dir, as the demo did: a
    variable crosscheck.yml reads is reported by name with the cause; one it does not read (a node's
    gpurt_containerd_bin) does not stop it."""
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "hosts.yml").write_text("all:\n  hosts:\n    node-1:\n      ansible_connection: local\n")
    (inventory / "group_vars" / "all.yml").write_text(
        'gpurt_containerd_bin: "{{ inventory_dir }}/bin/containerd"\n'
        'ansible_python_interpreter: "%s"\n' % sys.executable)
    argv = "ansible-playbook -i %s playbooks/crosscheck.yml -e dump_file=D -e runtimeclasses=M" % inventory
    passing = run_as_written(argv, {"D": dump(tmp_path, V2_NVIDIA.replace("nvidia-legacy", "nvida")), "M": MANIFESTS})
    assert passing.rc == 0 and passing.gate_lines() == ["OK"], passing
    (inventory / "group_vars" / "all.yml").write_text(
        'gpurt_report_dir: "{{ inventory_dir }}/reports"\n')
    named = run_as_written(argv, {"D": str(tmp_path / "dump.toml"), "M": MANIFESTS})
    assert named.rc == 2, named
    lines = named.gate_lines()
    assert any("gpurt_report_dir cannot be resolved for localhost: 'inventory_dir' is undefined" in l
               for l in lines), named
    assert "Traceback" not in named.text, named


# ---- README.md, command by command ----------------------------------------------------------------

README = os.path.join(REPO, "README.md")
# The README's placeholders and what stands in for them (the same from a checkout and from the tarball):
#   inventory                           an inventory of two local nodes: node-1 loads nvidia, node-2 lacks it
#   k8s/runtimeclasses/                 a directory holding the nvidia RuntimeClass manifest
#   $KUBECONFIG                         (environment) the admin kubeconfig of a private real control plane,
#                                       which has that RuntimeClass, the Nodes node-1 and node-2 and
#                                       the namespace gpurt-runtime-gate
#   reports                             a scratch reports directory
#   node1.dump.toml                     node-1's `config dump` by the real containerd 2.1
#   user-data.txt                       a cloud-config that writes a config.toml registering nvidia
#   /opt/containerd-2.1/bin/containerd  the real containerd 2.1 binary
#   gpurt-runtime_gate-0.1.0.tar.gz     the tarball `ansible-galaxy collection build` makes of this checkout
#   ~                                   (HOME) a scratch home: ~/.ansible/collections is the test's
# Not run: the venv's creation and activation (the two SETUP_ONLY lines); the test venv stands in, first
# on PATH. pip runs with PIP_NO_INDEX=1: `pip install` of what that venv holds must say so and
# install nothing (no index is reachable, so anything missing fails).
PLACEHOLDERS = ("inventory", "k8s/runtimeclasses/", "reports", "node1.dump.toml", "user-data.txt",
                "/opt/containerd-2.1/bin/containerd", "gpurt-runtime_gate-0.1.0.tar.gz")
SETUP_ONLY = {"python3 -m venv ~/.venvs/gpurt", ". ~/.venvs/gpurt/bin/activate"}
RUNTIME = '''[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.{name}]
  runtime_type = "io.containerd.runc.v2"
'''
NVIDIA_OPTIONS = '''[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
  BinaryName = "{binary}"
'''
USER_DATA = '''#cloud-config
write_files:
  - path: /etc/containerd/config.toml
    content: |
      version = 2
      [plugins."io.containerd.grpc.v1.cri".containerd]
        default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
        runtime_type = "io.containerd.runc.v2"
'''
RUNTIMECLASS = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n"


def shell_commands(path):
    """Each command of the page's ```sh blocks: continuation lines joined, comments and blank lines dropped."""
    with open(path) as handle:
        blocks = re.findall(r"^```sh\n(.*?)^```", handle.read(), re.M | re.S)
    commands = []
    for block in blocks:
        for command in block.replace("\\\n", " ").splitlines():
            command = " ".join(shlex.split(command, comments=True, posix=False))
            if command:
                commands.append(command)
    return commands


def kind(command):
    """What a README command is, for its expected outcome: the FQCN playbook and the flags that change it."""
    words = command.split()
    if command in SETUP_ONLY:
        return "setup"
    if words[:3] == ["ansible-galaxy", "collection", "install"]:
        return "galaxy install"
    if words[:4] == ["python3", "-m", "pip", "install"]:
        return "pip install"
    if words[0] == "export":
        return "export"
    if words[0] == "ansible-playbook":
        playbook = [w for w in words if w.startswith("gpurt.runtime_gate.")]
        assert len(playbook) == 1, "README runs a playbook without its FQCN: %s" % command
        name = playbook[0].split(".")[-1]
        if name == "audit" and "$KUBECONFIG" in command:
            name += " (cluster)"
        if name == "remediate" and "--check" in words:
            name += " --check"
        return name
    raise AssertionError("the README shows a command this test does not know; give it an outcome: %s" % command)


def fill(command, places):
    for word in PLACEHOLDERS:
        command = re.sub(r"(?<![\w/.~-])%s(?![\w.-])" % re.escape(word), lambda _m, w=word: places[w], command)
    return command


@pytest.fixture(scope="module")
def cluster(private_cluster):
    api = Api(private_cluster.kubeconfig)
    api.runtimeclass("nvidia", "nvidia")
    api.namespace("gpurt-runtime-gate")  # prevent.yml's parameters: the README says to create it
    for name in ("node-1", "node-2"):
        api.node(name, {"pool": "gpu"}, cpu="8", handlers=["nvidia", "runc"])
    yield private_cluster
    api.close()


@pytest.fixture(scope="module")
def tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", REPO, "--output-path", str(out)],
                   check=True, stdout=subprocess.PIPE, env=user_env())
    (built,) = os.listdir(str(out))
    return str(out / built)


def lab(base, tarball):
    """The files the placeholders stand for, under BASE: two local nodes and what the examples read."""
    nodes = {}
    hosts = {}
    for name, runtimes in (("node-1", ("runc", "nvidia")), ("node-2", ("runc",))):
        node = nodes[name] = Node(base / "nodes", name, "2.1")
        binary = node.runtime_binary()
        config = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
        config += "".join(RUNTIME.format(name=r) for r in runtimes)
        if "nvidia" in runtimes:
            config += NVIDIA_OPTIONS.format(binary=binary)
        node.write("etc/containerd/config.toml", config)
        hosts[name] = node.host_vars(
            containerd_runtime_runtimes=[{"name": "nvidia", "binary_name": binary}],
            containerd_runtime_restart_command=["sh", "-c", "echo restarted >> %s" % node.path("restarts.log")],
            containerd_runtime_restart_proof="config",
            containerd_runtime_backup_dir=node.path("var/backups/gpurt"))
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts, group_vars={"gpurt_become": False})
    manifests = base / "runtimeclasses"
    manifests.mkdir()
    (manifests / "nvidia.yaml").write_text(RUNTIMECLASS)
    (base / "user-data.txt").write_text(USER_DATA)
    rc, dumped, err = nodes["node-1"].dump()
    assert rc == 0, err
    (base / "node1.dump.toml").write_text(dumped)
    return {"inventory": inventory, "k8s/runtimeclasses/": str(manifests) + "/", "reports": str(base / "reports"),
            "node1.dump.toml": str(base / "node1.dump.toml"), "user-data.txt": str(base / "user-data.txt"),
            "/opt/containerd-2.1/bin/containerd": containerd_bins.binary("2.1"),
            "gpurt-runtime_gate-0.1.0.tar.gz": tarball}


# ansible-core's own, with no inventory at all (no -i, no /etc/ansible/hosts): the playbooks that run on
# localhost need none. The README says so, and how to silence it.
NO_INVENTORY = ("[WARNING]: No inventory was parsed, only implicit localhost is available",
                "[WARNING]: provided hosts list is empty, only localhost is available. Note that the implicit "
                "localhost does not match 'all'")


def judge(what, command, result, places):
    """The outcome each README command promises on the lab: node-2 lacks nvidia until remediate runs."""
    assert "Traceback" not in result.text, (command, result)
    if what in ("setup", "export"):
        return
    if what == "galaxy install":
        assert result.rc == 0 and "was installed successfully" in result.text, (command, result)
        assert "[WARNING]" not in result.text and "Deprecation" not in result.text, (command, result)
        return
    if what == "pip install":
        assert result.rc == 0 and "already satisfied" in result.text, (command, result)
        assert "Successfully installed" not in result.text, (command, result)
        return
    if what == "audit":
        assert result.rc == 2, (command, result)
        # node-2's line is its failed line (issue 35); node-1's is in the summary
        assert result.gate_lines()[0] == "node-1: OK", (command, result)
        assert "(item=node-2: 1 finding (1 error); MISSING=nvidia)" in result.out, (command, result)
        return
    assert result.rc == 0, (command, result)
    warnings = [l for l in result.text.splitlines() if "[WARNING]" in l and l.strip() not in NO_INVENTORY]
    assert not warnings, (command, warnings, result)
    lines = result.gate_lines()
    if what == "remediate":
        assert result.recap["node-2"]["changed"] >= 1 and result.recap["node-1"]["changed"] == 0, (command, result)
    if what == "remediate --check":
        assert result.changed() == 0, (command, result)
    if what in ("audit (cluster)", "remediate", "remediate --check"):
        for node in ("node-1", "node-2"):
            assert [l for l in lines if l == node + ": OK" or l.startswith(node + ": OK (")], (command, result)
    if what == "audit (cluster)":
        with open(os.path.join(places["reports"], "audit.json")) as handle:
            assert json.load(handle)["outcome"] == "passed"
    if what == "crosscheck":
        assert lines == ["OK"], (command, result)


def run_in_bash(command, cwd, env):
    proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, check=False, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    return ansible_run.Run(proc)


def readme_env(home, kubeconfig):
    home.mkdir()
    env = user_env()
    env.update(HOME=str(home), KUBECONFIG=kubeconfig, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def test_every_readme_command_is_known():
    commands = shell_commands(README)
    kinds = [kind(c) for c in commands]
    assert SETUP_ONLY <= set(commands), "the README's venv lines changed: update SETUP_ONLY and the map above"
    for playbook in ("audit", "remediate", "audit (cluster)", "remediate --check", "cluster_audit",
                     "crosscheck", "validate_bootstrap", "prevent"):
        assert playbook in kinds, (playbook, commands)


def test_readme_commands_from_a_checkout(cluster, tarball, tmp_path):
    """The commands the checkout's ansible.cfg changes: those with no -i get its demo inventory there. The
    install block is the tarball's (below); the commands given `-i inventory` read that inventory only, and
    prevent.yml needs the Nodes labelled by the README's audit after remediate.yml: the tarball's run judges
    each of them in the README's order (running them here too doubled this file's time)."""
    places = lab(tmp_path, tarball)
    env = readme_env(tmp_path / "home", cluster.kubeconfig)
    ran = []
    for command in shell_commands(README):
        if not command.startswith("ansible-playbook ") or "-i" in command.split() or kind(command) == "prevent":
            continue
        judge(kind(command), command, run_in_bash(fill(command, places), REPO, env), places)
        ran.append(kind(command))
    assert ran == ["cluster_audit", "crosscheck", "validate_bootstrap"], ran


def test_readme_install_from_a_checkout(cluster, tarball, tmp_path):
    """The install block run as written in a fresh checkout (its ansible.cfg in force), offline: it installs
    into ~/.ansible/collections, not the checkout's .collections/, so the next line finds requirements.txt;
    then the README's commands of the controller's playbooks run there by FQCN."""
    places = lab(tmp_path / "lab", tarball)
    checkout = fresh_checkout.copy(tmp_path / "checkout")
    before = sorted(os.listdir(checkout))
    env = readme_env(tmp_path / "home", cluster.kubeconfig)
    ran = []
    for command in shell_commands(README):
        what = kind(command)
        if what == "export":
            name, value = command.split(None, 1)[1].split("=", 1)
            env[name] = value
        elif what in ("galaxy install", "pip install", "crosscheck", "validate_bootstrap"):
            judge(what, command, run_in_bash(fill(command, places), checkout, env), places)
            ran.append(what)
    assert ran == ["pip install", "galaxy install", "pip install", "crosscheck", "validate_bootstrap"], ran
    assert sorted(os.listdir(checkout)) == before, "the README's commands wrote into the checkout"
    installed = tmp_path / "home" / ".ansible" / "collections" / "ansible_collections" / "gpurt" / "runtime_gate"
    assert (installed / "MANIFEST.json").exists()


def test_readme_commands_from_the_tarball_in_an_empty_directory(cluster, tarball, tmp_path):
    places = lab(tmp_path / "lab", tarball)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = readme_env(tmp_path / "home", cluster.kubeconfig)
    for command in shell_commands(README):
        what = kind(command)
        if what == "setup":
            continue
        if what == "export":
            name, value = command.split(None, 1)[1].split("=", 1)
            env[name] = value
            continue
        judge(what, command, run_in_bash(fill(command, places), str(empty), env), places)
    assert os.listdir(str(empty)) == [], "the README's commands wrote into the working directory"
    installed = tmp_path / "home" / ".ansible" / "collections" / "ansible_collections" / "gpurt" / "runtime_gate"
    assert (installed / "MANIFEST.json").exists()

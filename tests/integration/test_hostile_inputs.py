"""The hostile-input suite (issue 25): one case per class, each through the real ansible-playbook
and the real containerd. Classes: a main config containerd cannot use (false pass). Other classes
live beside it: tests/integration/test_hostile_secrets.py (no secret on any output),
tests/unit/test_fuzz.py and test_hostile_types (bad values), test_remediation_hostile.py and
test_gather_hardening.py (faults while writing and reading)."""
import json
import os

import pytest

from tests.lib import ansible_run, containerd_bins
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration

REPO = ansible_run.REPO
AUDIT = os.path.join(REPO, "playbooks", "audit.yml")
RUNTIMECLASS = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: runc}\nhandler: runc\n"
CGROUPFS_KUBELET = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: cgroupfs\n"


def make_unusable(path, kind):
    """The main config at path turned into what containerd cannot read as a file."""
    if kind == "symlink-loop":
        os.symlink(path + ".other", path)
        os.symlink(path, path + ".other")
    elif kind == "directory":
        os.mkdir(path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dangling-symlink":
        os.symlink(path + ".nowhere", path)
    else:
        raise ValueError(kind)


GATHER = """- hosts: all
  gather_facts: false
  tasks:
    - gpurt.runtime_gate.containerd_config_info:
        containerd_bin: "{{ probe_bin }}"
        config_path: "{{ probe_config }}"
        on_refused: report
        timeout: 20
        kubelet_config_path: "{{ probe_dir }}/none.yaml"
        gather_running: false
      register: gathered
    - ansible.builtin.copy: {content: '{{ gathered | to_json }}', dest: '{{ probe_dir }}/result.json', mode: '0644'}
"""


@pytest.fixture(scope="module")
def gathered(tmp_path_factory, containerd):
    """gather(kind, version): the gather module's result for a main config made unusable that way, loaded by that
    release. Every case is a host of one run of GATHER (the releases not built are left out: their tests fail)."""
    base = tmp_path_factory.mktemp("gather")
    cases = [(kind, version) for kind in UNUSABLE_CAUSE for version in containerd_bins.ALL_VERSIONS]
    cases += [("dangling-symlink", version) for version in DANGLING_VERSIONS]
    hosts = {}
    for kind, version in cases:
        try:
            binary = containerd_bins.binary(version)
        except containerd_bins.NotBuilt:
            continue
        probe = base / ("%s-%s" % (kind, version))
        probe.mkdir()
        make_unusable(str(probe / "config.toml"), kind)
        hosts[probe.name] = {"probe_bin": binary, "probe_config": str(probe / "config.toml"), "probe_dir": str(probe)}
    playbook = base / "gather.yml"
    playbook.write_text(GATHER)
    run = ansible_run.playbook(str(playbook), ansible_run.write_inventory(str(base / "inv.json"), hosts), timeout=300)
    assert "Traceback" not in run.text, run
    assert run.rc == 0, run

    def gather(kind, version):
        containerd_bins.binary(version)  # NotBuilt, as when the case ran alone
        with open(str(base / ("%s-%s" % (kind, version)) / "result.json")) as handle:
            return json.load(handle)
    return gather


# --- class: a main config containerd cannot use is never "absent" ---------------------------

UNUSABLE_CAUSE = {
    "symlink-loop": "too many levels of symbolic links",
    "directory": "is a directory",
    "fifo": "is a FIFO, not a regular file",
}
DANGLING_VERSIONS = ("1.6", "2.1", "2.4")


@pytest.mark.parametrize("version", containerd_bins.ALL_VERSIONS)
@pytest.mark.parametrize("kind", sorted(UNUSABLE_CAUSE))
def test_a_config_containerd_cannot_read_is_refused_with_its_cause(gathered, version, kind):
    result = gathered(kind, version)
    assert result["config_exists"] is True
    assert result["refused"], result
    assert UNUSABLE_CAUSE[kind] in result["refused"]["cause"], result["refused"]
    if kind != "fifo":  # containerd's own line; a FIFO is never handed to it (it would block)
        assert result["refused"]["cause"].startswith("containerd: "), result["refused"]


@pytest.mark.parametrize("version", DANGLING_VERSIONS)
def test_a_dangling_symlink_is_absent_as_containerd_sees_it(gathered, version):
    result = gathered("dangling-symlink", version)
    assert result["config_exists"] is False and not result["refused"], result


@pytest.fixture(scope="module")
def unusable_audit(tmp_path_factory, containerd):
    """One audit of a node per UNUSABLE_CAUSE kind (the host is named after it): the run and its report."""
    base = tmp_path_factory.mktemp("unusable")
    hosts = {}
    for kind in sorted(UNUSABLE_CAUSE):
        node = Node(base / "nodes", kind, "2.1")
        node.write("var/lib/kubelet/config.yaml", CGROUPFS_KUBELET)
        make_unusable(node.config_path, kind)
        hosts[kind] = node.host_vars()
    manifests = base / "rc"
    manifests.mkdir()
    (manifests / "runc.yaml").write_text(RUNTIMECLASS)
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts, group_vars={"gpurt_node_labels": {}})
    report_dir = base / "report"
    run = ansible_run.playbook(AUDIT, inventory, {"gpurt_runtimeclasses_src": str(manifests),
                                                  "gpurt_report_dir": str(report_dir)}, check=True, timeout=300)
    with open(str(report_dir / "audit.json")) as handle:
        return run, json.load(handle)


@pytest.mark.parametrize("kind", sorted(UNUSABLE_CAUSE))
def test_the_audit_fails_a_node_whose_config_containerd_cannot_read(unusable_audit, kind):
    """Before: 'there is no config.toml: containerd runs on its built-in defaults' (info) and,
    with a cgroupfs kubelet, exit 0: a false pass on a node whose containerd cannot start."""
    run, report = unusable_audit
    assert "Traceback" not in run.text, run
    assert run.rc != 0 and run.recap[kind]["failed"] == 1, run
    entry = report["nodes"][kind]
    checks = [f["check"] for f in entry["findings"]]
    assert "config_refused" in checks, entry
    assert "config_defaults" not in checks, entry
    refused = [f for f in entry["findings"] if f["check"] == "config_refused"][0]
    assert UNUSABLE_CAUSE[kind] in json.dumps(refused), refused
    assert entry["failing"], entry


# --- class: a bad value is named at play start (variable, host, expected and actual type) ----

BAD_HOST_VALUES = [
    ("gpurt_node_labels", "pool=gpu", "gpurt_node_labels must be a mapping, got a string: 'pool=gpu'"),
    ("gpurt_node_labels", {"gpu": True}, "gpurt_node_labels['gpu'] must be a string, got a boolean: True"),
    ("gpurt_node_allocatable", ["8"], "gpurt_node_allocatable must be a mapping, got a list"),
    ("gpurt_node_name", {"a": 1}, "gpurt_node_name must be a string, got a mapping"),
    ("gpurt_containerd_config_path", "/etc/containerd/config.toml\n", "gpurt_containerd_config_path holds a control character"),
    ("gpurt_dropin_dirs", ["/etc/containerd/conf.d", None], "gpurt_dropin_dirs[1] must be a string, got null"),
    ("gpurt_containerd_bin", "x" * 70000, "gpurt_containerd_bin is 70000 characters long (at most 65536)"),
]


@pytest.mark.parametrize("variable,value,message", BAD_HOST_VALUES, ids=[v[0] + "-" + str(i) for i, v in enumerate(BAD_HOST_VALUES)])
def test_a_bad_host_variable_stops_the_play_at_start_naming_it(tmp_path, containerd, variable, value, message):
    """Set on the second node only: validate_argument_spec, run once on the first host, never saw it
    (and converts 'pool=gpu' to a dict, then the play read the string: "'_AnsibleTaggedStr' object
    has no attribute 'get'")."""
    nodes = [Node(tmp_path / "nodes", name, "2.1") for name in ("node-a", "node-b")]
    hosts = {}
    for node in nodes:
        node.write("etc/containerd/config.toml", "version = 3\n")
        hosts[node.name] = node.host_vars()
    hosts["node-b"][variable] = value
    manifests = tmp_path / "rc"
    manifests.mkdir()
    (manifests / "runc.yaml").write_text(RUNTIMECLASS)
    inventory = ansible_run.write_inventory(str(tmp_path / "hosts.json"), hosts)
    report_dir = tmp_path / "report"
    run = ansible_run.playbook(AUDIT, inventory, {"gpurt_runtimeclasses_src": str(manifests),
                                                  "gpurt_report_dir": str(report_dir)}, check=True, timeout=300)
    assert "Traceback" not in run.text and "object has no attribute" not in run.text, run
    assert run.rc != 0, run
    assert message in run.text and "(host node-b)" in run.text, run
    assert "Gather" not in run.out.split(message)[0].split("TASK [")[-1], run  # stopped at the first task
    with open(str(report_dir / "audit.json")) as handle:
        assert json.load(handle)["nodes"] == {}  # the not-judged report, nothing partial


# --- class: a RuntimeClass manifest the apiserver would refuse is named, never read as absent --

BAD_MANIFESTS = [
    ("handler: 123\n", "handler must be a string, got an integer: 123"),
    ("handler: nvidia\nscheduling:\n  nodeSelector: {gpu: true}\n",
     "scheduling.nodeSelector['gpu'] is a boolean, which the apiserver rejects: a label value is a string"),
    # Before: `quote it: "['gpu']"` and `quote it: "None"`, hints whose selector matches no Node
    ("handler: nvidia\nscheduling:\n  nodeSelector: {gpu: [gpu]}\n",
     "scheduling.nodeSelector['gpu'] is a list, which the apiserver rejects: a label value is a string"),
    ("handler: nvidia\nscheduling:\n  nodeSelector: {gpu: null}\n",
     "scheduling.nodeSelector['gpu'] is null, which means two things: the apiserver stores it as \"\""),
    ("handler: nvidia\nscheduling:\n  nodeSelector: {nvidia.com/gpu.present: tru e}\n",
     "scheduling.nodeSelector['nvidia.com/gpu.present'] 'tru e' is not a label value"),
    ("handler: nvidia\nscheduling:\n  nodeSelector: {NVIDIA.com/gpu: \"true\"}\n",
     "scheduling.nodeSelector key 'NVIDIA.com/gpu' is not a label key: its prefix 'NVIDIA.com' is not a DNS subdomain"),
    ("handler: nvidia\nscheduling:\n  nodeSelector: [gpu]\n", "scheduling.nodeSelector must be a mapping, got a list"),
    ("handler: nvidia\noverhead:\n  podFixed: 250m\n", "overhead.podFixed must be a mapping, got a string"),
]


BAD_MANIFEST_IDS = ["handler-int", "selector-bool", "selector-value-list", "selector-value-null",
                    "selector-value-syntax", "selector-key-syntax", "selector-list", "podfixed-str"]


@pytest.mark.parametrize("body,message", BAD_MANIFESTS, ids=BAD_MANIFEST_IDS)
def test_a_runtimeclass_manifest_of_the_wrong_type_fails_naming_the_field(tmp_path, containerd, body, message):
    """Before: `handler: 123` was "has no handler"; a nodeSelector value `true` selected no node, silently."""
    node = Node(tmp_path / "nodes", "node-x", "2.1")
    node.write("etc/containerd/config.toml", "version = 3\n")
    manifests = tmp_path / "rc"
    manifests.mkdir()
    (manifests / "bad.yaml").write_text("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: bad}\n" + body)
    inventory = ansible_run.write_inventory(str(tmp_path / "hosts.json"), {"node-x": node.host_vars()})
    run = ansible_run.playbook(AUDIT, inventory, {"gpurt_runtimeclasses_src": str(manifests)}, check=True, timeout=300)
    assert "Traceback" not in run.text, run
    assert run.rc != 0, run
    assert "RuntimeClass 'bad' (from %s): %s" % (manifests / "bad.yaml", message) in run.text, run
    assert "quote it" not in run.text, run

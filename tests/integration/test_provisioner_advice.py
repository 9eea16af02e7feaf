"""Issue 37: outcomes that are true on the node. playbooks/remediate.yml through the real ansible-playbook, on
nodes laid out from the projects' published configs (tests/fixtures/shapes), loaded by the real containerd:

- a main config a provisioner renders whole on its next run (kubespray, found by the files it leaves on the node;
  a role's `# Ansible managed` header) is written, and the outcome (role result, report, console) says that the
  imports line is lost at that run and names the tool's own input for the runtime;
- a generator's advice names only paths this node reads (k3s: the template it reads for the file's version, never
  a drop-in directory the generated file does not import);
- on containerd 1.x the keys the role's CRI drop-in pins are named in the report, and a main config a provisioner
  reconciles makes the host refused (edit_generated writes anyway).
"""
import json
import os

import pytest

from tests.integration.test_remediation_converges import host_vars, install, loaded, passed, remediate, restarts

pytestmark = pytest.mark.integration
KUBESPRAY_MARK = "etc/modules-load.d/kubespray-br_netfilter.conf"  # roles/kubernetes/node/tasks/main.yml
CONFIG = "/etc/containerd/config.toml"


def without_runtime(text, name):
    """The config as kubespray renders it with containerd_additional_runtimes: [] (its default): no table of name."""
    out, skipping = [], False
    for line in text.splitlines(True):
        if line.lstrip().startswith("["):
            skipping = any(".runtimes.%s%s" % (spelled, end) in line for spelled in (name, '"%s"' % name, "'%s'" % name)
                           for end in ("]", "."))
        if not skipping:
            out.append(line)
    return "".join(out)


def kubespray_node(tmp_path, shape, version, mark=True):
    node = install(tmp_path / "nodes", shape, version)
    with open(node.config_path) as handle:
        text = handle.read()
    node.write("etc/containerd/config.toml", without_runtime(text, "nvidia"))
    if mark:
        node.write(KUBESPRAY_MARK, "br_netfilter")
    return node


def notes_of(entry):
    return entry["remediation"].get("notes") or []


KUBESPRAY = [("kubespray-v4", "2.3"), ("kubespray-v3", "2.1")]
K3S = [("k3s", "1.7", "config.toml.tmpl"), ("k3s-v3", "2.1", "config-v3.toml.tmpl")]
K3S_DIR = "/var/lib/rancher/k3s/agent/etc/containerd"


@pytest.fixture(scope="module")
def shared(tmp_path_factory, containerd):
    """The single-node cases below as the hosts of one check run and one real run of remediate.yml (each host
    named after its case; each test reads its host's entry, lines and files), then the reconciled node's second
    real run with containerd_runtime_edit_generated."""
    base = tmp_path_factory.mktemp("advice")
    nodes, hosts = {}, {}
    for shape, version in KUBESPRAY:
        nodes[shape] = kubespray_node(base / shape, shape, version)
        hosts[shape] = host_vars(nodes[shape], shape)
    for shape, version, _template in K3S:
        node = nodes[shape] = install(base / shape / "nodes", shape, version)
        with open(node.path(K3S_DIR + "/config.toml")) as handle:
            text = handle.read()
        # as k3s renders it before NVIDIA's toolkit is installed (it adds the nvidia runtimes it finds in PATH)
        node.write(K3S_DIR + "/config.toml", without_runtime(without_runtime(text, "nvidia"), "nvidia-cdi"))
        hosts[shape] = host_vars(node, shape)
    node = nodes["managed"] = install(base / "managed" / "nodes", "kubeadm-documented-2.1", "2.1")
    with open(node.config_path) as handle:
        text = handle.read()
    node.write("etc/containerd/config.toml", "# Ansible managed\n" + text)
    hosts["managed"] = host_vars(node, "kubeadm-documented-2.1")
    node = nodes["pins-template"] = install(base / "pins-template" / "nodes", "k3s-operator-template-1.7", "1.7")
    hosts["pins-template"] = host_vars(node, "k3s-operator-template-1.7", nvidia=False, containerd_runtime_runtimes=[
        {"name": "kata", "binary_name": node.runtime_binary("usr/bin/kata-runtime")}], handlers=("kata",))
    node = nodes["pinned"] = install(base / "pinned" / "nodes", "kubeadm-documented-1.7", "1.7")
    hosts["pinned"] = host_vars(node, "kubeadm-documented-1.7")
    node = nodes["reconciled"] = kubespray_node(base / "reconciled", "kubespray", "1.7")
    hosts["reconciled"] = host_vars(node, "kubespray")
    out = {"nodes": nodes, "reconciled_before": open(node.config_path).read()}
    checked = [shape for shape, _v in KUBESPRAY] + [shape for shape, _v, _t in K3S] + ["pins-template", "reconciled"]
    really = [shape for shape, _v in KUBESPRAY] + [shape for shape, _v, _t in K3S] + ["managed", "pinned",
                                                                                      "reconciled"]
    out["check"] = remediate(base, dict((h, hosts[h]) for h in checked), check=True)
    out["real"] = remediate(base, dict((h, hosts[h]) for h in really))
    out["reconciled_after"] = (open(node.config_path).read(), restarts(node))
    (base / "edit").mkdir()
    out["edit"] = remediate(base / "edit", {"reconciled": dict(hosts["reconciled"],
                                                               containerd_runtime_edit_generated=True)})
    return out


@pytest.mark.parametrize("shape,version", KUBESPRAY)
def test_a_config_kubespray_renders_on_its_next_run_is_written_and_the_outcome_says_so(shared, shape, version):
    node = shared["nodes"][shape]
    for run, nodes in (shared["check"], shared["real"]):
        entry = nodes[shape]
        assert passed(entry) and entry["remediation"]["changed"], json.dumps(entry, indent=1)
        [note] = [n for n in notes_of(entry) if n.startswith("next run: ")]
        assert note.startswith("next run: %s is rendered whole by kubespray on its next run (kubespray left /%s on "
                               "the node): the imports line this run adds to it is lost then" % (CONFIG, KUBESPRAY_MARK)), note
        assert "containerd_additional_runtimes inventory variable" in note, note
        assert "%s: next run: %s is rendered whole by kubespray" % (shape, CONFIG) in run.text, run.text[-3000:]
    runtimes, _cri, _doc = loaded(node)
    assert "nvidia" in runtimes and restarts(node) == 1


def test_without_a_provisioners_evidence_nothing_is_said_of_a_next_run(tmp_path, containerd):
    node = kubespray_node(tmp_path, "kubespray-v4", "2.3", mark=False)
    run, nodes = remediate(tmp_path, {"k": host_vars(node, "kubespray-v4")}, check=True)
    entry = nodes["k"]
    assert passed(entry) and entry["remediation"]["changed"], json.dumps(entry, indent=1)
    assert not [n for n in notes_of(entry) if n.startswith("next run: ")] and "next run: " not in run.text


def test_an_ansible_managed_config_is_written_with_the_next_run_said_not_refused_as_regenerated(shared):
    """An Ansible role's template header (`{{ ansible_managed }}`, 'Ansible managed' by default): the file is rendered
    again when that play runs, not at a containerd start, so the role writes it and says what the next run undoes."""
    node, entry = shared["nodes"]["managed"], shared["real"][1]["managed"]
    assert passed(entry) and entry["remediation"]["changed"], json.dumps(entry, indent=1)
    [note] = [n for n in notes_of(entry) if n.startswith("next run: ")]
    assert "is rendered whole by Ansible on its next run (%s says '# Ansible managed')" % CONFIG in note, note
    assert "the variables of the Ansible role that templates this file" in note, note
    assert "nvidia" in loaded(node)[0]


# --- advice names what this node reads -----------------------------------------------------------------------

@pytest.mark.parametrize("shape,version,template", K3S)
def test_k3s_advice_names_the_template_it_reads_for_this_version_and_no_dir_it_does_not_import(
        shared, shape, version, template):
    node, base = shared["nodes"][shape], K3S_DIR
    for _run, nodes in (shared["check"], shared["real"]):
        entry = nodes[shape]
        assert entry["status"] == "REFUSED", json.dumps(entry, indent=1)
        reason = entry["reason"]
        assert "the documented way: %s/%s beside the generated file" % (base, template) in reason, reason
        assert "config.toml.d" not in reason and "config-v3.toml.d" not in reason, reason
    assert restarts(node) == 0 and not os.path.exists(node.path(base + "/" + template))


def test_1x_a_generator_that_renders_at_every_start_gets_a_pins_note_with_its_template(shared):
    """k3s with the GPU Operator's template on 1.7: changed through the template (as before), and the report says
    that the role's CRI drop-in pins k3s' keys as this run loads them."""
    entry = shared["check"][1]["pins-template"]
    notes = " ".join(notes_of(entry))
    assert "pins: /var/lib/rancher/k3s/agent/etc/containerd/config.toml is rendered again by" in notes, \
        json.dumps(entry, indent=1)


# --- containerd 1.x: what the role's CRI drop-in pins ----------------------------------------------------------

def test_1x_the_pinned_keys_are_in_the_report_and_on_the_console(shared):
    node, (run, nodes) = shared["nodes"]["pinned"], shared["real"]
    entry = nodes["pinned"]
    assert passed(entry), json.dumps(entry, indent=1)
    pinned = entry["remediation"]["pinned"]
    assert pinned["path"].endswith("/zz-gpurt_cri.toml") and pinned["from"] == [node.config_path], pinned
    assert 'plugins."io.containerd.grpc.v1.cri".sandbox_image' in pinned["keys"], pinned
    [note] = [n for n in notes_of(entry) if n.startswith("pins: ")]
    assert "pins %d keys as they are now" % len(pinned["keys"]) in note and node.config_path in note, note
    assert "pinned: pins: containerd 1.x replaces the whole CRI section per file" in run.text, run.text[-3000:]


def test_1x_a_main_config_a_provisioner_reconciles_is_refused_naming_the_pinned_keys(shared):
    node, before = shared["nodes"]["reconciled"], shared["reconciled_before"]
    for _run, nodes in (shared["check"], shared["real"]):
        entry = nodes["reconciled"]
        assert entry["status"] == "REFUSED", json.dumps(entry, indent=1)
        reason = entry["reason"]
        assert "containerd 1.x takes the whole CRI section from the last file that declares it" in reason, reason
        assert "is rendered by kubespray on its next run" in reason and "containerd_additional_runtimes" in reason
        keys = entry["remediation"]["pinned"]["keys"]
        assert "pinning %d keys" % len(keys) in reason and 'in [plugins."io.containerd.grpc.v1.cri"]: ' in reason, reason
        for key in keys:  # every pinned key is named in the refusal
            assert key.split('"io.containerd.grpc.v1.cri".', 1)[1] in reason, (key, reason)
        assert 'plugins."io.containerd.grpc.v1.cri".sandbox_image' in keys, keys
        assert "set containerd_runtime_edit_generated to write anyway" in reason, reason
    assert shared["reconciled_after"] == (before, 0)  # the config as it was, no restart

    entry = shared["edit"][1]["reconciled"]  # then with containerd_runtime_edit_generated
    assert passed(entry), json.dumps(entry, indent=1)
    notes = " ".join(notes_of(entry))
    assert "pins: %s is rendered again by kubespray" % CONFIG in notes and "next run: " in notes, notes
    assert "nvidia" in loaded(node)[0] and restarts(node) == 1

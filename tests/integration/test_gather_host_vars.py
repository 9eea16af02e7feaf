"""containerd_config_info host_vars=true: the options a task leaves out come from the host's gpurt_*
variables (as the audit's gather does), an option set in the task wins, a variable that is a template
is resolved per host, and a bad value fails naming the variable the user set."""
import json

import pytest

from tests.lib import ansible_run
from tests.lib.fake_containerd import FakeContainerd
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration

GATHER = """\
- hosts: all
  gather_facts: false
  tasks:
    - gpurt.runtime_gate.containerd_config_info: %s
      register: gathered
      ignore_errors: true
    - ansible.builtin.copy:
        content: '{{ gathered | to_json }}'
        dest: '%s/{{ inventory_hostname }}.json'
        mode: '0644'
      delegate_to: localhost
"""


def node(tmp_path, name, version, dropin=None):
    n = Node(tmp_path / "nodes", name, version)
    main = "version = 3\n" if version.startswith("2") else "version = 2\n"
    n.write("etc/containerd/config.toml", main + 'imports = ["{root}/etc/containerd/conf.d/*.toml"]\n')
    if dropin:
        n.write("etc/containerd/conf.d/%s" % dropin, "version = 3\n" if version.startswith("2") else "version = 2\n")
    n.write("var/lib/kubelet/config.yaml", "cgroupDriver: systemd\n")
    return n


def gather(tmp_path, args, hosts, group_vars=None):
    playbook = tmp_path / "gather.yml"
    playbook.write_text(GATHER % (json.dumps(args), tmp_path))
    inventory = ansible_run.write_inventory(str(tmp_path / "inv.json"), hosts, group_vars=group_vars)
    run = ansible_run.playbook(str(playbook), inventory)
    assert "Traceback" not in run.text, run
    results = {}
    for name in hosts:
        with open(str(tmp_path / ("%s.json" % name))) as handle:
            results[name] = json.load(handle)
    return run, results


def audit(tmp_path, hosts):
    """The check-mode audit of hosts against the demo RuntimeClasses: the run and its report's nodes."""
    inventory = ansible_run.write_inventory(str(tmp_path / "inv.json"), hosts)
    reports = tmp_path / "reports"
    run = ansible_run.playbook(
        ansible_run.REPO + "/playbooks/audit.yml", inventory, check=True,
        extra_vars={"gpurt_runtimeclasses_src": ansible_run.REPO + "/inventory/demo/runtimeclasses",
                    "gpurt_report_dir": str(reports)})
    assert "Traceback" not in run.text, run
    with open(str(reports / "audit.json")) as handle:
        return run, json.load(handle)["nodes"]


def test_host_vars_fill_the_options_from_each_host(tmp_path):
    a = node(tmp_path, "node-a", "2.1", dropin="99-a.toml")
    b = node(tmp_path, "node-b", "1.7")
    hosts = {
        "node-a": {"gpurt_containerd_bin": a.binary, "gpurt_containerd_config_path": a.config_path,
                   "gpurt_kubelet_config_path": a.kubelet_config_path},
        # a template, resolved for this host
        "node-b": {"gpurt_containerd_bin": b.binary, "node_root": b.root, "gpurt_kubelet_config_path": None,
                   "gpurt_containerd_config_path": "{{ node_root }}/etc/containerd/config.toml",
                   "gpurt_dropin_dirs": ["{{ node_root }}/etc/containerd/elsewhere.d"]},
    }
    run, results = gather(tmp_path, {"host_vars": True, "on_refused": "report"}, hosts)
    assert run.rc == 0, run
    a_result, b_result = results["node-a"], results["node-b"]
    assert (a_result["containerd_bin"], a_result["config_path"]) == (a.binary, a.config_path)
    assert a_result["version_major"] == 2
    assert [f["path"] for f in a_result["files"]] == [a.config_path, a.path("etc/containerd/conf.d/99-a.toml")]
    assert a_result["kubelet_config"]["path"] == a.kubelet_config_path
    assert a_result["kubelet_config"]["content"] == "cgroupDriver: systemd\n"
    assert (b_result["containerd_bin"], b_result["config_path"]) == (b.binary, b.config_path)
    assert b_result["dropin_dirs"] == [b.path("etc/containerd/elsewhere.d")]
    assert b_result["version_major"] == 1
    # a variable the host does not have, or has as null, leaves the module's default
    assert b_result["kubelet_config"]["path"] == "/var/lib/kubelet/config.yaml"
    assert a_result["cdi_spec_dirs_read"] == b_result["cdi_spec_dirs_read"] == ["/etc/cdi", "/var/run/cdi"]


def test_host_vars_timeout_comes_from_the_host(tmp_path):
    hanging = FakeContainerd(tmp_path, dump_prefix="sleep 60")
    config = tmp_path / "config.toml"
    config.write_text("version = 3\n")
    hosts = {"node-a": {"gpurt_containerd_bin": str(hanging.path), "gpurt_containerd_config_path": str(config),
                        "gpurt_containerd_timeout": 1}}
    run, results = gather(tmp_path, {"host_vars": True}, hosts)
    assert results["node-a"]["failed"] is True
    assert "did not finish within 1 s" in results["node-a"]["msg"], results["node-a"]["msg"]


def test_host_vars_an_option_set_in_the_task_wins(tmp_path):
    a = node(tmp_path, "node-a", "2.1")
    hosts = {"node-a": {"gpurt_containerd_bin": "/nonexistent/containerd", "gpurt_containerd_config_path": a.config_path}}
    run, results = gather(tmp_path, {"host_vars": True, "containerd_bin": a.binary}, hosts)
    assert run.rc == 0, run
    assert results["node-a"]["containerd_bin"] == a.binary


def test_host_vars_off_the_variables_are_not_read(tmp_path):
    a = node(tmp_path, "node-a", "2.1")
    hosts = {"node-a": {"gpurt_containerd_bin": "/nonexistent/containerd"}}
    run, results = gather(tmp_path, {"containerd_bin": a.binary, "config_path": a.config_path}, hosts)
    assert run.rc == 0, run
    assert results["node-a"]["containerd_bin"] == a.binary


def test_host_vars_a_bad_value_names_the_variable(tmp_path):
    a = node(tmp_path, "node-a", "2.1")
    hosts = {"node-a": {"gpurt_containerd_bin": a.binary, "gpurt_containerd_config_path": a.config_path,
                        "gpurt_containerd_timeout": "soon"}}
    run, results = gather(tmp_path, {"host_vars": True}, hosts)
    result = results["node-a"]
    assert result["failed"] is True
    assert result["msg"].startswith("node-a: ")
    assert "'timeout'" in result["msg"] and "(host variables: timeout from gpurt_containerd_timeout)" in result["msg"]


def test_host_vars_an_undefined_reference_names_the_variable(tmp_path):
    node(tmp_path, "node-a", "2.1")
    hosts = {"node-a": {"gpurt_containerd_bin": "{{ no_such_variable }}/containerd"}}
    run, results = gather(tmp_path, {"host_vars": True}, hosts)
    result = results["node-a"]
    assert result["failed"] is True
    assert result["msg"].startswith("node-a: cannot resolve the host variable gpurt_containerd_bin: "), result["msg"]
    assert "no_such_variable" in result["msg"]


def test_host_vars_must_be_a_boolean(tmp_path):
    node(tmp_path, "node-a", "2.1")
    run, results = gather(tmp_path, {"host_vars": "sometimes"}, {"node-a": {}})
    result = results["node-a"]
    assert result["failed"] is True
    assert result["msg"] == "node-a: host_vars must be a boolean, not 'sometimes'"


def test_host_vars_in_the_audit_a_bad_type_leaves_that_node_not_checked(tmp_path):
    """The audit's gather reads the host variables: a node whose variable has the wrong type is NOT
    CHECKED with the variable named, the run fails, and the other nodes are judged."""
    good = node(tmp_path, "a-good", "2.1")
    hosts = {
        "a-good": {"gpurt_containerd_bin": good.binary, "gpurt_containerd_config_path": good.config_path},
        "c-bad-type": {"gpurt_containerd_bin": good.binary, "gpurt_containerd_timeout": "soon"},
    }
    run, nodes = audit(tmp_path, hosts)
    assert run.rc == 2, run
    assert nodes["a-good"]["status"] in ("OK", "FINDINGS")
    assert nodes["c-bad-type"]["status"] == "NOT CHECKED"
    assert nodes["c-bad-type"]["reason"].endswith("(host variables: timeout from gpurt_containerd_timeout)")
    assert run.recap["c-bad-type"]["failed"] == 1


def test_an_unresolvable_host_variable_stops_the_run_at_play_start_naming_the_host(tmp_path):
    """A gpurt_* variable that cannot be templated is found by the controller check before any node is
    read: the run is NOT JUDGED and the message names the host and the undefined name."""
    good = node(tmp_path, "a-good", "2.1")
    hosts = {
        "a-good": {"gpurt_containerd_bin": good.binary, "gpurt_containerd_config_path": good.config_path},
        "b-bad-var": {"gpurt_containerd_bin": "{{ no_such_variable }}/containerd"},
    }
    run, nodes = audit(tmp_path, hosts)
    assert run.rc == 2, run
    assert nodes == {}
    assert run.gate_lines()[0].startswith("NOT JUDGED: Check the controller and the run's variables (a-good): host "
                                          "b-bad-var: a gpurt_* variable cannot be resolved: "), run.gate_lines()
    # ansible-core 2.19 names the undefined variable; older cores leave the template as it was
    assert ("'no_such_variable' is undefined" in run.gate_lines()[0]
            or "gpurt_containerd_bin = '{{ no_such_variable }}/containerd' keeps a template" in run.gate_lines()[0])
    assert "Gather the loaded containerd config" not in run.out


def test_the_judge_templates_each_hosts_variables_in_that_hosts_context(tmp_path):
    """The judge reads the registered gather result as it is, and templates a host's own variables
    for that host (not for the host it runs on): here the kubelet cgroup driver of each host."""
    plain = node(tmp_path, "plain", "2.1")  # kubelet systemd, runc without SystemdCgroup: a finding
    hosts = {
        "a-first": {"gpurt_containerd_bin": plain.binary, "gpurt_containerd_config_path": plain.config_path,
                    "gpurt_kubelet_config_path": plain.kubelet_config_path, "driver_here": "systemd",
                    "gpurt_kubelet_cgroup_driver": "{{ driver_here }}"},
        "b-second": {"gpurt_containerd_bin": plain.binary, "gpurt_containerd_config_path": plain.config_path,
                     "gpurt_kubelet_config_path": plain.kubelet_config_path, "driver_here": "cgroupfs",
                     "gpurt_kubelet_cgroup_driver": "{{ driver_here }}"},
        "c-unset": {"gpurt_containerd_bin": plain.binary, "gpurt_containerd_config_path": plain.config_path,
                    "gpurt_kubelet_config_path": plain.kubelet_config_path},
    }
    _run, nodes = audit(tmp_path, hosts)

    def cgroup(host):
        return [f["evidence"]["kubelet_config"] for f in nodes[host]["findings"] if f["check"] == "cgroup_driver"]

    assert cgroup("a-first") == ["variable"]
    assert cgroup("b-second") == []
    assert cgroup("c-unset") == [plain.kubelet_config_path]
    assert nodes["a-first"]["runtimes"] == nodes["b-second"]["runtimes"] == ["runc"]

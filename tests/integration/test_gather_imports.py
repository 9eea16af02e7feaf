"""Issue 34: the gather's per-host cost on the node. An AnsiballZ module imports the collection's module_utils
from a zip and zipimport keeps no bytecode: every source it imports is compiled again on every host (twice, measured on
Python 3.8 to 3.13). So a gather imports only what its node needs: the fragment loader only on a node with a config
fragment nothing imports, the systemd unit reader only on a node with a bare binary name to look up in containerd's
PATH, and the declared shape of a gathered (_gathered) never, it is for readers. Observed
through the real module in ansible-playbook on real containerd nodes, by the node's own `python -X importtime`."""
import json
import os
import stat
import sys

import pytest

from tests.integration.test_audit_playbook import V3_DROPIN, healthy
from tests.lib import ansible_run

pytestmark = pytest.mark.integration

MODULE_UTILS = "ansible_collections.gpurt.runtime_gate.plugins.module_utils."
RARE = (MODULE_UTILS + "_node_fragment_load", MODULE_UTILS + "_gathered", MODULE_UTILS + "_systemd_units")

PLAYBOOK = """\
- hosts: all
  gather_facts: false
  tasks:
    - gpurt.runtime_gate.containerd_config_info:
        host_vars: true
        on_refused: report
      register: gathered
    - ansible.builtin.copy:
        content: "{{ gathered | to_json }}"
        dest: "%s"
        mode: "0644"
      delegate_to: localhost
      check_mode: false
"""


def gather_imports(tmp_path, node):
    """(what the gather's Python on the node imported, the registered result), from one check-mode run."""
    log = tmp_path / "importtime.log"
    python = tmp_path / "python"
    python.write_text('#!/bin/sh\nexec "%s" -X importtime "$@" 2>>"%s"\n' % (sys.executable, log))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    playbook = tmp_path / "gather.yml"
    playbook.write_text(PLAYBOOK % (tmp_path / "result.json"))
    inventory = ansible_run.write_inventory(str(tmp_path / "inv.json"),
                                            {node.name: node.host_vars(ansible_python_interpreter=str(python))})
    run = ansible_run.playbook(str(playbook), inventory, check=True)
    assert run.rc == 0 and run.recap[node.name]["failed"] == 0, run
    with open(str(log)) as handle:
        imported = set(line.rsplit("|", 1)[1].strip() for line in handle if line.startswith("import time:"))
    with open(str(tmp_path / "result.json")) as handle:
        return imported, json.load(handle)


def test_a_plain_node_compiles_no_rare_path_code(tmp_path, make_node):
    imported, gathered = gather_imports(tmp_path, healthy(make_node("plain", "2.1")))
    assert MODULE_UTILS + "_node_gather" in imported  # the log is the module's
    assert sorted(m for m in RARE if m in imported) == []
    assert gathered["fragment_loads"] == {"loaded": 0, "cap": 8, "left_out": []}
    assert gathered["version_major"] == 2 and not gathered.get("failed")


def test_a_node_with_a_fragment_nothing_imports_loads_it(tmp_path, make_node):
    node = healthy(make_node("stray", "2.1"))
    # .conf: the imports glob (*.toml) does not match it, so containerd never loads it
    stray = node.write("etc/containerd/conf.d/50-stray.conf", V3_DROPIN % ("stray", "stray"))
    imported, gathered = gather_imports(tmp_path, node)
    assert MODULE_UTILS + "_node_fragment_load" in imported
    assert MODULE_UTILS + "_gathered" not in imported
    assert gathered["fragment_loads"] == {"loaded": 1, "cap": 8, "left_out": []}
    assert [os.path.basename(f["path"]) for f in gathered["files"] if f["role"] == "unreferenced"] == [
        os.path.basename(stray)]


def test_a_node_with_a_bare_binary_name_reads_containerds_unit_for_its_path(tmp_path, make_node):
    node = healthy(make_node("bare", "2.1"))
    bare = V3_DROPIN.replace('"{root}/usr/bin/nvidia-container-runtime"', '"nvidia-container-runtime"')
    node.write("etc/containerd/conf.d/60-bare.toml", bare % ("bare", "bare"))
    imported, gathered = gather_imports(tmp_path, node)
    assert MODULE_UTILS + "_systemd_units" in imported
    assert gathered["paths"]["nvidia-container-runtime"]["path_from"] == "systemd's default PATH for services"

"""Issue 26 item 2, issue 35 item 1: output a person reads, measured on a real ansible-playbook audit of
many failing local nodes, without the repository's ansible.cfg (ansible-core's default callback, JSON
results, no summary callback): per node one line (its failed line), the Summary with each distinct
finding once with its fix and the nodes it applies to, one [ERROR] block for the whole run, at most 3
lines per node outside the Summary (the gather's ok, the failed line, the recap). GPURT_OUTPUT_NODES sets
the node count: 100 by default, past the 60 lines the total allows whatever the node count, so one more line
per node fails the total too (each node's module run costs about 0.25 CPU seconds: 500 took two minutes)."""
import os
import re

import pytest

from tests.lib import ansible_run
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
AUDIT = os.path.join(ansible_run.REPO, "playbooks", "audit.yml")
NODES = int(os.environ.get("GPURT_OUTPUT_NODES", "100"))
# A node whose toolkit drop-in misspelt the runtime: the class asks for nvidia, the node loads nvida.
TYPO = ('version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n', 'version = 3\n'
        '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvida]\n'
        '  runtime_type = "io.containerd.runc.v2"\n'
        '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvida.options]\n'
        '  BinaryName = "{root}/usr/bin/nvidia-container-runtime"\n')
RC = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n"


def _block(out, start):
    """The lines of the task whose banner starts with `start`, up to the next banner."""
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    end = next((i for i in range(first + 1, len(lines)) if re.match(r"^(TASK|PLAY|RUNTIME GATE) ", lines[i])), len(lines))
    return lines[first:end]


@pytest.fixture(scope="module")
def failing_fleet(tmp_path_factory, containerd):
    base = tmp_path_factory.mktemp("many")
    hosts = {}
    for index in range(NODES):
        node = Node(base, "gpu-%03d" % index, "2.1")
        node.runtime_binary()
        node.write("etc/containerd/config.toml", TYPO[0])
        node.write("etc/containerd/conf.d/99-nvidia.toml", TYPO[1])
        hosts[node.name] = node.host_vars()
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts)
    (base / "rc.yaml").write_text(RC)
    (base / "empty.cfg").write_text("[defaults]\n")
    run = ansible_run.playbook(AUDIT, inventory, {"gpurt_runtimeclasses_src": str(base / "rc.yaml")}, check=True,
                               extra_env={"ANSIBLE_CONFIG": str(base / "empty.cfg"), "ANSIBLE_FORKS": "10"})
    return {"run": run, "hosts": sorted(hosts)}


def test_every_failing_node_fails_once(failing_fleet):
    run = failing_fleet["run"]
    assert run.rc == 2, run
    assert sorted(run.recap) == failing_fleet["hosts"]
    assert all(run.recap[h]["failed"] == 1 and run.recap[h]["ignored"] == 0 for h in failing_fleet["hosts"]), run
    # ansible-core 2.19 prints a failed task's message with a source snippet once per distinct message.
    assert run.out.count("[ERROR]") <= 1 and "RUNTIME GATE" not in run.out and "Traceback" not in run.text, run


def test_each_node_one_line_then_each_finding_once_with_its_fix(failing_fleet):
    """Issue 35: each failing node's line is its failed line; the Summary prints the finding the nodes share
    once, with a count and a few of their names."""
    run = failing_fleet["run"]
    hosts = failing_fleet["hosts"]
    for host in hosts:
        failed = [line for line in run.out.splitlines() if line.startswith("failed: [%s] " % host)]
        assert len(failed) == 1 and failed[0].startswith(
            "failed: [%s] (item=%s: 1 finding (1 error); MISSING=nvidia) => " % (host, host)), failed
    summary = [line.strip() for line in _block(run.out, "TASK [Summary]")]
    finding = [line for line in summary if "missing_handler" in line]
    assert len(finding) == 1 and finding[0].startswith(
        '"ERROR missing_handler on %d nodes (%s and %d more): RuntimeClass nvidia asks for handler \'nvidia\', which '
        'the loaded containerd config of each node does not have (loaded runtimes: nvida, runc)'
        % (NODES, ", ".join(hosts[:3]), NODES - 3)), summary
    assert "(fix: rename runtime 'nvida' to 'nvidia'" in finding[0], finding
    assert run.out.count("asks for handler 'nvidia'") == 1, run
    last = [line for line in summary if line.startswith('"checked ')]
    assert last == ['"checked %d of %d node(s): 0 OK, %d with findings, 0 not checked; %d failing '
                    '(fail_on=error)"' % ((NODES,) * 4)], summary[-5:]


def test_at_most_three_lines_per_node_besides_the_summary(failing_fleet):
    run = failing_fleet["run"]
    lines = run.out.splitlines()
    summary = len(_block(run.out, "TASK [Summary]"))
    per_node = dict((host, 0) for host in failing_fleet["hosts"])
    summary_lines = set(_block(run.out, "TASK [Summary]"))
    for line in lines:
        if line in summary_lines:
            continue
        for host in set(re.findall(r"gpu-\d{3}", line)):  # lines, not names
            per_node[host] += 1
    # the first host also carries the run-once tasks' lines ("ok: [gpu-000 -> localhost]"), counted in `fixed`
    run_once_host = failing_fleet["hosts"][0]
    others = dict((host, count) for host, count in per_node.items() if host != run_once_host)
    assert max(others.values()) <= 3, sorted(others.items(), key=lambda item: -item[1])[:3]
    assert per_node[run_once_host] <= 3 + 12, per_node[run_once_host]
    # banners, the run-once tasks and the single [ERROR] block: a fixed number of lines, whatever the node count
    fixed = 60
    assert len(lines) <= 3 * NODES + summary + fixed, (len(lines), NODES, summary)

"""Issue 35 item 1: console output at fleet scale, measured on a real check-mode ansible-playbook audit of
50 local nodes (GPURT_FLEET_NODES) that all lack the handler their RuntimeClass asks for, with the
repository's ansible.cfg (the summary callback enabled, as a user of the checkout runs it). One line per
node, each distinct finding once with the nodes it applies to (a count and a few names), drift named by
its group: at most 3 lines per node plus 40, every failing node and every distinct finding still named.
The JSON report keeps everything per node."""
import json
import os
import re

import pytest

from tests.lib import ansible_run
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
AUDIT = os.path.join(ansible_run.REPO, "playbooks", "audit.yml")
NODES = int(os.environ.get("GPURT_FLEET_NODES", "50"))
RC = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n"
# Every node imports a drop-in directory that does not exist (dead_imports_glob); the odd nodes load kata
# besides runc, so the even ones lack a runtime the rest of their group loads (node_drift).
MAIN = 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n'
KATA = ('version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n'
        '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kata]\n'
        '  runtime_type = "io.containerd.kata.v2"\n')


def _audit(base, count, kata_every=None):
    """A check-mode audit of `count` nodes in group gpu; with kata_every, every that-many-th node (from the
    second) loads kata besides runc. The nodes of a kind share one config, as a fleet's nodes share theirs:
    the same paths on every node."""
    plain = Node(base, "config-plain", "2.1")
    plain.write("etc/containerd/config.toml", MAIN)
    kata = Node(base, "config-kata", "2.1")
    kata.write("etc/containerd/config.toml", KATA)
    hosts = {}
    for index in range(count):
        node = Node(base, "gpu-%03d" % index, "2.1")
        config = kata if kata_every and index % kata_every else plain
        hosts[node.name] = node.host_vars(gpurt_containerd_config_path=config.config_path)
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts, groups={"gpu": sorted(hosts)})
    (base / "rc.yaml").write_text(RC)
    run = ansible_run.playbook(AUDIT, inventory, {"gpurt_runtimeclasses_src": str(base / "rc.yaml"),
                                                  "gpurt_report_dir": str(base / "reports")}, check=True)
    with open(str(base / "reports" / "audit.json")) as handle:
        doc = json.load(handle)
    return {"run": run, "hosts": sorted(hosts), "report": doc}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, containerd):
    """Every node lacks nvidia and imports a drop-in directory that does not exist."""
    return _audit(tmp_path_factory.mktemp("fleet"), NODES)


@pytest.fixture(scope="module")
def drifted(tmp_path_factory, containerd):
    """Eight nodes, the odd ones load kata: the even ones lack a runtime the rest of their group loads."""
    return _audit(tmp_path_factory.mktemp("drift"), 8, kata_every=2)


def test_at_most_three_lines_per_node_plus_forty(fleet):
    run = fleet["run"]
    assert run.rc == 2 and "Traceback" not in run.text, run
    assert all(run.recap[h]["failed"] == 1 for h in fleet["hosts"]), run
    lines = run.out.splitlines()
    assert len(lines) <= 3 * NODES + 40, (len(lines), run)


def test_every_failing_node_named_once_with_its_line(fleet):
    run = fleet["run"]
    before = run.out[:run.out.rindex("PLAY RECAP")]  # the recap names each once, the summary a few
    for index, host in enumerate(fleet["hosts"]):
        named = [line for line in before.splitlines() if re.search(r"\b%s\b" % host, line)]
        # the gather's ok line and its failed line, which carries its verdict and MISSING handlers
        verdict = [line for line in named if line.startswith("failed: [%s] (item=%s: " % (host, host))]
        assert len(verdict) == 1, named
        assert verdict[0].startswith("failed: [%s] (item=%s: 2 findings (1 error, 1 warning); MISSING=nvidia) => "
                                     % (host, host)), verdict
        assert len(named) <= 2 + (12 if index == 0 else 0), named


def test_each_distinct_finding_once_with_its_nodes(fleet):
    gate = fleet["run"].gate_lines()
    hosts = fleet["hosts"]
    many = "on %d nodes (%s and %d more): " % (NODES, ", ".join(hosts[:3]), NODES - 3)
    assert [line.split(": ", 1)[0] + ": " for line in gate[:2]] == [
        "ERROR missing_handler " + many.split(": ")[0] + ": ", "WARNING dead_imports_glob " + many.split(": ")[0] + ": "]
    assert gate[0].startswith("ERROR missing_handler " + many + "RuntimeClass nvidia asks for handler 'nvidia', "
                              "which the loaded containerd config of each node does not have (loaded runtimes: runc) "
                              "(fix: register runtime 'nvidia'"), gate
    # each distinct finding's text once in the whole output
    out = fleet["run"].out
    assert out.count("asks for handler 'nvidia'") == 1 and out.count("matches no file") == 1, out
    assert "[WARNING]" not in out, out
    assert gate[-1] == ("checked %d of %d node(s): 0 OK, %d with findings, 0 not checked; %d failing (fail_on=error)"
                        % ((NODES,) * 4)), gate


def test_drift_named_by_its_group_not_by_its_peers(drifted):
    run = drifted["run"]
    odd, even = drifted["hosts"][1::2], drifted["hosts"][0::2]
    drift = [line for line in run.gate_lines() if "node_drift" in line]
    assert drift == ["WARNING node_drift on 4 nodes (%s and 1 more): lacks runtime(s) kata that other nodes of "
                     "group gpu load (kata on 4 nodes: %s and 1 more (the report lists all)) (fix: converge the "
                     "group with the gpurt.runtime_gate.containerd_runtime role)"
                     % (", ".join(even[:3]), ", ".join(odd[:3]))], run.gate_lines()
    assert run.out.count("node_drift") == 1, run
    # two configs: each of their findings once, with the nodes it applies to
    assert run.out.count("asks for handler 'nvidia'") == 2 and run.out.count("matches no file") == 2, run


def test_the_report_keeps_everything_per_node(drifted):
    nodes = drifted["report"]["nodes"]
    assert sorted(nodes) == drifted["hosts"]
    odd = drifted["hosts"][1::2]
    for index, host in enumerate(drifted["hosts"]):
        checks = set(f["check"] for f in nodes[host]["findings"])
        assert {"dead_imports_glob", "missing_handler"} <= checks and ("node_drift" in checks) == (index % 2 == 0)
        drift = [f for f in nodes[host]["findings"] if f["check"] == "node_drift"]
        if drift:
            assert drift[0]["evidence"]["loaded_by"] == {"kata": odd}
            assert host in drift[0]["message"] or "kata on 4 nodes" in drift[0]["message"]

"""A fleet-wide change cannot start a storm (issue 33): every Node changes at once (a new bootID each, as after a
fleet-wide reboot), and the real ansible-rulebook with the collection's rulebook starts at most
gpurt_watch_max_concurrent re-audits at a time, and every Node is re-proved. Some of the Nodes are inventory
hosts whose containerd (a real one, wrapped to log when each call starts and ends) the re-audits run; the
others map to no host: they are fenced, named, and never re-audited against another host.

The size proves the principle, not a fleet: 16 Nodes at a bound of 4 (four times the bound, so the source
must split the storm into full batches), 10 of them hosts (2.5 times the bound, so the re-audits could overlap
past it: ansible runs 50 forks here, the bound is ours) and 6 unmapped (they share batches with hosts).
"""
import re
import time

import pytest

from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.nodes import Node
from tests.lib.rulebook import Rulebook

pytestmark = pytest.mark.integration
MAX_CONCURRENT = 4
NODES = ["fleet-%03d" % i for i in range(16)]
HOSTS = NODES[:10]
CONFIG = '''version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
'''
WRAPPER = """#!/bin/sh
# the real containerd, with the time each call starts and ends (to count re-audits running at once)
echo "start {host} $(date +%s.%N)" >> {log}
"{binary}" "$@"
rc=$?
echo "end {host} $(date +%s.%N)" >> {log}
exit $rc
"""


@pytest.fixture(scope="module")
def lab(private_cluster, tmp_path_factory):
    base = tmp_path_factory.mktemp("event-scale")
    api = Api(private_cluster.kubeconfig)
    calls = str(base / "containerd-calls.log")
    hosts = {}
    for name in HOSTS:
        node = Node(base, name, "2.1")
        node.write("etc/containerd/config.toml", CONFIG)
        wrapper = node.write("usr/local/bin/containerd", WRAPPER.format(host=name, log=calls, binary=node.binary),
                             executable=True)
        hosts[name] = node.host_vars(gpurt_containerd_bin=wrapper, gpurt_crictl_bin=str(base / "no-crictl"))
    for name in NODES:
        api.node(name, cpu="4", handlers=["runc"])
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts, group_vars={
        "gpurt_report_dir": str(base / "reports"), "gpurt_allow_no_runtimeclasses": True})
    try:
        yield {"api": api, "cluster": private_cluster, "base": base, "inventory": inventory, "calls": calls}
    finally:
        api.close()


def busiest(calls_log):
    """The most hosts whose re-audit (first containerd call to last, in one batch) ran at the same time."""
    events = []
    with open(calls_log) as handle:
        for line in handle:
            kind, host, at = line.split()
            events.append((float(at), 0 if kind == "end" else 1, host))
    running, most = {}, 0
    for _at, starting, host in sorted(events):
        running[host] = running.get(host, 0) + (1 if starting else -1)
        most = max(most, sum(1 for count in running.values() if count > 0))
    return most


def test_a_fleet_changing_at_once_is_re_proved_a_bounded_batch_at_a_time(lab):
    rulebook = Rulebook(lab["base"] / "rulebook", lab["inventory"], {
        "gpurt_kubeconfig": lab["cluster"].kubeconfig, "gpurt_watch_settle": 2,
        "gpurt_watch_max_concurrent": MAX_CONCURRENT}, extra_env={"ANSIBLE_FORKS": "50"})  # the bound is ours
    rulebook.start()
    try:
        for name in NODES:  # a fleet-wide reboot: a new bootID on every Node
            lab["api"].core.patch_node_status(name, {"status": {"nodeInfo": {"bootID": "after-reboot"}}})
        deadline = time.time() + 600
        while time.time() < deadline:
            seen = set(re.findall(r'"(fleet-\d{3}): (?:verified labels kept|no verified label)', rulebook.log()))
            if seen >= set(NODES):
                break
            time.sleep(1)
        log = rulebook.log()
    finally:
        rulebook.stop()
    assert set(re.findall(r'"(fleet-\d{3}): (?:verified labels kept|no verified label)', log)) == set(NODES), log[-6000:]
    # every batch the source emitted holds at most MAX_CONCURRENT Nodes, and the re-audits never overlapped more
    batches = [line.split(", ") for line in re.findall(r"runtime_handlers - INFO - node_changed: (.*)", log)]
    assert sorted(n for batch in batches for n in batch) == NODES, batches
    assert max(len(batch) for batch in batches) == MAX_CONCURRENT, batches
    assert busiest(lab["calls"]) <= MAX_CONCURRENT
    assert busiest(lab["calls"]) >= 2  # the bound was reached, not a batch of one at a time
    # the unmapped Nodes were named and not re-audited
    assert "%s: no verified label to remove; no inventory host maps to it" % NODES[-1] in " ".join(log.split())

"""Only proof makes a label (issue 38), on a real kube-apiserver of this module's own
(tests/lib/real_cluster.py) with local nodes whose configs a real containerd loads, through the real
audit.yml with gpurt_label_nodes=true. The running view is the Node's status.runtimeHandlers (no CRI
socket answers here). The apiserver's own request counters (/metrics, apiserver_request_total) count
what the run sent to Nodes, independently of what the module says it sent.

- The prefix runtime-gate.gpurt.io/ is ours: a label a person set (another field manager, by update),
  or one a second server-side apply manager co-owns, is removed from a judged Node, and the run names
  who had set it.
- A Node whose loaded runtime cannot be a label name is that Node's finding: every other Node, and
  every removal, is still written; then the run fails naming it.
- Writes are pinned to the Node judged: its uid comes from the audit's own list, and a Node re-created
  between the list and the write is reported and not labeled. Two hosts mapped to one Node are refused.
- One list, no per-Node GET; no write for a Node whose labels match and whose check time is recent;
  a settled second run sends nothing. A Node no host judged is not written, only reported stale.
- node_labels' checked_at: a fence removes a label without making the others look fresher.
"""
import json
import os
import re
import sys
import time
import urllib.request

import pytest

from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
PLAYBOOKS = os.path.join(ansible_run.REPO, "playbooks")
PREFIX = "runtime-gate.gpurt.io/"
CHECKED_AT = PREFIX + "checked-at"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# A runtime name no label name can carry (63 characters at most); the apiserver takes it in
# status.runtimeHandlers, and containerd loads it.
LONG = "n" * 64
V2 = '''version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
'''
RUNTIME = '''[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.{name}]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.{name}.options]
    BinaryName = "{root}/usr/bin/nvidia-container-runtime"
'''
# What each node loads and runs when settled; the RuntimeClass nvidia selects pool=gpu.
SETTLED = {"lp-gpu-1": ["runc", "nvidia"], "lp-gpu-2": ["runc", "nvidia"], "lp-cpu-1": ["runc"]}
POOL = {"lp-gpu-1": "gpu", "lp-gpu-2": "gpu", "lp-cpu-1": "cpu"}
# Re-creates a Node between the audit's list and its label write: the node's containerd, which the
# gather runs after the list, deletes its Node and makes a new one (new uid, only runc), once.
RECREATE = '''import sys, time
sys.path.insert(0, %(repo)r)
from kubernetes.client.rest import ApiException
from tests.lib.cluster_objects import Api
api = Api(%(kubeconfig)r)
api.core.delete_node(%(name)r)
while True:
    try:
        api.core.read_node(%(name)r)
    except ApiException as exc:
        if exc.status == 404:
            break
        raise
    time.sleep(0.1)
api.node(%(name)r, labels={"pool": "gpu"}, cpu="4", handlers=["runc"])
'''


def set_node(lab, name, handlers):
    """The node's containerd loads HANDLERS, and its Node reports them in status.runtimeHandlers."""
    node = lab["nodes"][name]
    runtimes = "".join(RUNTIME.replace("{name}", h) for h in handlers if h != "runc")
    node.write("etc/containerd/config.toml", V2 + runtimes)
    lab["api"].node(name, labels={"pool": POOL[name]}, cpu="4", handlers=handlers)


@pytest.fixture(scope="module")
def lab(private_cluster, tmp_path_factory):
    base = tmp_path_factory.mktemp("labels-by-proof")
    api = Api(private_cluster.kubeconfig)
    api.runtimeclass("nvidia", "nvidia", selector={"pool": "gpu"})
    lab = {"api": api, "cluster": private_cluster, "base": base, "nodes": {}}
    hosts = {}
    for name in sorted(SETTLED):
        node = Node(base, name, "2.1")
        node.runtime_binary()
        lab["nodes"][name] = node
        # the node's containerd is a wrapper that re-creates its Node once when armed
        marker = node.path("recreate-armed")
        script = node.write("recreate.py", RECREATE % {"repo": ansible_run.REPO, "name": name,
                                                       "kubeconfig": private_cluster.kubeconfig})
        # (the gather runs it more than once at a time: one rename claims the marker)
        wrapper = node.write("bin/containerd", '#!/bin/sh\nif mv "%s" "%s.taken" 2>/dev/null; then '
                             '"%s" "%s" || exit 1; fi\nexec "%s" "$@"\n'
                             % (marker, marker, sys.executable, script, node.binary),
                             executable=True)
        hosts[name] = node.host_vars(gpurt_crictl_bin=str(base / "no-crictl"), gpurt_containerd_bin=wrapper)
        set_node(lab, name, SETTLED[name])
    lab["hosts"] = hosts
    lab["inventory"] = ansible_run.write_inventory(str(base / "hosts.json"), hosts)
    yield lab
    api.close()


def settle(lab):
    """Every node back to SETTLED, with labels that are its proof."""
    for name, handlers in SETTLED.items():
        set_node(lab, name, handlers)
    result = audit(lab)
    assert result.rc == 0, result
    for name, handlers in SETTLED.items():
        assert ours(labels(lab, name)) == dict((PREFIX + h, "true") for h in handlers)


def audit(lab, check=False, inventory=None, **extra):
    variables = {"gpurt_kubeconfig": lab["cluster"].kubeconfig, "gpurt_label_nodes": True}
    variables.update(extra)
    result = ansible_run.playbook(os.path.join(PLAYBOOKS, "audit.yml"), inventory or lab["inventory"], variables,
                                  check=check)
    with open(os.environ.get("GPURT_LABELS_LOG", os.devnull), "a") as handle:
        handle.write(result.out + result.err)
    return result


def labels(lab, name):
    return lab["api"].core.read_node(name).metadata.labels


def annotations(lab, name):
    return lab["api"].core.read_node(name).metadata.annotations or {}


def ours(found):
    return dict((k, v) for k, v in (found or {}).items() if k.startswith(PREFIX))


def node_requests(lab):
    """{verb: count} of the requests on Node objects (not their status) the apiserver has served, by its
    own counters: GET (one Node), LIST, PATCH, APPLY, ... but WATCH: the counter counts a watch when it ends,
    and kube-scheduler's and kwok's Node informers end theirs every 5 to 10 minutes (client-go), now and then
    inside an audit's few seconds; the audit itself never watches."""
    cluster = lab["cluster"]
    with urllib.request.urlopen(cluster.server + "/metrics", context=cluster.admin_ssl_context(), timeout=10) as answer:
        text = answer.read().decode()
    counts = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        fields = dict(re.findall(r'(\w+)="([^"]*)"', line[:line.index("}")]))
        if fields.get("resource") == "nodes" and fields.get("subresource") == "" and fields.get("verb") != "WATCH":
            counts[fields["verb"]] = counts.get(fields["verb"], 0) + int(float(line.rsplit(" ", 1)[1]))
    return counts


def sent(before, after):
    return dict((verb, after.get(verb, 0) - before.get(verb, 0)) for verb in set(after) | set(before)
                if after.get(verb, 0) != before.get(verb, 0))


def counted_audit(lab, **kwargs):
    before = node_requests(lab)
    result = audit(lab, **kwargs)
    return result, sent(before, node_requests(lab))


def patch_label(lab, name, key, value, manager):
    """As `kubectl label` does: a patch (an update operation) under another field manager."""
    lab["api"].core.patch_node(name, {"metadata": {"labels": {key: value}}}, field_manager=manager)


def apply_label(lab, name, key, value, manager):
    """As a GitOps tool does: a server-side apply of the label under its own field manager."""
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {key: value}}}
    lab["api"].core.patch_node(name, body, field_manager=manager, _content_type="application/apply-patch+yaml")


# ----- scale: one list, no GET, no write for a Node that already carries its proof -----------------------

def test_one_write_per_node_then_a_settled_run_sends_nothing(lab):
    first, requests = counted_audit(lab)
    assert first.rc == 0, first
    # the audit's one list; a patch for each Node whose labels differed; no GET of a Node
    assert requests.get("GET", 0) == 0 and requests.get("LIST") == 1, requests
    assert requests.get("PATCH", 0) + requests.get("APPLY", 0) <= len(SETTLED), requests
    for name, handlers in SETTLED.items():
        assert ours(labels(lab, name)) == dict((PREFIX + h, "true") for h in handlers)
        assert CHECKED_AT in annotations(lab, name)
    second, requests = counted_audit(lab)
    assert second.rc == 0 and second.changed() == 0, second
    assert requests == {"LIST": 1}, requests
    assert "wrote 0 of 3 judged Node(s), 0 apiserver request(s)" in second.flat, second
    assert second.flat.count("labels unchanged") == 3, second


def test_an_old_check_time_is_refreshed_and_a_node_no_host_judged_is_only_reported(lab):
    settle(lab)
    old = time.strftime(TIME_FORMAT, time.gmtime(time.time() - 7 * 3600))  # older than a quarter of 24h
    lab["api"].core.patch_node("lp-gpu-1", {"metadata": {"annotations": {CHECKED_AT: old}}})
    three_days = time.strftime(TIME_FORMAT, time.gmtime(time.time() - 3 * 86400))
    lab["api"].node("lp-nohost", labels={PREFIX + "nvidia": "true"}, handlers=["runc"])
    lab["api"].core.patch_node("lp-nohost", {"metadata": {"annotations": {CHECKED_AT: three_days}}})
    unjudged = lab["api"].core.read_node("lp-nohost").metadata.resource_version
    try:
        result, requests = counted_audit(lab)
        assert requests.get("PATCH", 0) == 1 and requests.get("GET", 0) == 0, requests
        assert "lp-gpu-1: verified handlers nvidia, runc (confirmed by node status); labels unchanged, check time " \
               "refreshed" in result.flat, result
        assert annotations(lab, "lp-gpu-1")[CHECKED_AT] > old
        assert result.changed() == 0, result  # the check time alone is no change
        # the Node no host covers keeps its labels (the run did not judge it), reported as stale
        assert lab["api"].core.read_node("lp-nohost").metadata.resource_version == unjudged
        assert "lp-nohost: verified labels (%snvidia) were checked at %s" % (PREFIX, three_days) in result.flat, result
    finally:
        lab["api"].core.delete_node("lp-nohost")


# ----- the prefix is ours ---------------------------------------------------------------------------------

def test_a_label_a_person_set_is_removed_and_the_run_names_who_set_it(lab):
    settle(lab)
    patch_label(lab, "lp-cpu-1", PREFIX + "nvidia", "true", "kubectl-label")
    checked = audit(lab, check=True)
    assert "lp-cpu-1: verified handlers runc (confirmed by node status); labels would be changed: " \
           "-nvidia (set by kubectl-label (Update))" in checked.flat, checked
    assert ours(labels(lab, "lp-cpu-1"))[PREFIX + "nvidia"] == "true"  # check mode wrote nothing
    result = audit(lab)
    assert result.rc == 0, result
    assert "lp-cpu-1: verified handlers runc (confirmed by node status); labels changed: " \
           "-nvidia (set by kubectl-label (Update))" in result.flat, result
    assert ours(labels(lab, "lp-cpu-1")) == {PREFIX + "runc": "true"}
    assert labels(lab, "lp-cpu-1")["pool"] == "cpu"  # no other label is touched


def test_a_label_a_second_apply_manager_co_owns_goes_when_the_handler_does(lab):
    settle(lab)
    apply_label(lab, "lp-gpu-2", PREFIX + "nvidia", "true", "gitops")
    owners = [m.manager for m in lab["api"].core.read_node("lp-gpu-2").metadata.managed_fields
              if PREFIX + "nvidia" in json.dumps(m.fields_v1)]
    assert "gitops" in owners and "gpurt-runtime-gate-labels" in owners, owners
    set_node(lab, "lp-gpu-2", ["runc"])  # the runtime is gone
    result = audit(lab)
    assert result.rc == 2, result  # lp-gpu-2 now misses nvidia, which its class needs
    assert "lp-gpu-2: verified handlers runc (confirmed by node status); labels changed: " \
           "-nvidia (set by gitops (Apply))" in result.flat, result
    assert ours(labels(lab, "lp-gpu-2")) == {PREFIX + "runc": "true"}


# ----- per-node isolation -----------------------------------------------------------------------------------

def test_a_node_that_cannot_be_labeled_fails_the_run_after_every_other_node_is_written(lab):
    settle(lab)
    set_node(lab, "lp-cpu-1", ["runc", LONG])
    patch_label(lab, "lp-gpu-2", PREFIX + "kata", "true", "kubectl-label")
    try:
        result = audit(lab)
        text = result.flat
        assert result.rc == 2, result
        # that node: what it can carry, and a finding for what it cannot
        assert ours(labels(lab, "lp-cpu-1")) == {PREFIX + "runc": "true"}
        assert "lp-cpu-1: not labeled for a verified runtime: handler '%s' cannot form the label key" % LONG in text
        # every other node written, the removal included
        assert ours(labels(lab, "lp-gpu-2")) == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}
        assert "-kata (set by kubectl-label (Update))" in text, result
        # the audit itself passed every node: the labeling alone fails the run, at its end
        assert [h for h in SETTLED if result.recap[h]["failed"]] == [], result.recap
        assert "TASK [Fail the run, naming each Node not labeled as proven]" in result.out, result
        assert result.recap["localhost"]["failed"] == 1, result.recap
        # and the verdict printed last says so
        assert "labels: 1 judged Node(s) not labeled as proven (every other judged Node carries its proof)" \
            in result.gate_lines(), result.gate_lines()
        assert any(line.startswith("labels: lp-cpu-1: not labeled for a verified runtime: handler '%s'" % LONG)
                   for line in result.gate_lines()), result.gate_lines()
    finally:
        set_node(lab, "lp-cpu-1", SETTLED["lp-cpu-1"])


# ----- writes pinned to the Node judged --------------------------------------------------------------------

def test_a_node_recreated_between_the_list_and_the_write_is_reported_and_not_labeled(lab):
    settle(lab)
    # labels for the run to write (a Node whose labels already match gets no write, so nothing to pin)
    lab["api"].core.patch_node("lp-gpu-2", {"metadata": {"labels": {PREFIX + "nvidia": None, PREFIX + "runc": None}}})
    judged = lab["api"].core.read_node("lp-gpu-2").metadata.uid
    with open(lab["nodes"]["lp-gpu-2"].path("recreate-armed"), "w"):
        pass
    result = audit(lab)
    now = lab["api"].core.read_node("lp-gpu-2").metadata
    assert now.uid != judged, "the wrapper did not re-create the Node"
    assert "lp-gpu-2: re-created since it was judged (uid %s): not labeled" % judged in result.flat, result
    assert ours(now.labels) == {} and CHECKED_AT not in (now.annotations or {})
    assert result.rc == 2, result
    assert "TASK [Fail the run, naming each Node not labeled as proven]" in result.out, result
    assert "labels: lp-gpu-2: re-created since it was judged (uid %s): not labeled" % judged in result.gate_lines()
    # the others were written as usual
    assert ours(labels(lab, "lp-gpu-1")) == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}


def test_two_hosts_mapped_to_one_node_are_refused_naming_both(lab):
    settle(lab)
    hosts = dict(lab["hosts"])
    alias = Node(lab["base"], "lp-alias", "2.1")
    alias.write("etc/containerd/config.toml", V2)
    hosts["lp-alias"] = alias.host_vars(gpurt_crictl_bin=str(lab["base"] / "no-crictl"), gpurt_node_name="lp-gpu-1")
    inventory = ansible_run.write_inventory(str(lab["base"] / "alias.json"), hosts)
    result = audit(lab, inventory=inventory)
    # lp-alias also fails the audit (its containerd lacks nvidia, which lp-gpu-1's pool needs): the nodes'
    # verdict ends the run, and the labeling's problem is in the verdict printed last
    assert result.rc == 2, result
    assert any(line.startswith("labels: lp-gpu-1: inventory hosts lp-alias and lp-gpu-1 all map to this Node "
                               "(gpurt_node_name)") for line in result.gate_lines()), result.gate_lines()
    # neither host's proof is the Node's: it earns no label; the other Nodes are written as usual
    assert ours(labels(lab, "lp-gpu-1")) == {}
    assert ours(labels(lab, "lp-gpu-2")) == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}


# ----- the fence's interface: node_labels with uid and checked_at --------------------------------------------

FENCE = """
- hosts: localhost
  gather_facts: false
  tasks:
    - gpurt.runtime_gate.node_labels:
        kubeconfig: %(kubeconfig)s
        nodes: [{name: lp-gpu-1, uid: "%(uid)s", labels: {"runtime-gate.gpurt.io/runc": "true"}}]
        checked_at: "%(checked_at)s"
      register: fenced
    - ansible.builtin.copy:
        content: "{{ fenced | to_json }}"
        dest: %(out)s
"""


def fence(lab, uid, checked_at):
    out = lab["base"] / "fenced.json"
    playbook = lab["base"] / "fence.yml"
    playbook.write_text(FENCE % {"kubeconfig": lab["cluster"].kubeconfig, "uid": uid, "checked_at": checked_at,
                                 "out": out})
    result = ansible_run.playbook(str(playbook), "localhost,", {"ansible_python_interpreter": sys.executable,
                                                                "ansible_connection": "local"})
    return result, (json.loads(out.read_text()) if out.exists() and result.rc == 0 else None)


def test_a_fence_removes_a_label_and_keeps_the_check_time_it_gives(lab):
    settle(lab)
    node = lab["api"].core.read_node("lp-gpu-1").metadata
    checked_at = node.annotations[CHECKED_AT]
    result, fenced = fence(lab, "not-" + node.uid, checked_at)
    assert result.rc == 2 and "re-created since it was judged" in result.text, result
    assert ours(labels(lab, "lp-gpu-1")) == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}
    result, fenced = fence(lab, node.uid, "yesterday")
    assert result.rc == 2 and "checked_at must be a UTC time in the annotation's format" in result.text, result
    result, fenced = fence(lab, node.uid, checked_at)
    assert result.rc == 0, result
    assert [(n["action"], n["removed"]) for n in fenced["nodes"]] == [("labeled", [PREFIX + "nvidia"])], fenced
    assert fenced["api_requests"] == 2, fenced  # the fence names no listed state: one GET, one patch
    assert ours(labels(lab, "lp-gpu-1")) == {PREFIX + "runc": "true"}
    assert annotations(lab, "lp-gpu-1")[CHECKED_AT] == checked_at

"""The event source gpurt.runtime_gate.runtime_handlers under faults (issue 33), in the real ansible-rulebook
against a real kube-apiserver of this module alone. A rulebook written here uses the collection's source and
only prints what it emits, so every event can be counted:

- a change made right after the apiserver restarts is still seen (the watch goes on from the last version
  it saw, or lists again after 410 Gone), and a watch from a version the apiserver no longer keeps lists again;
- no credential appears in an event or a log line at the highest verbosity;
- a Node that lists no handler (containerd 1.x) is named once and never fenced;
- a bad argument stops the source with one line naming it.
"""
import os
import time

import pytest

from tests.lib.cluster_objects import Api
from tests.lib.rulebook import Rulebook

pytestmark = pytest.mark.integration
PREFIX = "runtime-gate.gpurt.io/"
PRINTING = """---
- name: Print what the gate's source emits
  hosts: all
  sources:
    - gpurt.runtime_gate.runtime_handlers:
        gpurt_kubeconfig: "{{ gpurt_kubeconfig | default(none) }}"
        gpurt_k8s_api_key: "{{ gpurt_k8s_api_key | default(none) }}"
        gpurt_watch_settle: "{{ gpurt_watch_settle | default(1) }}"
        gpurt_watch_timeout: "{{ gpurt_watch_timeout | default(300) }}"
        gpurt_watch_max_concurrent: 5
  rules:
    - name: Print each event
      condition: event.type is defined
      action:
        debug:
          msg: "EVENT {{ event.type }} {{ event.node | default(event.nodes) }} {{ event.reasons | default('') }}"
"""


@pytest.fixture(scope="module")
def lab(private_cluster, tmp_path_factory):
    base = tmp_path_factory.mktemp("event-source")
    api = Api(private_cluster.kubeconfig)
    rulebook_path = base / "printing.yml"
    rulebook_path.write_text(PRINTING)
    inventory = base / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    localhost:\n      ansible_connection: local\n")
    try:
        yield {"api": api, "cluster": private_cluster, "base": base, "rulebook": str(rulebook_path),
               "inventory": str(inventory)}
    finally:
        api.close()


def verified(api, name, handlers, live, kwok):
    api.node(name, cpu="4", handlers=live, kwok=kwok)
    checked = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    api.core.patch_node(name, {"metadata": {"labels": dict((PREFIX + h, "true") for h in handlers),
                                            "annotations": {PREFIX + "checked-at": checked}}})


def labels_of(api, name):
    return dict((k, v) for k, v in (api.core.read_node(name).metadata.labels or {}).items() if k.startswith(PREFIX))


def start(lab, workdir, variables, verbosity=1, wait_for="watching the [0-9]* Nodes of"):
    rulebook = Rulebook(lab["base"] / workdir, lab["inventory"], variables, verbosity=verbosity,
                        rulebook=lab["rulebook"])
    return rulebook.start(wait_for=wait_for)


def test_changes_are_kept_across_an_apiserver_restart(lab):
    api, cluster = lab["api"], lab["cluster"]
    verified(api, "restart-1", ["runc", "nvidia"], ["runc", "nvidia"], cluster.kwok)
    rulebook = start(lab, "restart", {"gpurt_kubeconfig": cluster.kubeconfig})
    try:
        cluster.restart_apiserver(downtime=1.0)
        # right away, before the source's watch is back: the change must still reach it
        api_after = Api(cluster.kubeconfig)
        try:
            api_after.node("restart-1", cpu="4", handlers=["runc"], kwok=cluster.kwok)
            rulebook.wait_for(r"fenced node restart-1: lost nvidia \(fenced\)", 120)
            assert labels_of(api_after, "restart-1") == {PREFIX + "runc": "true"}
            assert rulebook.count(r"lost the watch of the Nodes") >= 1
            rulebook.wait_for(r"EVENT node_changed \['restart-1'\]", 60)
        finally:
            api_after.close()
    finally:
        rulebook.stop()


def test_a_watch_the_apiserver_no_longer_keeps_lists_again_and_misses_nothing(lab):
    """A watch request renewed every second from a version the apiserver keeps; then, while the source is
    between two watches, enough writes that its version falls out of the apiserver's window: 410 Gone, a
    new list, and the change made in the gap is seen."""
    api, cluster = lab["api"], lab["cluster"]
    verified(api, "gone-1", ["runc", "nvidia"], ["runc", "nvidia"], cluster.kwok)
    rulebook = start(lab, "gone", {"gpurt_kubeconfig": cluster.kubeconfig, "gpurt_watch_timeout": 1})
    try:
        cluster.restart_apiserver(downtime=3.0)
        api_after = Api(cluster.kubeconfig)
        try:
            api_after.node("gone-1", cpu="4", handlers=["runc"], kwok=cluster.kwok)
            rulebook.wait_for(r"fenced node gone-1: lost nvidia \(fenced\)", 120)
        finally:
            api_after.close()
        log = rulebook.log()
        assert "listing the Nodes again" in log or "lost the watch of the Nodes" in log, log[-4000:]
    finally:
        rulebook.stop()


def test_no_credential_in_an_event_or_a_log_line_at_the_highest_verbosity(lab):
    api, cluster = lab["api"], lab["cluster"]
    token = cluster.token("gpurt-admin")
    kubeconfig = cluster.kubeconfig_for("gpurt-admin", auth="token")
    verified(api, "secret-1", ["runc", "nvidia"], ["runc", "nvidia"], cluster.kwok)
    rulebook = start(lab, "secret", {"gpurt_kubeconfig": kubeconfig}, verbosity=2)
    try:
        api.node("secret-1", cpu="4", handlers=["runc"], kwok=cluster.kwok)
        rulebook.wait_for(r"fenced node secret-1: lost nvidia", 60)
        rulebook.wait_for(r"EVENT node_changed \['secret-1'\]", 60)
    finally:
        rulebook.stop()
    log = rulebook.log()
    assert "EVENT handler_lost secret-1" in log
    assert token not in log
    # the token given as the source's api_key: a wrong one is refused by the apiserver, never shown
    rulebook = start(lab, "secret-key", {"gpurt_kubeconfig": kubeconfig, "gpurt_k8s_api_key": "wrong-" + token},
                     verbosity=2, wait_for=None)
    try:
        rulebook.wait_for(r"lost the watch of the Nodes \(401", 60)
    finally:
        rulebook.stop()
    assert token not in rulebook.log()


def test_a_node_without_a_live_signal_is_named_once_and_never_fenced(lab):
    api, cluster = lab["api"], lab["cluster"]
    api.node("silent-1x", cpu="4", handlers=None, kwok=cluster.kwok)
    api.core.patch_node("silent-1x", {"metadata": {"labels": {PREFIX + "nvidia": "true"}, "annotations": {
        PREFIX + "checked-at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}})
    rulebook = start(lab, "silent", {"gpurt_kubeconfig": cluster.kubeconfig})
    try:
        rulebook.wait_for(r"node silent-1x lists no runtime handler", 60)
        api.core.patch_node("silent-1x", {"metadata": {"labels": {"touched": "yes"}}})
        time.sleep(3)
    finally:
        rulebook.stop()
    assert rulebook.count(r"node silent-1x lists no runtime handler") == 1
    assert "fenced node silent-1x" not in rulebook.log()
    assert labels_of(api, "silent-1x") == {PREFIX + "nvidia": "true"}


@pytest.mark.parametrize("variables, message", [
    ({"gpurt_watch_settle": "soon"}, "gpurt_watch_settle must be a number"),
    ({"gpurt_kubeconfig": "/nonexistent/kubeconfig"}, "cannot start"),
])
def test_a_bad_argument_stops_the_source_naming_it(lab, variables, message):
    rulebook = start(lab, "bad-%s" % sorted(variables)[0], variables, wait_for=None)
    try:
        rulebook.proc.wait(120)
    finally:
        rulebook.stop()
    log = rulebook.log()
    assert message in log, log[-3000:]
    assert "Traceback" not in log.split("cannot start")[0], log[-3000:]
    assert os.path.exists(rulebook.log_path)

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Proving that kube-apiserver enforces the RuntimeClass selectors: its RuntimeClass admission plugin (on by
default) copies a class's scheduling.nodeSelector into every pod of the class; without it the selector gate
changes nothing. A dry-run create of a RuntimeClass passes admission (so the plugin, when on, has handled a
create on this apiserver), then the apiserver's admission metrics must name the plugin. Read-only but for
that dry run, so check mode proves it too."""

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.admission_apply import (
    PROBE_HANDLER, probe_runtimeclass)
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.admission_metrics import (
    RUNTIMECLASS_PLUGIN, plugins_seen, runtimeclass_verdict)
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.gate_names import GATE_FIELD_MANAGER
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.module_session import module_session

ASSUME_HINT = "set gpurt_selector_enforcement=assume to gate the RuntimeClasses with their enforcement unproven"


def argument_spec():
    spec = dict(kube.AUTH_ARG_SPEC)
    spec.update(kube.REQUEST_ARG_SPEC)
    spec.update(field_manager=dict(type="str", default=GATE_FIELD_MANAGER))
    return spec


def probe(session, field_manager):
    """Send a dry-run create of a RuntimeClass through admission; None, or what refused it (a policy's refusal
    comes after the mutating plugins, so the metrics count it all the same)."""
    try:
        session.create("runtimeclasses", probe_runtimeclass(PROBE_HANDLER), field_manager, dry_run=True)
    except kube.KubeError as exc:
        return str(exc)
    return None


def prove(session, field_manager):
    """(enforced, proof or why not, {plugin: operations} seen): enforced is True, False (the plugin is off) or
    None (unknown)."""
    refused = probe(session, field_manager)
    data = session.request("GET", "/metrics", "reading kube-apiserver's admission metrics", "get", "metrics",
                           raw=True)[1]
    seen = plugins_seen(data.decode("utf-8", "replace"))
    enforced, why = runtimeclass_verdict(seen)
    where, plugins = "kube-apiserver at %s" % session.server, seen or {}
    if enforced:
        return True, "proven: %s: %s" % (where, why), plugins
    if enforced is False:
        return False, ("the RuntimeClass selectors are not enforced: %s does not run its %s admission plugin (%s), "
                       "so pods of a gated class are not given its nodeSelector and may land on Nodes that never "
                       "verified its handler: turn the plugin on (it is on by default: remove %s from "
                       "--disable-admission-plugins)" % (where, RUNTIMECLASS_PLUGIN, why, RUNTIMECLASS_PLUGIN)), plugins
    after = "after a dry-run create of a RuntimeClass%s" % (" (refused: %s)" % refused if refused else "")
    return None, ("the RuntimeClass selectors' enforcement is not proven: %s, %s: %s; %s"
                  % (after, where, why, ASSUME_HINT)), plugins


def run(module):
    result = dict(changed=False, enforced=None, proof=None, plugins={}, api_requests=0)
    with module_session(module, result) as session:
        try:
            enforced, proof, seen = prove(session, module.params["field_manager"])
        except kube.KubeError as exc:
            raise kube.KubeError("the RuntimeClass selectors' enforcement is not proven: %s; %s" % (exc, ASSUME_HINT),
                                 status=exc.status, resource=exc.resource)
        result.update(enforced=enforced, proof=proof, plugins=seen)
    if not enforced:
        module.fail_json(msg=proof, **result)
    module.exit_json(**result)

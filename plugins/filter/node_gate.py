# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters verified_labels, stale_labels, label_line, label_lines, label_failures (verified labels), prevent_gate,
prevent_inputs_refused, prevent_plan, prevent_summary, admission_params and admission_mode (prevent.yml): the
planning of the verified handler labels on Nodes (plugin_utils/_node_labels); their documentation is in the .yml
file of each filter's name."""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _node_labels, _prevent


def verified_labels(report_nodes, cluster_nodes):
    try:
        return _node_labels.plan(report_nodes, cluster_nodes)
    except ValueError as exc:
        raise AnsibleFilterError("verified_labels: %s" % exc)


def stale_labels(cluster_nodes, max_age="24h"):
    try:
        return _node_labels.stale(cluster_nodes, max_age)
    except ValueError as exc:
        raise AnsibleFilterError("stale_labels: %s" % exc)


def label_line(result, plan, check_mode=False):
    try:
        return _node_labels.result_line(result, plan, check_mode)
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError("label_line: not a node_labels result: %s" % exc)


def label_lines(result, plan, check_mode=False):
    try:
        return _node_labels.result_lines(result, plan, check_mode)
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError("label_lines: not a node_labels result: %s" % exc)


def label_failures(result):
    return _node_labels.failures(result)


def prevent_gate(runtimeclasses, nodes, names=None, mode="warn", max_age="24h", namespace=None, deadline=None):
    """Validate prevent.yml's inputs, then plan the RuntimeClass selectors."""
    try:
        _prevent.validate_inputs(_mode(mode), names, max_age, namespace, deadline)
        return _prevent.gate(runtimeclasses, nodes, names, max_age)
    except ValueError as exc:
        raise AnsibleFilterError("prevent_gate: %s" % exc)


def prevent_inputs_refused(mode, names=None, max_age="24h", namespace=None, deadline=None):
    """Why prevent.yml refuses one of its inputs, or '': a value, so the run can stop and say it once."""
    try:
        _prevent.validate_inputs(_mode(mode), names, max_age, namespace, deadline)
    except ValueError as exc:
        return str(exc)
    return ""


def prevent_plan(runtimeclasses, nodes, names=None, mode="warn", max_age="24h"):
    """prevent.yml's whole plan in one pass over the listed Nodes: {gate, stale, no_proof, params}."""
    try:
        mode = _mode(mode)
        _prevent.validate_inputs(mode, names, max_age)
        judged = _prevent.proof(nodes, max_age)
        stale = judged[1]
        # one judgment of the Nodes' proof at one time for every part: a label on the max-age edge cannot be
        # fresh for the gate and stale for the parameters
        return {"gate": _prevent.gate(runtimeclasses, nodes, names, max_age, judged=judged),
                "stale": _prevent.stale_lines(stale), "stale_nodes": stale, "mode": mode,
                "no_proof": _prevent.no_proof(nodes, names, mode, max_age, judged=judged),
                "params": {} if mode == "off" else _prevent.admission_params(nodes, runtimeclasses, max_age,
                                                                             judged=judged)}
    except ValueError as exc:
        raise AnsibleFilterError("prevent_plan: %s" % exc)


def prevent_summary(plan, admission=None, check_mode=False, selectors=None, selector_mode="prove"):
    """The RUNTIME GATE lines of a prevent.yml run from its plan, its admission_policy result and its
    runtimeclass_admission_info result."""
    try:
        return _prevent.summary_lines(plan["gate"], plan["stale_nodes"], plan["mode"], admission, check_mode,
                                      selectors, selector_mode)
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError("prevent_summary: not a prevent_plan result: %s" % exc)


def admission_params(nodes, runtimeclasses=None, max_age="24h"):
    try:
        return _prevent.admission_params(nodes, runtimeclasses, max_age)
    except ValueError as exc:
        raise AnsibleFilterError("admission_params: %s" % exc)


def admission_mode(value):
    """gpurt_admission_mode as a string: YAML reads an unquoted off as false."""
    mode = _mode(value)
    try:
        _prevent.validate_inputs(mode, None)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))
    return mode


def _mode(value):
    return "off" if value is False else str(value)


class FilterModule(object):
    def filters(self):
        return {"verified_labels": verified_labels, "stale_labels": stale_labels, "label_line": label_line,
                "label_lines": label_lines, "label_failures": label_failures,
                "prevent_gate": prevent_gate, "prevent_plan": prevent_plan,
                "prevent_inputs_refused": prevent_inputs_refused,
                "prevent_summary": prevent_summary, "admission_params": admission_params,
                "admission_mode": admission_mode}

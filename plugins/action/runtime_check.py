# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cross-check one host's loaded containerd config against RuntimeClasses, on the controller."""

from ansible.errors import AnsibleActionFail

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _audit as audit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _report as report
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._controller_action import ControllerAction

ARGUMENT_SPEC = dict(
    gathered=dict(type="dict"),
    dump=dict(type="str"),
    dump_path=dict(type="path"),
    runtimeclasses=dict(type="list", elements="dict", required=True),
    node_name=dict(type="str"),
    nodes=dict(type="list", elements="dict"),
    node_labels=dict(type="dict"),
    node_allocatable=dict(type="dict"),
    report_only=dict(type="bool", default=False),
    sandbox_root=dict(type="path"),
    origins=dict(type="dict", default={}),
    require_runtimeclasses=dict(type="bool", default=False),
    runtimeclasses_none_reason=dict(type="str"),
    max_dump_bytes=containerd_facts.GATHER_SPEC["max_dump_bytes"],
)
ARGUMENT_SPEC.update(checks.JUDGE_SPEC)
# The status of a node left unjudged because no RuntimeClass was read (no report entry stands for it).
NOT_JUDGED = "NOT JUDGED"


def _unroot(value, root):
    """Node paths instead of sandbox paths in what a sandboxed (bootstrap) check reports."""
    if isinstance(value, str):
        return value.replace(root.rstrip("/") + "/", "/")
    if isinstance(value, list):
        return [_unroot(v, root) for v in value]
    if isinstance(value, dict):
        return dict((k, _unroot(v, root)) for k, v in value.items())
    return value


def _name_origins(findings, origins):
    """A finding on a file a bootstrap writes names the template (or user-data, image config) that
    writes it: the file is rewritten at every boot, so the fix goes there."""
    for item in findings:
        path = str(item.get("subject") or "").split(":", 1)[0]
        origin = origins.get(path)
        if not origin:
            continue
        item["message"] = "%s (%s, written by %s)" % (item["message"], path, origin)
        item["evidence"] = dict(item.get("evidence") or {}, origin=origin)
        if item["check"] == "config_refused":
            item["fix"] = "fix %s where containerd says, then run validate_bootstrap.yml again" % origin


class ActionModule(ControllerAction):
    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result, args = self._validated(
            tmp, task_vars, ARGUMENT_SPEC,
            mutually_exclusive=[["gathered", "dump", "dump_path"]],
            required_one_of=[["gathered", "dump", "dump_path"]],
        )
        name = args["node_name"] or task_vars.get("inventory_hostname", "node")
        if args["require_runtimeclasses"] and not args["runtimeclasses"]:
            return _not_judged(result, name, args)
        try:
            checks.validate_skip(args["skip_checks"])
            if args["gathered"] is not None:
                gathered = args["gathered"]
            elif args["dump_path"] is not None:
                gathered = audit.gathered_from_dump(_read_bytes(args["dump_path"], args["max_dump_bytes"]),
                                                    args["dump_path"])
            else:
                gathered = audit.gathered_from_dump(args["dump"])
            labels, allocatable = audit.node_facts(name, args["nodes"], args["node_labels"], args["node_allocatable"])
            entry = audit.audit_host(name, gathered, args["runtimeclasses"], labels, allocatable, options=args)
            if args["sandbox_root"]:
                entry = _unroot(entry, args["sandbox_root"])
            if args["origins"]:
                _name_origins(entry["findings"], args["origins"])
        except (ValueError, KeyError, TypeError) as exc:
            raise AnsibleActionFail("%s: cannot cross-check: %s" % (name, exc))
        result.update(
            changed=False,
            node=name,
            status=entry["status"],
            findings=entry["findings"],
            missing=[line.split("=", 1)[1] for line in entry["missing"]],
            missing_lines=entry["missing"],
            counts=entry["counts"],
            checks_run=entry["checks_run"],
            checks_skipped=entry["checks_skipped"],
            running=entry["running"],
        )
        failing = [f for f in entry["findings"] if checks.reaches(f["severity"], args["fail_on"])]
        # The seed lab's one-file contract: MISSING=<handler> lines, then other failing findings, or OK.
        result["msg"] = "\n".join(report.gate_lines(entry["findings"], failing, entry["reason"]) or ["OK"])
        # A lone dump's lines are bare; a node's lines carry its name.
        node = None if args["gathered"] is None else name
        result["gpurt_summary_lines"] = report.gate_lines(entry["findings"], failing, entry["reason"],
                                                          detail_missing=False, node=node) or [
            "OK" if node is None else checks.on_node(node, "OK")]
        # What those lines leave out (a MISSING= line stands for its finding): each missing handler's finding, with
        # its suggestion and fix, for the playbook to print once; and the node's one line, for its failed line.
        result.update(failing=entry["failing"], node_line=report.readable_node_line(entry),
                      detail_lines=[checks.finding_line(f, with_node=node is not None) for f in failing
                                    if f["check"] == "missing_handler"])
        if entry["failing"] and not args["report_only"]:
            result["failed"] = True
        return result


def _not_judged(result, name, args):
    """No RuntimeClass to cross-check against: the node is not judged, and the run fails, saying why once (the
    FAILED line the summary callback prints, or msg for a playbook to print without it)."""
    reason = "%s: no RuntimeClass was read, so no handler can be cross-checked: %s" % (
        name, args["runtimeclasses_none_reason"] or "the source (manifests or cluster) yielded zero RuntimeClasses")
    line = "FAILED: %s" % checks.one_line(reason)
    result.update(changed=False, node=name, status=NOT_JUDGED, findings=[], missing=[], missing_lines=[], counts={},
                  checks_run=[], checks_skipped={}, running={}, failing=False, run_failures=[reason], msg=line,
                  gpurt_summary_lines=[line], detail_lines=[], node_line=checks.on_node(name, NOT_JUDGED))
    if not args["report_only"]:
        result["failed"] = True
    return result


def _read_bytes(path, max_bytes):
    data, error = host_paths.read_bytes(path, max_bytes, timeout=60)
    if error is not None:
        raise ValueError("cannot read dump file %s: %s" % (path, error))
    return data

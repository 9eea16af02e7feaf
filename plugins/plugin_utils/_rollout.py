# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""remediate.yml's rollout, judged on the controller: what the remediation did on each node
(changed, nothing to write, refused with the reasons, failed), the re-audit of what it proved,
the stop rule after each batch, and NOT PROCESSED for the hosts a stopped rollout never reached.

Ansible stops a serial play by itself as soon as one batch fails whole, so a rollout in one-host
batches stops at the first failure whatever max_fail_percentage says. remediate.yml therefore
fails no host while it rolls out (the role runs in a block whose rescue records the failure) and
this module applies the user's rule: the rollout stops after the batch in which more than
max_fail_percentage percent of the rollout's hosts have failed, counted over the whole rollout,
so that it means the same for every batch size. Controller only."""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _audit as audit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _report as report

CHANGED = "changed"
UNCHANGED = "unchanged"
REFUSED = "refused"
FAILED = "failed"
NOT_PROCESSED = "not_processed"
# What the report keeps of the role's result (the gathered config and the diff stay out).
_KEPT = ("files", "changed_files", "loaded_changes", "reasons", "notes", "restart_pending", "step", "containerd",
         "warnings", "backup_dir", "pinned")
# Notes the console prints for each host that changed (or would): what takes precedence, what 1.x pins, a
# main config a provisioner renders whole on its next run, and a SystemdCgroup chosen without the kubelet.
_CONSOLE_NOTES = ("precedence: ", "pins: ", "next run: ", "SystemdCgroup: ")

# The tail of a refusal's reason: the node's status (REFUSED) says it once.
_NOTHING_WRITTEN = "Nothing was written."


class RolloutError(ValueError):
    pass


def check_rule(max_fail_percentage, total):
    if not isinstance(max_fail_percentage, int) or isinstance(max_fail_percentage, bool) or \
            not 0 <= max_fail_percentage <= 100:
        raise RolloutError("gpurt_max_fail_percentage must be a whole number from 0 to 100, not %r"
                           % (max_fail_percentage,))
    return {"batches": 0, "processed": 0, "failing": [], "total": int(total),
            "max_fail_percentage": max_fail_percentage, "stopped": False, "stop_reason": None, "run_failures": []}


def _unprefixed(text, host):
    """The role's messages start with the host's name; the report says it once."""
    text = checks.one_line(text)
    return text[len(host) + 2:] if host and text.startswith(host + ": ") else text


def _short(reason):
    """A refusal's reason without the "Nothing was written." that REFUSED already says."""
    reason = reason.strip()
    if reason.endswith(_NOTHING_WRITTEN) and len(reason) > len(_NOTHING_WRITTEN):
        reason = reason[:-len(_NOTHING_WRITTEN)].rstrip()
    return reason


def remediation(result, failure=None, check_mode=False, host=None):
    """(status, reason, what the remediation did) of one host. status is None when the node was
    remediated (changed or not) and its re-audit decides; else report.REFUSED or report.FAILED.

    result: the role's registered result (containerd_runtime_result); failure: the rescue's
    record of a later failure in the block (the restart handler), {task, msg}."""
    result = result if isinstance(result, dict) else None
    rem = {"outcome": None, "changed": False, "check_mode": bool(check_mode)}
    if result is not None:
        rem.update((key, result[key]) for key in _KEPT if key in result)
        rem["msg"] = _unprefixed(result.get("msg"), host) if result.get("msg") else None
    if result is None and failure is None:
        rem.update(outcome=FAILED, msg="the host has no result of the remediation")
        return report.FAILED, rem["msg"], rem
    if result is not None and result.get("unreachable"):
        reason = "unreachable: %s" % checks.one_line(result.get("msg") or "connection failed")
        rem.update(outcome=FAILED, msg=reason)
        return report.FAILED, reason, rem
    if result is not None and result.get("refused"):
        reasons = [_short(_unprefixed(r, host)) for r in result.get("reasons") or []] or [rem["msg"] or "refused"]
        rem.update(outcome=REFUSED, reasons=reasons, msg="refused, nothing was written")
        return report.REFUSED, "; ".join(reasons), rem
    # A failure the role only reported (containerd_runtime_on_failure=report, as remediate.yml runs it) or raised.
    # Files it wrote before a later step failed (the restart, its proof) count as changed.
    if result is not None and (result.get("failed") or result.get("outcome") == FAILED or result.get("skipped")):
        reason = rem["msg"] or ("skipped" if result.get("skipped") else "the remediation failed")
        rem.update(outcome=FAILED, msg=reason, changed=bool(result.get("changed")))
        return report.FAILED, reason, rem
    if failure:
        task = failure.get("task") or "a task"
        msg = "; ".join(line.strip() for line in str(failure.get("msg") or "").splitlines() if line.strip())
        reason = "%s failed: %s" % (checks.one_line(task), checks.one_line(msg or "see the output above"))
        # With a result, the role wrote (or would write) and what came after failed: the drain, a hook.
        rem.update(outcome=FAILED, changed=bool((result or {}).get("changed")), msg=reason)
        return report.FAILED, reason, rem
    rem.update(outcome=CHANGED if result.get("changed") else UNCHANGED, changed=bool(result.get("changed")))
    return None, None, rem


def host_entry(host, result, failure=None, runtimeclasses=(), options=None, node_name=None, labels=None,
               allocatable=None, nodes=None, reaudit=True, check_mode=False):
    """The report entry of one host of a batch: its remediation and the re-audit of the config
    the remediation proved (the staged load in check mode)."""
    options = options or {}
    node_name = node_name or host
    listed = audit.node_names(nodes)
    extra = {"node_name": node_name, "node_object": None if listed is None else node_name in listed}
    status, reason, rem = remediation(result, failure, check_mode, host)
    extra["remediation"] = rem
    if status is not None:
        return report.node_entry(host, not_checked_reason=reason, status=status, fail_on=options.get("fail_on", "error"),
                                 node_info={"unreachable": bool((result or {}).get("unreachable")),
                                            "containerd_version": rem.get("containerd")}, extra=extra)
    gathered = result.get("gathered") or {"loaded": result.get("loaded_after")}
    if not reaudit:
        rem["msg"] = "%s; not re-audited (gpurt_reaudit=false)" % (rem.get("msg") or rem["outcome"])
        loaded = gathered.get("loaded") if isinstance(gathered, dict) else None
        entry = report.node_entry(host, [], fail_on=options.get("fail_on", "error"),
                                  runtimes=(loaded or {}).get("runtime_names"), extra=extra)
        return entry
    labels, allocatable = audit.node_facts(node_name, nodes, labels, allocatable)
    if not rem.get("changed") and not rem.get("restart_pending"):
        # Nodes are listed before the batch: their status predates any restart of this run.
        options = dict(options, node_reported=audit.node_reported(node_name, nodes))
    entry = audit.audit_host(host, gathered, runtimeclasses, labels, allocatable, options)
    entry.update(extra)
    if check_mode and rem["changed"]:
        rem["not_run_in_check_mode"] = not_run_in_check_mode(entry)
    return entry


# A need check mode cannot meet on a host it would change: nothing restarts, so the daemon it would run
# after the restart cannot be read (the daemon running now predicts nothing about it).
_AFTER_RESTART = {"running": "check mode restarts nothing, so the daemon after the restart cannot be read"}


def not_run_in_check_mode(entry):
    """{check id: why} of the checks the check-mode re-audit of a host that would change skipped because of check
    mode itself; every other check judged the staged files as the real run's re-audit judges the written ones."""
    out = {}
    for check in checks.REGISTRY:
        why = [_AFTER_RESTART[need] for need in check.needs if need in _AFTER_RESTART]
        if why and check.id in entry["checks_skipped"] and entry["checks_skipped"][check.id] != "skip_checks":
            out[check.id] = why[0]
    return out


def check_mode_lines(entries):
    """The console's lines on what check mode did not judge, one per host that would change."""
    out = []
    for host in sorted(entries):
        missed = ((entries[host].get("remediation") or {}).get("not_run_in_check_mode")) or {}
        if missed:
            out.append(checks.on_node(host, "check mode re-audited the staged files with %d checks; not run in check "
                                      "mode: %s" % (len(entries[host]["checks_run"]), "; ".join(
                                          "%s (%s)" % item for item in sorted(missed.items())))))
    return out


def precedence_lines(entries):
    """The console's lines on what takes precedence over another tool's files, what a 1.x drop-in pins, a
    main config a provisioner renders on its next run and a SystemdCgroup the role chose without the
    kubelet's word: one per such note of a host the remediation changed (or would change, in check mode)."""
    out = []
    for host in sorted(entries):
        rem = entries[host].get("remediation") or {}
        if rem.get("changed") or rem.get("outcome") == CHANGED:
            out += [checks.on_node(host, note) for note in rem.get("notes") or [] if note.startswith(_CONSOLE_NOTES)]
    return out


def not_processed(host, state, node_name=None, nodes=None):
    listed = audit.node_names(nodes)
    name = node_name or host
    return report.node_entry(host, status=report.NOT_PROCESSED, not_checked_reason=state.get("stop_reason") or
                             "the rollout did not reach this host",
                             extra={"node_name": name, "node_object": None if listed is None else name in listed,
                                    "remediation": {"outcome": NOT_PROCESSED, "changed": False,
                                                    "msg": "not processed"}})


def after_batch(state, entries):
    """The rollout's state after one more batch, and whether to stop: more than
    max_fail_percentage percent of the rollout's hosts have failed (over the whole rollout)."""
    state = dict(state)
    state["batches"] += 1
    state["processed"] += len(entries)
    state["failing"] = sorted(set(state["failing"]) | set(h for h, e in entries.items() if e["failing"]))
    failed, total, allowed = len(state["failing"]), state["total"], state["max_fail_percentage"]
    over = failed * 100 > allowed * total
    if over and state["processed"] < total and not state["stopped"]:
        state["stopped"] = True
        state["stop_reason"] = (
            "the rollout stopped after batch %d: %d of its %d host(s) failed (%s), more than "
            "gpurt_max_fail_percentage=%d%% allows" % (state["batches"], failed, total,
                                                       report.names_text(state["failing"]), allowed))
    return state


def gate_nodes(entries, labels=None):
    """Node name -> {labels, runtimes, why_not_checked} of the hosts of the run, for the
    RuntimeClass gate: the runtimes of the config each remediation proved, or why there are none.
    labels: host -> its gpurt_node_labels (None: the Node object's)."""
    labels = labels or {}
    out = {}
    for host, entry in entries.items():
        why = None
        if entry["status"] == report.REFUSED:
            why = "its remediation was refused"
        elif entry["status"] == report.FAILED:
            why = "unreachable during remediation" if entry["unreachable"] else "its remediation failed"
        elif entry["status"] == report.NOT_PROCESSED:
            why = "not processed: the rollout did not reach it"
        elif entry["runtimes"] is None:
            why = "its re-audit could not read the loaded config"
        out[entry.get("node_name") or host] = {"labels": labels.get(host), "runtimes": entry["runtimes"]
                                               if why is None else None, "why_not_checked": why}
    return out


def gate_failures(decisions):
    """Run failures for the RuntimeClasses the gate refused."""
    return ["RuntimeClass %s not written, because the apiserver would accept pods that these Nodes cannot run (or "
            "that nobody checked): %s; fix the Nodes, or set gpurt_runtimeclass_gate_force=true to write anyway"
            % (d.get("name"), checks.one_line(d.get("message"))) for d in decisions or [] if d.get("decision") == "refused"]


def notes(state, decisions=None, manage_runtimeclasses=False):
    """The rollout's lines of the summary: its batches and stop, and each gate decision."""
    out = ["rollout: %d batch(es), %d of %d host(s) processed, %d failing; stop rule: more than "
           "gpurt_max_fail_percentage=%d%% of the rollout's hosts failed" % (
               state["batches"], state["processed"], state["total"], len(state["failing"]),
               state["max_fail_percentage"])]
    if state["stopped"]:
        out.append("STOPPED: %s; NOT PROCESSED: %d host(s)" % (state["stop_reason"], state["total"] - state["processed"]))
        if manage_runtimeclasses:
            out.append("RuntimeClasses: none written, the rollout stopped")
    out.extend(checks.one_line(d.get("message")) for d in decisions or [])
    return out

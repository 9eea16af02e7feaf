# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What playbooks/prevent.yml writes, planned from the cluster as listed (pure; no API call):

- which Nodes' verified labels are proof: those checked within gpurt_label_max_age (the annotation
  runtime-gate.gpurt.io/checked-at); older or undated ones are stale and count for nothing;
- the RuntimeClass gate: each gated RuntimeClass's scheduling.nodeSelector gains our verified label of
  its handler (merged with the selector it has), refused when no fresh verified Node would then match;
- the admission policy's parameters: per verified handler, the distinct label sets of its fresh verified
  Nodes, projected on the label keys RuntimeClass selectors use (compact at any fleet size), so the
  policy can tell whether a RuntimeClass's selector can select a Node that loaded its handler.

The verified labels on the Nodes (written by audit.yml/remediate.yml) are the one source of truth."""

import time

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.gate_names import CHECKED_AT, LABEL_PREFIX
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import label_syntax
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.node_labels import checked_time
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._node_labels import age_seconds, handler_of, label_key

ADMISSION_MODES = ("off", "warn", "deny")
# ConfigMap data keys: "handler.<handler>" -> one line per distinct label set of the fresh Nodes that verified
# it ("k=v,k=v", only the keys of "keys"); "keys" -> the label keys the lines hold, comma-separated (a
# selector key outside it is not judged); "loaded" -> the verified handlers, for the policy's message.
# Label keys and values hold no ',' '=' or newline.
HANDLER_KEY = "handler."
KEYS_KEY = "keys"
LOADED_KEY = "loaded"
# A ConfigMap is at most 1 MiB with its metadata: refuse parameters above this before writing them.
PARAMS_MAX_BYTES = 900 * 1024


class PreventError(ValueError):
    pass


def _our_handlers(node):
    return sorted(handler_of(k) for k, v in (node.get("labels") or {}).items()
                  if handler_of(k) and v == "true" and k != CHECKED_AT)


def proof(nodes, max_age="24h", now=None):
    """(fresh, stale): fresh, the Nodes whose verified labels are proof (checked within max_age); stale,
    [{name, handlers, why}] for the Nodes whose verified labels are not (older, or with no readable
    check time). Nodes without our labels are in fresh: they claim nothing."""
    limit = age_seconds(max_age)
    now = time.time() if now is None else now
    fresh, stale = [], []
    for node in nodes or []:
        handlers = _our_handlers(node)
        if not handlers:
            fresh.append(node)
            continue
        checked = node.get("labels_checked_at")
        at = checked_time(checked)
        if at is None:
            why = "carry no readable check time (annotation %s: %r)" % (CHECKED_AT, checked)
        elif now - at > limit:
            why = "were checked at %s, %s ago, longer than gpurt_label_max_age %s" % (
                checked, _hours(now - at), max_age)
        else:
            fresh.append(node)
            continue
        stale.append(dict(name=node.get("name"), handlers=handlers, why=why, checked=checked, max_age=max_age,
                          age=None if at is None else now - at))
    return fresh, stale


def stale_lines(stale):
    return ["%s: not counted as verified: its labels (%s) %s; the next labeling run (audit.yml with "
            "gpurt_label_nodes=true) proves or removes them (until then the scheduler still selects the Node by them)"
            % (s["name"], ", ".join(s["handlers"]), s["why"]) for s in stale]


def stale_summary(stale, shown=5):
    """The stale Nodes for a console at any fleet size: a line per distinct reason (checked too long ago; no
    readable check time), with its count, the handlers their labels name, and up to `shown` names (stale_lines
    has every Node's own line)."""
    older = [s for s in stale if s.get("age") is not None]
    undated = [s for s in stale if s.get("age") is None]
    lines = []
    if older:
        ages = sorted(s["age"] for s in older)
        when = ("at %s, %s ago" % (older[0]["checked"], _hours(ages[0])) if len(older) == 1
                else "%s to %s ago" % (_hours(ages[0]), _hours(ages[-1])))
        lines.append(_stale_line(older, "were checked %s, longer ago than gpurt_label_max_age %s" % (
            when, older[0]["max_age"]), shown))
    if undated:
        values = sorted(set(repr(s.get("checked")) for s in undated))
        lines.append(_stale_line(undated, "carry no readable check time (annotation %s: %s)" % (
            CHECKED_AT, _names(values, 3)), shown))
    return lines


def _stale_line(group, why, shown):
    handlers = sorted(set(h for s in group for h in s["handlers"]))
    return ("stale labels: %d Node(s) not counted as verified: their labels (%s) %s: %s; the next labeling run "
            "(audit.yml with gpurt_label_nodes=true) proves or removes them (until then the scheduler still selects "
            "those Nodes by them)" % (len(group), ", ".join(handlers), why, _names([s["name"] for s in group], shown)))


def no_proof(nodes, names=None, mode="warn", max_age="24h", now=None, judged=None):
    """Why the run must refuse before any write because no Node carries a fresh verified label, else None.
    Fail closed: every selector and admission parameter prevent.yml writes is derived from that proof, so a run
    with none checked nothing and is never OK. Only a run that gates nothing and turns admission off
    (gpurt_gate_runtimeclasses=[], gpurt_admission_mode=off) needs no proof: it only removes.
    judged: proof(nodes, max_age)'s result when the caller has it, so the Nodes are judged once."""
    if mode == "off" and names == []:
        return None
    fresh, stale = judged if judged is not None else proof(nodes, max_age, now)
    if verified_nodes(fresh):
        return None
    older = (" (%d Node(s) with older labels, not counted: %s)" % (len(stale), _names([s["name"] for s in stale]))
             if stale else "")
    return ("nothing was written: no Node carries a verified label (%s<handler>=true) checked within "
            "gpurt_label_max_age %s%s, so there is nothing to gate on: no RuntimeClass was gated and the admission "
            "policy and its parameters were left as they are; label the Nodes first (audit.yml with "
            "gpurt_label_nodes=true), then run prevent.yml again (docs/prevention.md)" % (LABEL_PREFIX, max_age, older))


def verified_nodes(nodes):
    """{handler: [Node names]} from our labels on the Nodes given (the fresh ones: see proof())."""
    out = {}
    for node in nodes or []:
        for handler in _our_handlers(node):
            out.setdefault(handler, []).append(node.get("name"))
    return dict((h, sorted(names)) for h, names in out.items())


def _matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def gate(runtimeclasses, nodes, names=None, max_age="24h", now=None, judged=None):
    """One decision per RuntimeClass: {name, handler, node_selector (the merged one), added, matching,
    decision ('write', 'unchanged', 'refused' or 'skipped'), message}. names: gpurt_gate_runtimeclasses;
    None gates every class whose handler is verified on at least one fresh Node, keeps every class
    gated already (saying so when it matches no Node now) and skips the others, saying why. Only fresh
    Nodes (proof()) count as matching; judged: proof()'s result when the caller has it (see no_proof)."""
    fresh, stale = judged if judged is not None else proof(nodes, max_age, now)
    by_name = dict((rc["name"], rc) for rc in runtimeclasses or [])
    verified = verified_nodes(fresh)
    stale_by_handler = {}
    for item in stale:
        for handler in item["handlers"]:
            stale_by_handler.setdefault(handler, []).append(item["name"])
    explicit = names is not None
    if not explicit:
        names = sorted(by_name)
    out = []
    for name in names:
        rc = by_name.get(name)
        if rc is None:
            out.append(dict(name=name, handler=None, node_selector=None, added=None, matching=[], decision="refused",
                            message="%s: no such RuntimeClass in the cluster (gpurt_gate_runtimeclasses)" % name))
            continue
        handler = rc.get("handler")
        selector = dict(rc.get("node_selector") or {})
        try:
            key = label_key(handler)
        except ValueError as exc:
            decision = "refused" if explicit else "skipped"
            out.append(dict(name=name, handler=handler, node_selector=selector, added=None, matching=[],
                            decision=decision, message="%s: %s" % (name, exc)))
            continue
        merged = dict(selector, **{key: "true"})
        matching = sorted(n.get("name") for n in fresh if _matches(merged, n.get("labels") or {}))
        entry = dict(name=name, handler=handler, node_selector=merged, added=None if key in selector else key,
                     matching=matching, uid=rc.get("uid"))
        why_none = _why_no_node(handler, merged, verified, stale_by_handler)
        if selector.get(key) not in (None, "true"):
            entry.update(decision="refused", message="%s: its nodeSelector already sets %s=%s; remove it first"
                         % (name, key, selector[key]))
        elif not explicit and key not in selector and handler not in verified:
            entry.update(decision="skipped", message="%s: not gated: %s" % (name, why_none))
        elif not matching and not explicit and key in selector:
            entry.update(decision="unchanged", message=(
                "%s: gated on %s, but no Node matches nodeSelector %s now, so its new pods stay Pending: %s"
                % (name, key, _selector_text(merged), why_none)))
        elif not matching:
            entry.update(decision="refused", message=(
                "%s: no Node would match nodeSelector %s, so every pod of the class would stay Pending: %s; run "
                "audit.yml with gpurt_label_nodes=true on the nodes that load it, or leave the class out of "
                "gpurt_gate_runtimeclasses" % (name, _selector_text(merged), why_none)))
        elif key in selector:
            entry.update(decision="unchanged", message="%s: already gated on %s; %d Node(s) match: %s" % (
                name, key, len(matching), _names(matching)))
        else:
            entry.update(decision="write", message="%s: nodeSelector %s; %d Node(s) match: %s" % (
                name, _selector_text(merged), len(matching), _names(matching)))
        out.append(entry)
    return out


def _why_no_node(handler, merged, verified, stale_by_handler):
    """Why no fresh Node matches a merged selector: where the handler is verified, and where it is stale."""
    where = verified.get(handler)
    if where:
        text = "handler '%s' is verified on %s, none of which has the class's other labels %s" % (
            handler, _names(where), _selector_text(dict((k, v) for k, v in merged.items()
                                                        if k != LABEL_PREFIX + handler)))
    else:
        text = "handler '%s' is verified on no Node" % handler
    if stale_by_handler.get(handler):
        text += " (stale labels, not counted: %s)" % _names(stale_by_handler[handler])
    return text


def selector_keys(runtimeclasses, verified_handlers):
    """The label keys the parameters hold: every key a RuntimeClass's nodeSelector uses, and the gate's
    own key of each verified handler (the selectors prevent.yml writes)."""
    keys = set(LABEL_PREFIX + h for h in verified_handlers)
    for rc in runtimeclasses or []:
        keys.update(str(k) for k in (rc.get("node_selector") or {}))
    return sorted(keys)


def admission_params(nodes, runtimeclasses=None, max_age="24h", now=None, judged=None):
    """The data of the policy's parameter ConfigMap: per handler verified on a fresh Node, the distinct
    label sets of those Nodes projected on selector_keys(). PreventError when it would not fit a ConfigMap.
    judged: proof()'s result when the caller has it (see no_proof)."""
    fresh = (judged if judged is not None else proof(nodes, max_age, now))[0]
    verified = verified_nodes(fresh)
    keys = selector_keys(runtimeclasses, verified)
    by_name = dict((n.get("name"), n) for n in fresh)
    data = {}
    for handler, names in sorted(verified.items()):
        lines = set()
        for name in names:
            labels = by_name[name].get("labels") or {}
            lines.add(",".join("%s=%s" % (k, labels[k]) for k in keys if k in labels))
        data[HANDLER_KEY + handler] = "\n".join(sorted(lines))
    data[KEYS_KEY] = ",".join(keys)
    data[LOADED_KEY] = ", ".join(sorted(verified))
    size = params_size(data)
    if size > PARAMS_MAX_BYTES:
        widest = sorted(keys, key=lambda k: -len(set((by_name[n].get("labels") or {}).get(k) for n in by_name)))
        raise PreventError(
            "the admission parameters would take %d bytes, more than a ConfigMap holds (%d allowed here): the "
            "RuntimeClass selectors use label keys with many values across the verified Nodes (most: %s); select "
            "on fewer distinct labels, or set gpurt_admission_mode=off; nothing was written"
            % (size, PARAMS_MAX_BYTES, ", ".join(widest[:3])))
    return data


def params_size(data):
    """The bytes the ConfigMap's data takes (keys and values, UTF-8)."""
    return sum(len(k.encode("utf-8")) + len(v.encode("utf-8")) for k, v in data.items())


_DECISION_WORDS = {"write": ("gated", "would gate"), "unchanged": ("unchanged", "unchanged"),
                   "skipped": ("unchanged", "unchanged"), "refused": ("refused", "would refuse")}


def summary_lines(gate, stale, mode, admission=None, check_mode=False, selectors=None, selector_mode="prove"):
    """The RUNTIME GATE block of a prevent.yml run: one line per RuntimeClass (gated, unchanged or refused, and
    why; in check mode what it would do), whether the selectors are enforced (selectors: the
    runtimeclass_admission_info result; selector_mode: gpurt_selector_enforcement), the admission policy's state
    (admission: the admission_policy result, None when not reached), the stale Nodes (proof's list) a line per
    reason, by count and a few names."""
    lines = ["%s RuntimeClass %s" % (_DECISION_WORDS.get(g["decision"], (g["decision"],) * 2)[bool(check_mode)],
                                     g["message"]) for g in gate or []]
    if not gate:
        lines.append("no RuntimeClass in the cluster; nothing to gate")
    if any(g["decision"] in ("write", "unchanged") for g in gate or []):
        if selector_mode == "assume":
            lines.append("RuntimeClass selectors: enforcement assumed, not proven (gpurt_selector_enforcement=assume)")
        elif (selectors or {}).get("proof"):
            lines.append("RuntimeClass selectors: enforcement " + selectors["proof"])
    if admission is None:
        lines.append("admission policy (gpurt_admission_mode=%s): not reached" % mode)
    else:
        would = "would be " if check_mode else ""
        done = ["%s %s %s" % (o["kind"], o["name"], "unchanged" if o["action"] == "none" else would + o["action"])
                for o in admission.get("objects") or []]
        lines.append("admission policy (gpurt_admission_mode=%s): %s%s" % (
            mode, ", ".join(done) or "nothing to remove",
            "; enforcement " + admission["enforcement"] if admission.get("enforcement") else ""))
        lines.extend(admission.get("lines") or [])
    lines.extend(stale_summary(stale or []))
    return lines


def validate_inputs(mode, names, max_age="24h", namespace=None, deadline=None):
    """Play-start validation of prevent.yml's own inputs; PreventError naming the variable."""
    if mode not in ADMISSION_MODES:
        raise PreventError("gpurt_admission_mode must be one of %s (got %r)" % (", ".join(ADMISSION_MODES), mode))
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise PreventError("gpurt_gate_runtimeclasses must be a list of RuntimeClass names (got %r)" % (names,))
    try:
        age_seconds(max_age)
    except ValueError as exc:
        raise PreventError(str(exc))
    if namespace is not None and (not isinstance(namespace, str) or len(namespace) > 63
                                  or not label_syntax.DNS_LABEL.match(namespace)):
        raise PreventError("gpurt_admission_namespace must be a namespace name (a lowercase DNS label: a-z, 0-9 "
                           "and '-', at most 63 characters; got %r)" % (namespace,))
    if deadline is not None:
        try:
            seconds = float(deadline)
        except (TypeError, ValueError):
            seconds = 0
        if isinstance(deadline, bool) or not seconds > 0:
            raise PreventError("gpurt_deadline must be a positive number of seconds for the run's API calls "
                               "(got %r)" % (deadline,))


def _names(names, shown=10):
    names = list(names)
    if len(names) <= shown:
        return ", ".join(names)
    return "%s and %d more" % (", ".join(names[:shown]), len(names) - shown)


def _hours(seconds):
    return "%.1f h" % (seconds / 3600.0)


def _selector_text(selector):
    return "{%s}" % ", ".join("%s=%s" % (k, v) for k, v in sorted(selector.items()))

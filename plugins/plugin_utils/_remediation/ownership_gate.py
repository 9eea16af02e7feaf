# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ownership by evidence applied to a plan, before any write and the same in check mode: every file
the plan writes or removes is decided from what the node showed (plugin_utils/_ownership_decision).
A refusal refuses the host; a generated main config whose generator imports a directory moves the
drop-ins there; one rendered from a template at start is changed through the template, and the
render the start will make is predicted from the template and the file as rendered now (learned
substitutions), so that the proof loads what the next start loads. Controller only."""

import os
import re

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _ownership as node_ownership
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as config_shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _ownership_decision as decision
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.dropins import named_keys
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.refusal import Refusal
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.toml_edit import edit_main, parse

# ${NAME} (sed, envsubst, the snap wrappers) and {{ ... }} (Go and Jinja templates).
_PLACEHOLDER = config_shapes.GENERATOR_PLACEHOLDER
_NOTHING = "Nothing was written."


def planned_paths(the_plan):
    return [f["path"] for f in the_plan["writes"] + the_plan["removes"]]


def main_imports(gathered):
    """The resolved imports entries the main config declares (machine paths)."""
    return [e["resolved"] for e in gathered.get("imports") or [] if e.get("declared_in") == gathered["config_path"]]


def evidence_paths(the_plan, gathered):
    """What the node is asked about: the planned files, the directories the main config imports, and the main
    config when a 1.x drop-in pins its CRI keys (whoever reconciles it is asked about too)."""
    dirs = [os.path.dirname(p) for p in main_imports(gathered) if "*" in os.path.basename(p)]
    pinned_from = (the_plan.get("pinned") or {}).get("from") or ()
    pinned = [gathered["config_path"]] if gathered["config_path"] in pinned_from else []
    return sorted(set(planned_paths(the_plan)) | set(dirs) | set(pinned))


def main_version(gathered):
    """The main config's version as written (None when it cannot be read or parsed)."""
    entry = next((f for f in gathered.get("files") or [] if f.get("path") == gathered["config_path"]), None)
    try:
        return config_shapes.config_version(toml_codec.loads(entry["content"], entry["path"])) \
            if entry and entry.get("content") is not None else None
    except (toml_codec.TomlError, config_shapes.ConfigShapeError):
        return None


def _pin_refusal(the_plan, result):
    """containerd 1.x: the role's CRI drop-in copies the main config's CRI keys; where a provisioner or generator
    renders the main config again, a change it makes to one of them is never loaded."""
    pinned = the_plan["pinned"]
    found = result["next_run"]
    return ("%s: containerd 1.x takes the whole CRI section from the last file that declares it, so the role's %s must "
            "copy it, pinning %d keys as %s sets them now (%s); %s is rendered by %s on its next run (%s), and a "
            "change it makes then to any of those keys would not be loaded while the role's drop-in shadows it. Add "
            "the runtime through %s instead, or set edit_generated to write anyway (a pinned key then needs the role "
            "run again after each change). %s"
            % (result["path"], pinned["path"], len(pinned["keys"]), result["path"], named_keys(pinned["keys"]),
               result["path"], found["tool"], "; ".join(result["evidence"]), found["input"], _NOTHING))


def _machine(root, node_path):
    trailing = node_path.endswith("/")
    path = node_ownership.node_path(root, node_path.rstrip("/"))
    return path + ("/" if trailing else "")


def judge(the_plan, gathered, found, edit_generated=False, dropin_dir=None):
    """{refusals: [messages], dropin_dir: machine dir or None, template: (decision, machine path) or None,
    notes: [lines]} of the plan's files against the node's evidence. edit_generated: a file a generator
    owns is written anyway (its surviving input is not used), never one the file system refuses.
    dropin_dir: where the plan's drop-ins go; a generated main config the plan still changes although
    they already go to the directory it imports is refused (the change would be gone at its next start)."""
    evidence = found["ownership"]
    root = evidence.get("root") or "/"
    files = evidence["files"]
    config_path = gathered["config_path"]
    imports = main_imports(gathered)

    def writable_dir(directory):
        entry = files.get(directory)
        return bool(entry and entry["writable"]["ok"])

    out = {"refusals": [], "dropin_dir": None, "template": None, "notes": []}
    version = main_version(gathered)
    pinned = the_plan.get("pinned") or {}
    if config_path in (pinned.get("from") or ()) and config_path in files:
        result = decision.decide(evidence, config_path, config_path=config_path, imports=imports,
                                 writable_dir=writable_dir, version=version)
        if result.get("next_run") and not edit_generated:
            out["refusals"].append(_pin_refusal(the_plan, result))
            return out
        if result.get("next_run") or result["decision"] == decision.WRITE_INPUT:
            out["notes"].append("pins: %s is rendered again by %s; the role's %s pins its CRI keys as this run loads "
                                "them: run the role again after each change %s makes to them"
                                % (result["path"], result["owner"], pinned["path"], result["owner"]))
    for path in planned_paths(the_plan):
        if path not in files:
            out["refusals"].append("%s: the node reported no ownership evidence for it. %s" % (path, _NOTHING))
            continue
        result = decision.decide(evidence, path, config_path=config_path, imports=imports, writable_dir=writable_dir,
                                 version=version if path == config_path else None)
        if result.get("next_run") and path == config_path:
            out["notes"].append(result["message"])
        if result["decision"] == decision.REFUSE:
            if result["message"] not in out["refusals"]:
                out["refusals"].append(result["message"])
        elif result["decision"] == decision.WRITE_INPUT and edit_generated:
            out["notes"].append("%s; written anyway (edit_generated): the next regeneration loses it" % result["message"])
        elif result["decision"] == decision.WRITE_INPUT:
            target = _machine(root, result["surviving_input"])
            if path != config_path:
                out["refusals"].append("%s: %s, and the role writes only its own files there. %s"
                                       % (path, result["message"], _NOTHING))
            elif target.endswith("/") and dropin_dir and target.rstrip("/") == dropin_dir.rstrip("/"):
                out["refusals"].append("%s; the role's drop-ins already go there, yet the run would still change %s, "
                                       "which is written again at the next start: the change would be lost. %s"
                                       % (result["message"], result["path"], _NOTHING))
            elif target.endswith("/"):
                out["dropin_dir"] = target.rstrip("/")
                out["notes"].append(result["message"])
            else:
                out["template"] = (result, target)
    return out


def render_map(template, rendered):
    """{placeholder: value} that turns the template into the rendered text, or None when no consistent
    substitution of its placeholders does (the template changed since the start rendered it, or its
    language computes more than substitutions)."""
    pieces, names = [], []
    position = 0
    for match in _PLACEHOLDER.finditer(template):
        pieces.append(re.escape(template[position:match.start()]))
        pieces.append("(.*?)")
        names.append(match.group(0))
        position = match.end()
    pieces.append(re.escape(template[position:]))
    match = re.fullmatch("".join(pieces), rendered, re.S)
    if match is None:
        return None
    values = {}
    for name, value in zip(names, match.groups()):
        if values.setdefault(name, value) != value:
            return None
    return values


def render(template, values):
    """The template with each placeholder replaced by its learned value; None when one was not learned."""
    missing = [m.group(0) for m in _PLACEHOLDER.finditer(template) if m.group(0) not in values]
    if missing:
        return None
    return _PLACEHOLDER.sub(lambda m: values[m.group(0)], template)


def through_template(the_plan, gathered, found, result, template):
    """Move the plan's edit of the main config to the template its start renders it from: the template
    gets the same imports/version edit, the main config the render the start will make. Refusal when
    the template cannot be read, parsed, or shown to render to the file as it is now."""
    config_path = gathered["config_path"]
    owner = result["owner"]
    info = (found.get("inputs") or {}).get(template)
    why = "%s is rendered again from %s by %s at every start" % (config_path, template, owner)
    if info is None or (info.get("text") is None and not info.get("error")):
        os_id = ((found["ownership"].get("os_release") or {}).get("ID"))
        file_ev = found["ownership"]["files"].get(config_path)
        way = decision.documented_way(os_id, owner, file_ev, main_imports(gathered), main_version(gathered),
                                      found["ownership"].get("root") or "/")
        raise Refusal("%s: not written, its owner is %s and the input that survives, %s, does not exist; the documented "
                      "way: %s. %s" % (config_path, owner, template, way, _NOTHING))
    if info.get("text") is None:
        raise Refusal("%s, and %s cannot be read (%s). %s" % (why, template, info["error"], _NOTHING))
    main_write = [w for w in the_plan["writes"] if w["path"] == config_path]
    if not main_write:
        return
    main_write = main_write[0]
    current = gathered["files"][0].get("content") or ""
    try:
        template_doc = parse(info["text"], template)
    except Refusal as exc:
        raise Refusal("%s, and %s does not parse as TOML (%s): the role edits a generator's input only when it can "
                      "parse it; fix the template, then run again. %s" % (why, template, exc, _NOTHING))
    values = render_map(info["text"], current)
    if values is None:
        raise Refusal("%s, but %s does not render to %s as it is now (the template changed since the last start, or "
                      "it computes more than substitutions), so what the next start loads cannot be proved. Restart "
                      "containerd to render it, or add the runtime to the template by hand. %s"
                      % (why, template, config_path, _NOTHING))
    before_doc = parse(current, config_path)
    after_doc = parse(main_write["content"], config_path)
    extra = sorted(k for k in set(before_doc) | set(after_doc)
                   if k not in ("imports", "version") and before_doc.get(k) != after_doc.get(k))
    added = [e for e in after_doc.get("imports") or [] if e not in (before_doc.get("imports") or [])]
    if extra or len(added) > 1:
        raise Refusal("%s; the change of %s (%s) is more than an imports entry, and the role does not rewrite a "
                      "template that way: change %s by hand. %s"
                      % (why, config_path, ", ".join(extra) or "imports", template, _NOTHING))
    version = after_doc.get("version") if after_doc.get("version") != before_doc.get("version") else None
    new_template, _doc = edit_main(info["text"], template_doc, version, added[0] if added else None)
    rendered = render(new_template, values)
    if rendered is None or parse(rendered, config_path) != after_doc:
        raise Refusal("%s, and the edited template would not render to the proved config. %s" % (why, _NOTHING))
    main_write["content"] = rendered
    the_plan["writes"].insert(0, {"path": template, "content": new_template, "before": info["text"],
                                  "expect_sha256": (info.get("state") or {}).get("sha256")})
    the_plan.setdefault("input_paths", []).append(template)
    the_plan["notes"].append("%s; the change went to %s (it survives the start), and %s now holds what that start "
                             "renders from it" % (why, template, config_path))

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The proof: the staged load (containerd's `config dump` of the proposed files) keeps every key of
the current load, except what the run was asked to change; otherwise the node is refused before a byte
is written, with each changed key and its value before and after."""

import fnmatch

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import adopt
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.closure import leaf_problems, same_option
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.ownership import is_own
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.plan import dump_plugin
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.toml_edit import (
    changed_keys, change_line, get_in, key_path, literal, parse)


def _under(path, prefixes):
    return any(path[:len(p)] == tuple(p) for p in prefixes)


def accepted(path, patterns):
    text = key_path(path)
    return any(fnmatch.fnmatchcase(text, p) or text.startswith(p.rstrip(".") + ".") for p in patterns or [])


def _who_sets(gathered, plugin_names, runtime, key):
    """Files other than the role's own that set runtimes.<runtime>.<key> (for the refusal message)."""
    out = []
    for entry in gathered.get("files") or []:
        if entry["role"] not in ("main", "imported") or is_own(entry.get("content")):
            continue
        try:
            doc = toml_codec.loads(entry.get("content") or "", entry["path"])
        except toml_codec.TomlError:
            continue
        for plugin in plugin_names:
            table = get_in(doc, "plugins", plugin, "containerd", "runtimes", runtime) if runtime else \
                get_in(doc, "plugins", plugin, "containerd")
            if isinstance(table, dict) and get_in(table, *key) is not None:
                out.append(entry["path"])
    return out


def prove(the_plan, gathered, staged, accept=None):
    """(problems, changes) of the staged load against the current one; no problems = safe to write."""
    major = gathered["version_major"]
    plugin = dump_plugin(major)
    if staged.get("rc") != 0 or not staged.get("dump"):
        return ["containerd refuses the proposed files: %s" % (staged.get("stderr_tail") or "no output")], []
    before = parse(gathered["dump"], "the current config dump")
    after = parse(staged["dump"], "the staged config dump")
    default_doc = parse(gathered["default_text"], "containerd config default") if gathered.get("default_text") else {}
    problems = []
    old_warnings = set(gathered.get("dump_warnings") or [])
    new_warnings = [w for w in staged.get("dump_warnings") or [] if w not in old_warnings and
                    ("Ignoring unknown key" in w or "level=error" in w)]
    if new_warnings:
        problems.append("containerd ignores part of the proposed files: %s" % " | ".join(new_warnings[:5]))
    for spec in the_plan["specs"]:
        for path, have, want in adopt.effective_mismatches(after, default_doc, plugin, spec):
            setters = _who_sets(gathered, shapes.CRI_PLUGIN_NAMES, spec["name"], path[5:])
            problems.append("%s would load as %s, not %s%s" % (
                key_path(path), literal(have), literal(want),
                " (also set in %s, which containerd merges after the role's file)" % ", ".join(setters) if setters else ""))
    expected_default = the_plan["wanted_default"] or the_plan["loaded_default"]
    staged_default = get_in(after, "plugins", plugin, "containerd", "default_runtime_name") or ""
    if staged_default != expected_default:
        setters = _who_sets(gathered, shapes.CRI_PLUGIN_NAMES, None, ("default_runtime_name",))
        problems.append("default_runtime_name would be %r, not %r%s" % (
            staged_default, expected_default, " (set in %s)" % ", ".join(setters) if setters else ""))
    problems += leaf_problems(the_plan, after)
    matched = set()
    for entry in staged.get("imports") or []:
        matched.update(entry.get("matches") or [])
    unmatched = [p for p in the_plan["own_paths"] if p not in matched]
    if unmatched:
        problems.append("no imports entry loads %s" % ", ".join(unmatched))
    changes = changed_keys(before, after)
    allowed = [tuple(p) for p in the_plan["allowed"]]
    refused = [c for c in changes if not _under(c[0], allowed) and not accepted(c[0], accept) and not same_option(*c)
               and not adopt.filled_at_start(default_doc, plugin, *c)]
    if refused:
        problems.append("the proposed files change what the node loads beyond what was asked (set accept_changes to "
                        "these keys to mean it):")
        problems += ["  " + change_line(*c) for c in refused]
    return problems, changes

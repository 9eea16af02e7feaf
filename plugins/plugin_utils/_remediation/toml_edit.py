# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""TOML documents of the remediation: parse, flatten and diff them key by key, edit the main config in
place (tomlkit keeps its comments and layout), and check containerd's own migration of it."""

import copy

# get_in is the remediation modules' way to read a key path (plan, closure, adopt... import it from here).
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._nested import get_in
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.refusal import Refusal

try:
    import tomlkit
except ImportError:  # pragma: no cover - declared in requirements.txt
    tomlkit = None


def parse(text, source):
    try:
        doc = toml_codec.loads(text, source)
    except toml_codec.TomlError as exc:
        raise Refusal(str(exc))
    return doc


def flatten(doc, prefix=()):
    """{key path tuple: leaf value}; an empty table is a leaf, so its appearing counts."""
    out = {}
    for key, value in doc.items():
        path = prefix + (key,)
        if isinstance(value, dict) and value:
            out.update(flatten(value, path))
        else:
            out[path] = value
    return out


def key_path(path):
    """A key path as TOML spells it: plugins."io.containerd.grpc.v1.cri".sandbox_image."""
    return ".".join(toml_codec.key(part) for part in path)


def literal(value):
    if value is ABSENT:
        return "(absent)"
    try:
        return toml_codec.literal(value)
    except toml_codec.TomlError:
        return repr(value)


ABSENT = object()


def ensure_table(doc, *keys):
    node = doc
    for key in keys:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    return node


def deep_update(target, source):
    for key, value in source.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            deep_update(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def runtime_mismatches(doc, plugin, spec):
    """[(key path, loaded, wanted)] where the loaded runtime differs from the spec; the whole
    runtime when it is not loaded."""
    loaded = get_in(doc, "plugins", plugin, "containerd", "runtimes", spec["name"])
    base = ("plugins", plugin, "containerd", "runtimes", spec["name"])
    if not isinstance(loaded, dict):
        return [(base, ABSENT, spec["table"])]
    have = flatten(loaded)
    return [(base + path, have.get(path, ABSENT), value) for path, value in sorted(flatten(spec["table"]).items())
            if have.get(path, ABSENT) != value]


def changed_keys(before, after):
    """[(path, before, after)] for every leaf that differs, imports excluded (they name the
    staging directory in a staged load)."""
    old = flatten(dict((k, v) for k, v in before.items() if k != "imports"))
    new = flatten(dict((k, v) for k, v in after.items() if k != "imports"))
    out = []
    for path in sorted(set(old) | set(new)):
        a, b = old.get(path, ABSENT), new.get(path, ABSENT)
        if a != b:
            out.append((path, a, b))
    return out


def change_line(path, before, after):
    return "%s: %s -> %s" % (key_path(path), literal(before), literal(after))


def _is_default_fill(value):
    """An empty, zero or false leaf: what containerd's dump fills in for every key of a runtime
    that no file sets (cni_conf_dir = "", snapshotter = "", pod_annotations = [], ...)."""
    if value is ABSENT:
        return False
    if isinstance(value, bool):
        return value is False
    return value in ("", 0, [], {})


def shown_changes(changes):
    """(the changes a person reads, how many were left out): a key that appears or disappears with
    an empty, zero or false value is containerd filling in a new runtime's defaults, not a change."""
    shown = [(p, a, b) for p, a, b in changes
             if not ((a is ABSENT and _is_default_fill(b)) or (b is ABSENT and _is_default_fill(a)))]
    return shown, len(changes) - len(shown)


def loaded_diff(changes):
    """Ansible diff entry of the loaded config: each changed key, before and after; the defaults
    containerd fills in for an added or removed runtime are counted, not listed."""
    changes, defaults = shown_changes(changes)
    before = "".join("%s = %s\n" % (key_path(p), literal(a)) for p, a, _b in changes if a is not ABSENT)
    after = "".join("%s = %s\n" % (key_path(p), literal(b)) for p, _a, b in changes if b is not ABSENT)
    if defaults:
        after += "# and %d key(s) an added or removed runtime takes at containerd's defaults (empty, 0, false)\n" % defaults
    return {"before_header": "loaded config (containerd config dump), now", "before": before,
            "after_header": "loaded config after the change", "after": after}


def edit_main(text, doc, set_version=None, add_import=None):
    """The main config with only these edits, its comments and layout kept (tomlkit); the parsed
    result must equal the parsed original with the edits, else the edit is refused."""
    expected = copy.deepcopy(doc)
    if set_version is not None:
        expected["version"] = set_version
    if add_import is not None:
        expected["imports"] = list(expected.get("imports") or []) + [add_import]
    if tomlkit is None:
        raise Refusal("editing the main config needs the tomlkit package on the controller (pip install tomlkit)")
    try:
        edited = tomlkit.parse(text)
        if set_version is not None:
            edited["version"] = set_version
        if add_import is not None:
            if "imports" in edited:
                edited["imports"].append(add_import)
            else:
                edited["imports"] = [add_import]
        new_text = tomlkit.dumps(edited)
    except Exception as exc:  # tomlkit raises many types; any of them means: do not edit
        raise Refusal("cannot edit the main config in place: %s" % exc)
    if toml_codec.loads(new_text, "the edited main config") != expected:
        raise Refusal("editing the main config in place would change more than the imports/version keys; refused")
    return new_text, expected


def migrated_main(node, main_doc, default_version):
    """(doc, note) of containerd's own migration of the main config, checked for loss."""
    mig = node.gathered.get("migration")
    if not mig:
        return None
    if mig.get("error"):
        raise Refusal("containerd config migrate failed: %s" % mig["error"])
    dropped = [w for w in mig.get("warnings") or [] if "Ignoring unknown key" in w or "level=error" in w]
    if dropped:
        raise Refusal(["containerd %s's config migrate drops keys of this version %d file, so it would lose them:"
                       % (node.gathered.get("version"), mig["from_version"])] + ["  " + w for w in dropped[:10]])
    without = dict((k, v) for k, v in main_doc.items() if k != "imports")
    if parse(mig["stripped"], "the main config without imports") != without:
        raise Refusal("could not cut the imports out of the main config faithfully for the migration")
    migrated = parse(mig["text"], "containerd config migrate output")
    declared = set()
    for runtimes in shapes.runtimes_by_plugin(main_doc).values():
        declared.update(runtimes)
    migrated_runtimes = set(get_in(migrated, "plugins", shapes.CRI_PLUGIN_V3, "containerd", "runtimes") or {})
    lost = sorted(declared - migrated_runtimes)
    if lost:
        raise Refusal("containerd config migrate drops runtime(s) %s of the main config" % ", ".join(lost))
    # migrate prints every default, imports included; the imports stay what the file had.
    migrated["imports"] = list(main_doc.get("imports") or [])
    return migrated, "migrated the version %d main config to version %d with containerd config migrate" % (
        mig["from_version"], default_version)

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""No needless change: a runtime already loaded with the same effective options is adopted, whoever
wrote it; and when a change is needed next to another tool's files, what will take precedence.

"Effective" means what containerd and the shim act on: an option no file sets takes containerd's
default, read from the node's own ``containerd config default`` (its ``runc`` runtime), never from a
hand list: each release has its own keys (1.x has NoPivotRoot and CriuPath, 2.x does not), and every
release measured (1.6, 1.7, 2.1-2.4) gives runc ``SystemdCgroup = false``, so nvidia-ctk's copy of a runc
without SystemdCgroup is the same runtime as one with ``SystemdCgroup = false``."""

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.toml_edit import (
    ABSENT, flatten, get_in, key_path, runtime_mismatches)

_MAX_KEYS_NAMED = 4


def runtime_defaults(default_doc, plugin, runtime_type):
    """{key path under the runtime: value} containerd gives a key of a runtime of this type that no file
    sets: the runtime-level keys of the default config's runc, and its options for runc-type runtimes only
    (the options of another shim are that shim's own, with no default containerd knows)."""
    runc = get_in(default_doc or {}, "plugins", plugin, "containerd", "runtimes", "runc")
    if not isinstance(runc, dict):
        return {}
    out = dict((path, value) for path, value in flatten(runc).items()
               if path[0] not in ("options", "runtime_type"))
    if runtime_type in containerd_facts.RUNC_TYPES and runc.get("runtime_type") in containerd_facts.RUNC_TYPES:
        out.update((("options",) + path, value) for path, value in flatten(runc.get("options") or {}).items())
    return out


def effective_mismatches(doc, default_doc, plugin, spec):
    """runtime_mismatches without those where the loaded runtime leaves the key unset and the wanted value
    is the default containerd gives it: the same effective option, nothing to change."""
    defaults = runtime_defaults(default_doc, plugin, spec["table"].get("runtime_type"))
    depth = len(("plugins", plugin, "containerd", "runtimes", spec["name"]))
    out = []
    for path, have, want in runtime_mismatches(doc, plugin, spec):
        key = path[depth:]
        if len(path) > depth and key in defaults and _same(defaults[key], want) and (
                have is ABSENT or _filled_at_start(key, have, defaults[key])):
            continue
        out.append((path, have, want))
    return out


def _filled_at_start(key, have, default):
    """A runtime-level string the dump shows empty for a declared runtime while config default shows the
    release's value (sandbox_mode on 1.7, sandboxer on 2.x: "" and "podsandbox"): the CRI plugin fills it
    in when it starts, so the running runtime has the default."""
    return len(key) == 1 and have == "" and isinstance(default, str) and default != ""


def filled_at_start(default_doc, plugin, path, before, after):
    """A runtime-level string going between "" and the release's default for it (1.7's runc sandbox_mode
    "podsandbox" when a file declares runc): the CRI plugin fills "" in at start, so the running runtime
    has the same value either way."""
    if len(path) != 6 or path[:4] != ("plugins", plugin, "containerd", "runtimes"):
        return False
    default = runtime_defaults(default_doc, plugin, None).get(path[5:])
    return any(empty == "" and _filled_at_start(path[5:], empty, default) and full == default
               for empty, full in ((before, after), (after, before)))


def _same(default, want):
    return type(default) is type(want) and default == want  # False is not 0: a bool option stays a bool


def cdi_always_on(default_doc, plugin):
    """True where this containerd has no enable_cdi key but reads CDI specs (2.4.2's config default lists
    cdi_spec_dirs only): CDI is on, and a file that sets enable_cdi gets 'Ignoring unknown key'."""
    cri = get_in(default_doc or {}, "plugins", plugin)
    return isinstance(cri, dict) and "enable_cdi" not in cri and "cdi_spec_dirs" in cri


def adopted_note(spec, doc, default_doc, plugin):
    """The note for a runtime that is adopted although some wanted keys are unset where it is loaded."""
    defaults = runtime_defaults(default_doc, plugin, spec["table"].get("runtime_type"))
    loaded = flatten(get_in(doc, "plugins", plugin, "containerd", "runtimes", spec["name"]) or {})
    unset = [p for p in sorted(flatten(spec["table"])) if p not in loaded and p in defaults]
    if not unset:
        return "%s is already loaded as wanted; nothing to write for it" % spec["name"]
    return "%s is already loaded as wanted (%s unset, which is containerd's default %s); adopted as it is, nothing " \
        "to write for it" % (spec["name"], ", ".join(key_path(p) for p in unset),
                             ", ".join(toml_codec.literal(defaults[p]) for p in unset))


def _plugin_tables(doc):
    """{plugin name: table} of a parsed file, the CRI runtime plugin under any of its names."""
    plugins = doc.get("plugins") if isinstance(doc, dict) else None
    if not isinstance(plugins, dict):
        return {}
    return dict((name, table) for name, table in plugins.items()
                if name in shapes.CRI_PLUGIN_NAMES and isinstance(table, dict))


def _cri_keys(doc):
    """The key paths a file sets in its CRI section, the plugin name dropped (a version 2 file's runtimes
    meet a version 3 file's)."""
    keys = set()
    for table in _plugin_tables(doc).values():
        keys.update(flatten(table).keys())
    return keys


def _named(keys):
    shown = ", ".join(key_path(k) for k in keys[:_MAX_KEYS_NAMED])
    return shown + (" and %d more" % (len(keys) - _MAX_KEYS_NAMED) if len(keys) > _MAX_KEYS_NAMED else "")


def precedence_notes(major, order, own_paths, texts, main_path):
    """What will take precedence between the role's files and every other file containerd merges that sets
    CRI keys: another tool's drop-in always, the main config where it sets keys the role's files set too.

    order: the files containerd will merge after the run, in its order; own_paths: the role's files after
    the run; texts: {path: text} of the files in order (the planned text for the role's)."""
    docs = {}
    for path in order:
        try:
            docs[path] = toml_codec.loads(texts.get(path) or "", path)
        except toml_codec.TomlError:
            docs[path] = {}
    mine = [p for p in order if p in own_paths and _plugin_tables(docs[p])]
    if not mine:
        return []
    my_keys = set()
    for path in mine:
        my_keys |= _cri_keys(docs[path])
    notes = []
    for index, path in enumerate(order):
        if path in own_paths or not _plugin_tables(docs[path]):
            continue
        overlap = sorted(my_keys & _cri_keys(docs[path]))
        if path == main_path and (major < 2 or not overlap):
            continue  # merged first: on 2.x it loses only the keys a drop-in sets too; 1.x's closure notes it
        later = [p for p in mine if order.index(p) > index]
        if later and major >= 2:
            notes.append(
                "precedence: containerd 2.x merges the drop-ins in lexical order and the later file wins per key; "
                "%s sorts after %s, so the role's %s take precedence over that file, including its owner's later "
                "edits of %s; its other keys still apply" % (
                    later[-1], path, ("keys " + _named(overlap)) if overlap else "keys (%s sets none of them now)" % path,
                    "them" if overlap else "the same keys"))
        elif later:
            notes.append(
                "precedence: containerd 1.x merges %s after %s and takes the whole CRI section from the last file that "
                "declares it, so the role's file takes precedence over everything %s sets in the CRI section, including "
                "its owner's later edits; the role's file carries the key-by-key merge of it as of this run, so run "
                "the role again after that tool changes its file" % (later[-1], path, path))
        else:
            notes.append(
                "precedence: containerd merges %s after the role's %s, so %s wins %s%s" % (
                    path, mine[-1], path, "per key" if major >= 2 else "the whole CRI section",
                    " (%s)" % _named(overlap) if overlap and major >= 2 else ""))
    return notes

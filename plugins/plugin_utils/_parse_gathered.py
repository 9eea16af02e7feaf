# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of gathering: turn the texts a node reported into parsed summaries."""

import json
import os

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _ownership as ownership
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._gathered import Gathered, JudgedGathered
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as config_shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _fragment_carry as fragment_carry
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _loader_warnings as loader_warnings
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec


class DumpError(ValueError):
    pass


def summarize_dump(text, source="containerd config dump output"):
    """Summary of a dump text; DumpError (never another exception) on bad input."""
    return _dump_and_summary(text, source)[1]


def _dump_and_summary(text, source="containerd config dump output"):
    if not text or not text.strip():
        raise DumpError("%s is empty" % source)
    try:
        doc = toml_codec.loads(text, source)
        summary = config_shapes.summarize(doc)
    except (toml_codec.TomlError, config_shapes.ConfigShapeError) as exc:
        raise DumpError(str(exc) if isinstance(exc, toml_codec.TomlError) else "%s: %s" % (source, exc))
    add_runtime_files(doc, summary)
    return doc, summary


def _text(value):
    return value if isinstance(value, str) else ""


def add_runtime_files(doc, summary):
    """Each loaded runtime's ``config_path`` (options.ConfigPath, kata's) and ``base_runtime_spec``:
    files a runtime needs on the node besides its binary."""
    for plugin, section in config_shapes.cri_sections(doc):
        runtimes = ((section.get("containerd") or {}).get("runtimes") or {}) if isinstance(section, dict) else {}
        if not isinstance(runtimes, dict):
            continue
        for name, table in runtimes.items():
            loaded = summary["runtimes"].get(name)
            if loaded is None or loaded.get("plugin") != plugin or not isinstance(table, dict):
                continue
            options = table.get("options") if isinstance(table.get("options"), dict) else {}
            loaded["config_path"] = _text(options.get("ConfigPath"))
            loaded["base_runtime_spec"] = _text(table.get("base_runtime_spec"))


def summarize_file(entry, loaded_doc=None):
    """Parsed facts of one config file a node reported: version, runtimes per plugin, imports. A file
    nothing imports also says whether it is a config fragment, and which of its settings the loaded
    config (loaded_doc, the dump) does not carry."""
    return _summary_and_doc(entry, loaded_doc)[0]


def _summary_and_doc(entry, loaded_doc=None):
    """(summarize_file's summary, the parsed document or None)."""
    summary = {"path": entry["path"], "role": entry["role"], "error": entry.get("error")}
    doc = None
    if entry.get("content") is None:
        return summary, doc
    try:
        doc = toml_codec.loads(entry["content"], entry["path"])
        summary.update(
            version=config_shapes.config_version(doc),
            version_written="version" in doc,
            runtimes_by_plugin=dict(
                (plugin, sorted(runtimes)) for plugin, runtimes in config_shapes.runtimes_by_plugin(doc).items()
            ),
            plugins=sorted((doc.get("plugins") or {}).keys()) if isinstance(doc.get("plugins"), dict) else [],
            imports=doc.get("imports", []),
            runtimes_tables=runtimes_tables(doc),
            disabled_plugins=config_shapes.disabled_plugins(doc),
        )
        if entry["role"] == "unreferenced":
            summary["fragment"] = fragment_carry.is_fragment(doc)
            summary["placeholders"] = fragment_carry.has_placeholders(doc)
            if loaded_doc is not None:
                summary["not_carried_count"], summary["not_carried"] = fragment_carry.not_carried(doc, loaded_doc)
                if summary["not_carried_count"] and summary["fragment"]:
                    summary["load"] = fragment_carry.load_verdict(
                        entry.get("load"), loaded_doc, lambda text: toml_codec.loads(text, "the dump with it imported"))
    except (toml_codec.TomlError, config_shapes.ConfigShapeError) as exc:
        summary["error"] = str(exc)
        doc = None
    return summary, doc


def runtimes_tables(doc):
    """CRI plugin names whose ``containerd`` table has a ``runtimes`` key, even an empty one:
    containerd 2.x migrating a version 2 config lets such a table under
    io.containerd.cri.v1.runtime replace the runtimes of io.containerd.grpc.v1.cri (measured)."""
    out = []
    for plugin, section in config_shapes.cri_sections(doc):
        containerd = section.get("containerd")
        if isinstance(containerd, dict) and "runtimes" in containerd:
            out.append(plugin)
    return sorted(out)


def parse_gathered(result: Gathered) -> JudgedGathered:
    """Add ``loaded`` (the dump) and ``files[*].parsed`` to a containerd_config_info result.
    A config containerd refused has no dump: ``loaded`` is None, and the files are still parsed."""
    doc = None
    if result.get("dump") is None and result.get("refused"):
        result["loaded"] = None
    else:
        doc, result["loaded"] = _dump_and_summary(result.get("dump"))
    merged = []
    for entry in result.get("files", []):
        entry["parsed"], file_doc = _summary_and_doc(entry, doc)
        if file_doc is not None and entry["role"] in ("main", "imported"):
            merged.append((entry["path"], file_doc))
    add_named_inputs(result.get("files", []))
    # containerd's own load warnings, each with the file that sets what it names
    result["load_warnings"] = loader_warnings.read(result.get("dump_warnings"), merged, doc) if doc is not None else []
    return result


def add_named_inputs(files):
    """``generated`` (its header line) on each loaded file a generator marks as its output, and ``named_by``
    on each unreferenced file such a header names as its input ("DO NOT EDIT. Use config-v3.toml.tmpl
    instead."): the evidence of a generator's input."""
    named = {}
    for entry in files:
        if entry["role"] in ("main", "imported") and entry.get("content"):
            line, name = ownership.header(entry["content"])
            if line:
                entry["parsed"]["generated"] = line
            if name:
                path = os.path.normpath(os.path.join(os.path.dirname(entry["path"]), name))
                named.setdefault(path, "%s: '%s'" % (entry["path"], line))
    for entry in files:
        if entry["role"] == "unreferenced" and os.path.normpath(entry["path"]) in named:
            entry["parsed"]["named_by"] = named[os.path.normpath(entry["path"])]


def drop_texts(result):
    """Keep only the parsed facts of a gather result once parse_gathered() ran: the dump and each
    file's text go. A registered result stays in the controller's memory for the whole play, for
    every host; the judging reads the parsed ``loaded`` and ``files[*].parsed`` (and a file's
    ``error`` says when it was not read). The kubelet config stays: the cgroup check parses it."""
    result.pop("dump", None)
    for entry in result.get("files", []):
        entry.pop("content", None)
        entry.pop("load", None)  # its verdict is in parsed.load
    return result


PACKED = "packed"
# What ansible-core itself reads or sets on a task result: never packed.
_RESULT_KEYS = frozenset(("changed", "failed", "msg", "skipped", "skip_reason", "unreachable", "warnings",
                          "deprecations", "exception", "invocation", "failed_when_result", "changed_when_result"))


def pack(result):
    """A gather result with its facts as one JSON text under ``packed``, ansible's own keys beside it.

    ansible-core's linear strategy holds every host's raw result until the task ends on all of them, and the
    registered copy beside it: a tree's dicts and lists are copied, a text is shared. Measured on a containerd
    2.1 node: about 5.3 KiB as text against about 20 KiB of Python objects per copy."""
    facts = dict((key, value) for key, value in result.items() if key not in _RESULT_KEYS and not key.startswith(("_ansible", "ansible_")))
    out = dict((key, value) for key, value in result.items() if key not in facts)
    # default=str: a value JSON has no type for (a TOML date a summary kept) as its text, never a traceback
    out[PACKED] = json.dumps(facts, separators=(",", ":"), sort_keys=True, default=str)
    return out


def unpack(result):
    """A gather result as containerd_config_info returns it without ``packed``; any other value unchanged
    (an unreachable or skipped host's result has nothing packed). A text that is not a packed gather raises
    ValueError."""
    if not isinstance(result, dict) or PACKED not in result:
        return result
    try:
        facts = json.loads(result[PACKED])
    except (TypeError, ValueError) as exc:
        raise ValueError("the gather result's packed facts are not JSON (%s)" % exc)
    if not isinstance(facts, dict):
        raise ValueError("the gather result's packed facts are not an object")
    facts.update((key, value) for key, value in result.items() if key != PACKED)
    return facts

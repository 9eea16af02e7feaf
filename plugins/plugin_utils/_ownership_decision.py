# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a write to a containerd config file will still be there after the next containerd start
and boot, decided from the evidence the node reported (module_utils/_ownership.gather), never from
a list of tool names: the file system must take the write, no generator may rewrite the file, and
the file must be the one the service loads. See docs/remediation-ownership.md.

decide() gives, per file: the owner, whether it is writable, the input that survives when a
generator owns it, and the decision: 'write' (nobody rewrites it), 'write-input' (write the
surviving input instead), 'refuse' (nothing on the node that the role may write survives). A file a
provisioner renders whole on its next run (its header, or files of its own on the node) is written and
said so (next_run). Names of projects appear only in what the outcome says: how an owner documents the
change, with the paths this node shows.

Controller only.
"""

import os
import re

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths

WRITE = "write"
WRITE_INPUT = "write-input"
REFUSE = "refuse"
VOLATILE_FS = ("tmpfs", "ramfs")

# os-release IDs of systems whose configuration is an image plus an API, never node edits: a marker
# of ownership on its own, kept next to the hint of how each documents adding a runtime.
IMMUTABLE_OS = {
    "talos": "the machine configuration: a CRICustomizationConfig document, or machine.files creating "
             "/etc/cri/conf.d/20-customization.part (talosctl apply-config / patch)",
    "bottlerocket": "none on the node: the variant image brings the runtimes (other containerd settings go through "
                    "its settings API: apiclient set, or user data)",
    "flatcar": "copy the file to /etc/containerd/config.toml and select it with a unit drop-in "
               "(/etc/systemd/system/containerd.service.d/10-use-custom-config.conf)",
    "cos": "the node pool's configuration (the node is rebuilt from its image)",
}
# Content-addressed stores: a path in one is built from a declarative system configuration and never
# edited in place, whatever the mount says (a store can be writable to root). By path prefix: the owner
# and how it documents adding a runtime.
STORES = (
    ("/nix/store/", "Nix (NixOS builds /nix/store from its configuration)",
     "virtualisation.containerd.settings in the NixOS configuration (the runtime under plugins."
     "\"io.containerd.cri.v1.runtime\".containerd.runtimes), then nixos-rebuild switch"),
    ("/gnu/store/", "GNU Guix (it builds /gnu/store from the system declaration)",
     "the containerd service's configuration in the Guix system declaration, then guix system reconfigure"),
)
# Generators found by their evidence, by the words of their header or unit: the name the advice uses. The paths the
# advice names are the node's own (_generator_way), never a list of defaults.
GENERATORS = (
    (re.compile(r"\bk3s\b", re.I), "k3s"),
    (re.compile(r"\brke2\b", re.I), "rke2"),
    (re.compile(r"k0s", re.I), "k0s"),
    (re.compile(r"microk8s", re.I), "microk8s"),
)
# Provisioners that render the file whole when they run next (not at a start): found by the header they write or
# by files of their own they leave on the node (evidence.marks); each with its own input for a runtime.
PROVISIONERS = (
    {"tool": "kubespray", "mark": re.compile(r"^/etc/(?:modules-load\.d|systemd/resolved\.conf\.d)/kubespray[-.]"),
     "input": "kubespray's containerd_additional_runtimes inventory variable (a list of {name, type, options}; "
              "its role renders them into config.toml)"},
    {"tool": "Ansible", "header": re.compile(r"\bansible managed\b", re.I),
     "input": "the variables of the Ansible role that templates this file"},
    {"tool": "Puppet", "header": re.compile(r"\bpuppet\b", re.I),
     "input": "the Puppet class parameters (or Hiera data) that manage this file"},
    {"tool": "Chef", "header": re.compile(r"\bchef\b", re.I),
     "input": "the attributes of the Chef cookbook that renders this file"},
    {"tool": "Salt", "header": re.compile(r"\bsalt\b", re.I),
     "input": "the Salt state (and its pillar data) that manages this file"},
)


def provisioner(evidence, file_ev, is_main):
    """{tool, input, evidence} of the provisioner that renders the file on its next run, else None: by the
    header the file carries, or (for the main config only) by files of its own the tool left on the node."""
    line = file_ev.get("header")
    for item in PROVISIONERS:
        if line and item.get("header") and item["header"].search(line):
            return {"tool": item["tool"], "input": item["input"],
                    "evidence": ["%s says %r" % (file_ev["node_path"], line)]}
    if not is_main or line:
        return None
    for item in PROVISIONERS:
        marks = [m for m in evidence.get("marks") or [] if item.get("mark") and item["mark"].search(m)]
        if marks:
            return {"tool": item["tool"], "input": item["input"],
                    "evidence": ["%s left %s on the node" % (item["tool"], ", ".join(marks))]}
    return None


def next_run_note(node_path, found):
    """What the outcome says of a main config a provisioner renders whole on its next run."""
    return ("next run: %s is rendered whole by %s on its next run (%s): the imports line this run adds to it is lost "
            "then, and the role's drop-ins are no longer loaded after the following containerd restart; add the "
            "runtime through %s" % (node_path, found["tool"], "; ".join(found["evidence"]), found["input"]))


def _generic_way(owner, file_ev=None):
    """An owner the collection knows no input of: what the node shows beside its file, else that it shows none."""
    templates = [os.path.basename(p) for p in _templates(file_ev)] if file_ev else []
    if templates:
        return "the input %s documents: the node shows %s beside %s, and nothing says which one it reads" % (
            owner or "its owner", ", ".join(templates), file_ev["node_path"])
    return "the input %s documents; the node shows no template beside the file and no drop-in directory it imports " \
        "that the role may write" % (owner or "its owner")


def _generator_name(owner_text):
    for pattern, name in GENERATORS:
        if owner_text and pattern.search(owner_text):
            return name
    return None


def _generator_way(name, file_ev, imports, version, root):
    """The generator's documented input, named only where the node shows it: a drop-in directory the generated
    file imports, a template beside it (or the one the generator reads for this config version)."""
    node_file = file_ev["node_path"] if file_ev else None
    beside = [os.path.basename(p) for p in _templates(file_ev)] if file_ev else []
    ways = []
    for pattern in [host_paths.on_node(root, p) for p in imports or [] if "*" in os.path.basename(p)]:
        ways.append("a drop-in in %s/ (%s imports %s)" % (os.path.dirname(pattern), node_file or "the file", pattern))
    if name in ("k3s", "rke2") and node_file:
        wanted = "config-v3.toml.tmpl" if (version or 0) >= 3 else "config.toml.tmpl"
        named = file_ev.get("header_names")
        template = named if named and "/" not in named and named in beside else \
            (wanted if version is not None else None)
        if template:
            ways.append("%s beside the generated file (%s; %s renders %s from it at every start, a Go template: "
                        "{{ template \"base\" . }} keeps its own content)" % (
                            os.path.join(os.path.dirname(node_file), template),
                            "it exists" if template in beside else
                            "%s reads it for a version %s config" % (name, version), name, node_file))
    elif name == "microk8s" and beside:
        ways.append("%s, which the snap renders at every start" % os.path.join(os.path.dirname(node_file), beside[0]))
    if ways:
        return " or ".join(ways)
    return "the input %s reads (the node shows no drop-in directory the generated file imports and no template of " \
        "it beside %s)" % (name, node_file or "the file")


def documented_way(os_id, owner_text, file_ev=None, imports=None, version=None, root="/"):
    """How the owner documents adding a runtime, with the paths this node shows (file_ev: the evidence of the
    generated file; imports: its imports entries as machine paths; version: its config version)."""
    if os_id in IMMUTABLE_OS:
        return IMMUTABLE_OS[os_id]
    name = _generator_name(owner_text)
    if name:
        return _generator_way(name, file_ev, imports or [], version, root)
    return _generic_way(owner_text, file_ev)


_BY = re.compile(r"(?:generated|managed|written|rendered) by\s+([\w.@/-]+?)[.,;:]?(?:\s|$)", re.I)
_FLAG = re.compile(r"\b(\w+)_managed\s*=\s*true", re.I)


def owner_in_header(line):
    """Who a generated header names ('generated by k3s' -> k3s, 'k0s_managed=true' -> k0s), else the line."""
    for pattern in (_BY, _FLAG):
        match = pattern.search(line)
        if match:
            return match.group(1)
    return line.lstrip("#/; ")


def _unwritable_owner(evidence, file_ev):
    """Who keeps a file from being written, by the cause measured: the mount when it is read-only, else the
    file (or the directory it would be created in) itself."""
    mount = file_ev["writable"].get("mount") or {}
    if mount.get("read_only"):
        return "whoever mounted %s read-only" % mount.get("mount_point", "it")
    return "whoever owns %s" % host_paths.on_node(evidence.get("root") or "/", file_ev["writable"]["target"])


def store_of(node_path):
    """(store directory, owner, documented way) of the content-addressed store node_path lies in, else None."""
    for prefix, owner, way in STORES:
        if (node_path or "").startswith(prefix):
            return prefix.rstrip("/"), owner, way
    return None


def _service_configs(evidence):
    """[(unit, config node path, source)] of the services that start containerd with a known config."""
    out = []
    for service in evidence.get("services") or []:
        for step in service.get("commands") or []:
            if step.get("key") == "ExecStart" and step.get("config"):
                out.append((service["unit"], step["config"], step.get("source")))
    return out


def _import_dirs(imports):
    """Directories of the file's own imports globs: a drop-in there is merged whatever the generator
    writes, as long as it writes the same imports line."""
    return [os.path.dirname(p) for p in imports or [] if "*" in os.path.basename(p)]


def _generator(file_ev, next_run_header=False):
    """(owner text, [evidence lines]) when something rewrites the file at a start or boot, else (None, []).
    next_run_header: the header is a provisioner's, which renders the file on its next run (not evidence here)."""
    lines = []
    owner = None
    for start in file_ev.get("rendered_by") or []:
        lines.append("%s of %s runs %s, which writes %s" % (
            start["key"], start["unit"], start.get("script") or "a command", file_ev["node_realpath"]))
        owner = owner or start["unit"]
    if file_ev.get("header") and not next_run_header:
        lines.append("%s says %r" % (file_ev["node_path"], file_ev["header"]))
        owner = owner or owner_in_header(file_ev["header"])
    parts = [p for p in file_ev.get("inputs_beside") or [] if p.endswith(".part")]
    if parts:
        lines.append("%s is merged from the parts beside it (%s)" % (
            file_ev["node_path"], ", ".join(os.path.basename(p) for p in parts)))
        owner = owner or "the generator of %s" % os.path.dirname(file_ev["node_path"])
    templates = _templates(file_ev)
    if templates and owner is None:  # the only evidence: a template beside it, which some generator renders
        lines.append("%s has a template beside it (%s)" % (
            file_ev["node_path"], ", ".join(os.path.basename(p) for p in templates)))
        owner = "the generator that renders %s from %s" % (
            file_ev["node_path"], ", ".join(os.path.basename(p) for p in templates))
    snap = file_ev.get("snap")
    if snap and (file_ev.get("rendered_by") or file_ev.get("inputs_beside")):
        lines.append("%s lies in the data of snap %s (revision %s)" % (file_ev["node_path"], snap["snap"], snap["revision"]))
        owner = "snap %s (%s)" % (snap["snap"], owner) if owner else "snap %s" % snap["snap"]
    return owner, lines


def _surviving_input(file_ev, imports, writable_dir, root="/"):
    """(node path, why) of the input the generator keeps: a directory the generated file imports
    with a glob, else a template the start reads or the header names; (None, None) when none.
    imports are machine paths (as gathered): the directory is named as the node names it, so that
    the caller maps it under root once."""
    for directory in _import_dirs(imports):
        if writable_dir(directory):
            directory = host_paths.on_node(root, directory)
            return directory + "/", "the generated file imports %s/*, so a drop-in there is merged after every " \
                                    "regeneration" % directory
    beside = dict((os.path.basename(p), p) for p in file_ev.get("inputs_beside") or [])
    for start in file_ev.get("rendered_by") or []:
        for name in start.get("reads") or []:
            if name in beside and not name.endswith(".part"):
                return _node(file_ev, beside[name]), "%s renders the file from it at every start" % start["unit"]
    named = file_ev.get("header_names")
    if named and "/" not in named:
        return os.path.join(os.path.dirname(file_ev["node_path"]), named), "the file's header names it"
    templates = _templates(file_ev)
    if len(templates) == 1:
        return _node(file_ev, templates[0]), "it is the one template beside the file"
    return None, None


def _templates(file_ev):
    """Templates beside the file (not the parts a generator merges)."""
    return [p for p in file_ev.get("inputs_beside") or [] if not p.endswith(".part")]


def _node(file_ev, path):
    """A machine path beside the file as its node path."""
    return os.path.join(os.path.dirname(file_ev["node_path"]), os.path.basename(path))


def decide(evidence, path, config_path=None, imports=None, writable_dir=None, version=None):
    """The decision for one file (a machine path, as gathered). config_path: the main config the
    role edits (to compare with the config the service starts); imports: the resolved imports
    entries the file declares (node paths); writable_dir(node dir) -> bool for import dirs; version: the
    file's config version (the input a generator reads for it). A file a provisioner renders on its next run
    is written, with next_run ({tool, input, evidence}) and the message saying so."""
    file_ev = evidence["files"][path]
    os_rel = evidence.get("os_release") or {}
    os_id = os_rel.get("ID")
    node_path = file_ev["node_path"]
    writable_dir = writable_dir or (lambda _d: True)
    out = {"path": node_path, "owner": None, "writable": file_ev["writable"]["ok"], "surviving_input": None,
           "decision": WRITE, "evidence": [], "message": "", "next_run": None}
    mount = file_ev["writable"].get("mount") or {}
    found = provisioner(evidence, file_ev, config_path is not None and path == config_path)
    gen_owner, gen_lines = _generator(file_ev, next_run_header=bool(found and file_ev.get("header")))
    root = evidence.get("root") or "/"

    def way(owner):
        return documented_way(os_id, owner, file_ev, imports, version, root)

    def refuse(owner, why, way):
        out.update(owner=owner, decision=REFUSE, evidence=why,
                   message="%s: not written: %s. Its owner is %s; the documented way: %s. Nothing was written."
                   % (node_path, "; ".join(why), owner, way))
        return out

    store = store_of(node_path) or store_of(file_ev["node_realpath"])
    if store:
        return refuse(store[1], ["%s lies in %s, whose paths are built and never edited in place" % (node_path, store[0])]
                      + ([] if file_ev["writable"]["ok"] else file_ev["writable"]["reasons"]), store[2])
    if not file_ev["writable"]["ok"] and file_ev["writable"].get("dangling") is not None:
        link = host_paths.on_node(evidence.get("root") or "/", file_ev["writable"]["target"])
        return refuse(gen_owner or "whoever made the symlink %s" % link, file_ev["writable"]["reasons"] + gen_lines,
                      "create %s, or point %s at the directory that should hold the file, then run again"
                      % (file_ev["writable"]["dangling"], link))
    if not file_ev["writable"]["ok"]:
        owner = os_rel.get("NAME") if os_id in IMMUTABLE_OS else (gen_owner or _unwritable_owner(evidence, file_ev))
        return refuse(owner, file_ev["writable"]["reasons"] + gen_lines, way(gen_owner or owner))
    unread = ["%s: %s" % (s["unit"], e) for s in evidence.get("services") or [] for e in s.get("errors") or []]
    if unread:
        return refuse("unknown (the unit that starts containerd could not be read)",
                      ["cannot read what starts containerd: %s" % "; ".join(unread)],
                      "make the unit readable, then run again")
    if config_path is not None and path == config_path:
        real = file_ev["node_realpath"]
        for unit, config, source in _service_configs(evidence):
            store = store_of(config)
            if config not in (real, node_path) and store:
                return refuse(store[1], ["%s starts containerd with --config %s (%s), in %s, so %s is not what it loads"
                                         % (unit, config, source, store[0], node_path)], store[2])
            if config not in (real, node_path):
                selector = "%s, whose %s selects the config" % (os_rel.get("NAME"), unit) if os_id in IMMUTABLE_OS \
                    else "%s (its unit selects the config)" % unit
                return refuse(selector,
                              ["%s starts containerd with --config %s (%s), so %s is not what it loads"
                               % (unit, config, source, node_path)],
                              documented_way(os_id, unit) if os_id in IMMUTABLE_OS else
                              "register the runtime in %s, or select %s with a drop-in of %s" % (config, node_path, unit))
    if os_id in IMMUTABLE_OS:
        return refuse(os_rel.get("NAME") or os_id, ["the node runs %s (os-release ID=%s), whose configuration is not "
                                                    "edited on the node" % (os_rel.get("NAME") or os_id, os_id)] + gen_lines,
                      IMMUTABLE_OS[os_id])
    if mount.get("fstype") in VOLATILE_FS:
        return refuse(gen_owner or "the boot (a %s at %s)" % (mount["fstype"], mount["mount_point"]),
                      ["%s is on a %s (%s), rebuilt empty at every boot" % (node_path, mount["fstype"], mount["mount_point"])]
                      + gen_lines, way(gen_owner))
    if gen_owner:
        target, why = _surviving_input(file_ev, imports, writable_dir, root)
        if target:
            out.update(owner=gen_owner, decision=WRITE_INPUT, surviving_input=target, evidence=gen_lines,
                       message="%s is rewritten by %s; the change goes to %s instead (%s)"
                       % (node_path, gen_owner, target, why))
            return out
        return refuse(gen_owner, gen_lines, way(gen_owner))
    if found:
        out.update(owner=found["tool"], next_run=found, evidence=found["evidence"],
                   message=next_run_note(node_path, found))
        return out
    out["message"] = "%s: nothing rewrites it (no generated header, template, rendering start, read-only or " \
                     "volatile mount)" % node_path
    return out

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's checks, declared once in REGISTRY: pure functions from what a node reported
(and the cluster's RuntimeClasses) to findings, each with node, check id, severity, evidence
and a fix. The audit, skip_checks, the JSON and JUnit reports and the README's check table all
come from REGISTRY; a check whose input is missing is reported as skipped, never as passed.

Every check judges the *loaded* config (the dump); the files on disk only explain why
something is missing from it, and the running view (crictl info) says what runs now.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import os
import re

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import containerd_shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import yaml_loader
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import quantity

SEVERITIES = ("error", "warning", "info")
FAIL_ON_CHOICES = SEVERITIES + ("none",)
# The options every judging action takes (audit_report, rollout's re-audit, runtime_check).
JUDGE_SPEC = dict(
    pod_requests=dict(type="dict"),
    kubelet_cgroup_driver=dict(type="str", choices=["systemd", "cgroupfs"]),
    skip_checks=dict(type="list", elements="str", default=[]),
    fail_on=dict(type="str", default="error", choices=list(FAIL_ON_CHOICES)),
)

V1, V2, V3 = containerd_shapes.CRI_PLUGIN_V1, containerd_shapes.CRI_PLUGIN_V2, containerd_shapes.CRI_PLUGIN_V3
_RUNC_TYPES = ("io.containerd.runc.v2", "io.containerd.runc.v1", "io.containerd.runtime.v1.linux")
# containerd 2.3 refuses a drop-in whose version is above the root file's (measured, 2.3.4).
_REFUSES_DROPIN_ABOVE_ROOT = (2, 3)


class NotRun(Exception):
    """A check could not run on this node; the message says why (reported as skipped)."""


# --- text: one line, printable, valid in XML ---------------------------------------------

_UNPRINTABLE = re.compile(u"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


def one_line(text):
    """text with every control character (newline, ESC of ANSI sequences, ...) shown as an
    escape, so that a handler named "a\\nOK" can never print a line of its own, and the text is
    valid in XML 1.0."""
    if text is None:
        return ""
    text = text if isinstance(text, str) else str(text)

    def escape(match):
        char = match.group(0)
        known = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
        if char in known:
            return known[char]
        code = ord(char)
        return "\\x%02x" % code if code < 0x100 else "\\u%04x" % code
    return _UNPRINTABLE.sub(escape, text)


# --- findings ----------------------------------------------------------------------------

def finding(node, check, severity, subject, message, fix, evidence=None):
    return {
        "node": node,
        "check": check,
        "severity": severity,
        "subject": subject,
        "message": message,
        "fix": fix,
        "evidence": evidence or {},
    }


def sort_findings(items):
    rank = dict((s, i) for i, s in enumerate(SEVERITIES))
    return sorted(items, key=lambda f: (f["node"], rank[f["severity"]], f["check"], f["subject"], f["message"]))


def reaches(severity, fail_on):
    """Whether a finding of severity fails a run whose threshold is fail_on."""
    if fail_on == "none":
        return False
    return SEVERITIES.index(severity) <= SEVERITIES.index(fail_on)


def finding_line(item, with_node=False):
    """The one formatter of a finding as a line: `ERROR check: message (fix: fix)`; the audit,
    crosscheck, the re-audit and the summary callback all print findings with it."""
    line = "%s %s: %s (fix: %s)" % (item["severity"].upper(), item["check"], one_line(item["message"]),
                                    one_line(item["fix"]))
    return "%s: %s" % (one_line(item["node"]), line) if with_node else line


def missing_lines(findings):
    """The seed lab's contract: one MISSING=<handler> line per missing handler."""
    return sorted(set("MISSING=%s" % one_line(f["subject"]) for f in findings if f["check"] == "missing_handler"))


def not_checked_line(reason):
    return "NOT CHECKED: %s" % one_line(reason)


# --- what a node can run ------------------------------------------------------------------

def _label_text(value):
    """Label values are strings; YAML inventories turn `true` and `1` into bool and int."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return None if value is None else str(value)


def selector_matches(node_selector, labels):
    """(applies, why) for a RuntimeClass scheduling.nodeSelector against node labels.

    Unknown labels (None) count as a match: a handler that might land on the node
    is checked rather than silently passed.
    """
    if not node_selector:
        return True, "no nodeSelector"
    if labels is None:
        return True, "node labels unknown; assumed the RuntimeClass can land here"
    for key, value in sorted(node_selector.items()):
        have = _label_text(labels.get(key))
        if have != _label_text(value):
            return False, "nodeSelector %s=%s does not match (node has %r)" % (key, value, have)
    return True, "nodeSelector matches"


def applicable_runtimeclasses(runtimeclasses, labels):
    """[(runtimeclass, why)] for RuntimeClasses whose pods can be scheduled on the node."""
    out = []
    for runtimeclass in runtimeclasses:
        applies, why = selector_matches(runtimeclass.get("node_selector"), labels)
        if applies:
            out.append((runtimeclass, why))
    return out


class Context(object):
    """What one node's checks read: its gather result (or reported handlers), the RuntimeClasses
    that can land on it, its labels and allocatable, and the run's options."""

    def __init__(self, node, gathered=None, runtimeclasses=(), labels=None, allocatable=None, options=None,
                 handlers=None, source=None):
        self.node = node
        self.gathered = gathered or {}
        self.runtimeclasses = list(runtimeclasses or [])
        self.labels = labels
        self.allocatable = allocatable
        self.options = options or {}
        loaded = self.gathered.get("loaded")
        self.loaded = loaded if isinstance(loaded, dict) else None
        if handlers is None and self.loaded is not None:
            handlers = self.loaded.get("runtime_names", [])
        self.handlers = None if handlers is None else set(handlers)
        self.source = source or "the loaded containerd config of %s" % node
        self.applicable = applicable_runtimeclasses(self.runtimeclasses, labels)
        self.asked_here = set(rc["handler"] for rc, _why in self.applicable)

    @property
    def version(self):
        """(major, minor) of the node's containerd, or None for a bare dump."""
        if "version_major" not in self.gathered:
            return None
        return self.gathered["version_major"], self.gathered.get("version_minor", 0)

    def kubelet_driver(self):
        """kubelet_cgroup_driver() of this node, its config parsed once for the need and the check."""
        if not hasattr(self, "_kubelet_driver"):
            try:
                self._kubelet_driver = kubelet_cgroup_driver(self.gathered.get("kubelet_config"),
                                                             self.options.get("kubelet_cgroup_driver"))
            except NotRun as exc:
                self._kubelet_driver = exc
        if isinstance(self._kubelet_driver, NotRun):
            raise NotRun(str(self._kubelet_driver))
        return self._kubelet_driver

    @property
    def default_runtime(self):
        return (self.loaded or {}).get("default_runtime_name") or ""

    @property
    def reachable(self):
        """Runtimes a pod of this node can run in: the default, and every handler named by a
        RuntimeClass that can land here."""
        return set([self.default_runtime or "runc"]) | self.asked_here


# --- missing_handler -----------------------------------------------------------------------

# Names of real runtimes: a missing one is missing, not a typo of its neighbour
# (crun is not a misspelt runc, runsc not a misspelt runc, nvidia-cdi not a misspelt nvidia).
KNOWN_HANDLERS = frozenset([
    "runc", "crun", "runsc", "gvisor", "youki", "kata", "nvidia", "nvidia-cdi", "nvidia-legacy",
    "nvidia-experimental", "wasmtime", "wasmedge", "spin", "slight", "lunatic", "sysbox-runc",
])


def _edit_distance(a, b):
    """Optimal string alignment distance (a transposition counts as one edit)."""
    previous2 = None
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[len(b)]


def suggestion(handler, loaded, asked=()):
    """The loaded runtime a typo'd handler most likely meant, or None.

    Only a close name (at most two edits, similar overall), never a runtime that a
    RuntimeClass able to land here asks for itself, and never for a handler that is the name
    of a real runtime: NVIDIA's nvidia-cdi is not a misspelt nvidia, crun not a misspelt runc.
    """
    if handler in KNOWN_HANDLERS or handler.startswith("kata-"):
        return None
    candidates = sorted(n for n in loaded if n and n not in asked and n != handler)
    close = [n for n in candidates if _edit_distance(handler, n) <= 2]
    matches = difflib.get_close_matches(handler, close, n=1, cutoff=0.6)
    return matches[0] if matches else None


def check_missing_handler(ctx):
    out = []
    for runtimeclass, why in ctx.applicable:
        handler = runtimeclass["handler"]
        if handler in ctx.handlers:
            continue
        guess = suggestion(handler, ctx.handlers, ctx.asked_here)
        hint = "; did you mean '%s'?" % guess if guess else ""
        out.append(finding(
            ctx.node, "missing_handler", "error", handler,
            "RuntimeClass %s asks for handler '%s', which %s does not have%s"
            % (runtimeclass["name"], handler, ctx.source, hint),
            ("fix the RuntimeClass handler to '%s' or register a runtime named '%s'" % (guess, handler)) if guess
            else "register runtime '%s' in containerd (role gpurt.runtime_gate.containerd_runtime)" % handler,
            {"runtimeclass": runtimeclass["name"], "handler": handler, "loaded_runtimes": sorted(ctx.handlers),
             "scheduling": why, "suggestion": guess},
        ))
    return out


# --- config_refused: containerd will not start, or starts without its CRI plugin -----------

def _cri_unserved(running):
    error = (running or {}).get("crictl_error") or ""
    return "unknown service runtime.v1.RuntimeService" in error


def _dropins_above_root(gathered):
    """[(path, version, root_version)] of merged drop-ins whose written version is above the root's."""
    files = [f for f in gathered.get("files", []) if f["role"] in ("main", "imported")]
    main = [f for f in files if f["role"] == "main"]
    root = ((main[0].get("parsed") or {}).get("version") if main else None) or 1
    out = []
    for entry in files:
        parsed = entry.get("parsed") or {}
        if entry["role"] == "imported" and parsed.get("version_written") and parsed.get("version", 0) > root:
            out.append((entry["path"], parsed["version"], root))
    return out


def check_config_refused(ctx):
    gathered = ctx.gathered
    refused = gathered.get("refused")
    if refused:
        above = _dropins_above_root(gathered)
        return [finding(
            ctx.node, "config_refused", "error", gathered.get("config_path") or "config",
            "containerd will not start with this config: %s" % refused.get("cause"),
            "fix what containerd names, then check with '%s'" % refused.get("command", "containerd config dump")
            + ("; write the drop-ins with the root file's version (%s)" % ", ".join("%s is %d" % (p, v) for p, v, _r in above)
               if above else ""),
            {"cause": refused.get("cause"), "command": refused.get("command"), "rc": refused.get("rc"),
             "containerd": gathered.get("version"), "loader_warnings": refused.get("warnings", []),
             "dropins_above_root": [{"file": p, "version": v, "root_version": r} for p, v, r in above]},
        )]
    default = ctx.default_runtime
    if not default or default in ctx.handlers:
        return []
    plugin = V3 if (ctx.loaded.get("version") or 2) >= 3 else V2  # 2.x dumps version 3 or 4
    cause = ("failed to load plugin %s: invalid plugin config: no corresponding runtime configured in "
             "`containerd.runtimes` for `containerd` `default_runtime_name = \"%s\"`" % (plugin, default))
    hint = ""
    if (ctx.version or (0, 0))[0] < 2 and default == "runc" and ctx.version is not None:
        hint = "; containerd 1.x keeps no runc of its own once a config declares runtimes"
    running = gathered.get("running") or {}
    return [finding(
        ctx.node, "config_refused", "error", default,
        "containerd starts, but its CRI plugin will not load (%s): no pod runs on the node%s" % (cause, hint),
        "register runtime '%s' next to the others, or set default_runtime_name to a loaded one" % default,
        {"cause": cause, "default_runtime_name": default, "loaded_runtimes": sorted(ctx.handlers),
         "containerd": gathered.get("version"),
         "running_cri": "not served (%s)" % running.get("crictl_error") if _cri_unserved(running) else None},
    )]


# --- default_runtime_blast_radius ---------------------------------------------------------

def check_blast_radius(ctx):
    default = ctx.default_runtime
    if default in ("", "runc"):
        return []
    return [finding(
        ctx.node, "default_runtime_blast_radius", "warning", default,
        "default_runtime_name is '%s': every pod on this node, GPU or not, runs through it, so a "
        "broken '%s' stops all pods of the node" % (default, default),
        "keep default_runtime_name = \"runc\" and select '%s' per pod with a RuntimeClass" % default,
        {"default_runtime_name": default},
    )]


# --- restart_pending: the running daemon against the next start ---------------------------

def _when(epoch):
    import time
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def check_restart_pending(ctx):
    running = ctx.gathered["running"]
    restart = "restart containerd (systemctl restart containerd), in a drained batch"
    if running.get("source") == "crictl":
        out = []
        now = set(running.get("runtimes") or [])
        evidence = {"running_runtimes": sorted(now), "loaded_runtimes": sorted(ctx.handlers),
                    "endpoint": running.get("endpoint")}
        for name in sorted(ctx.handlers - now):
            out.append(finding(
                ctx.node, "restart_pending", "error", name,
                "runtime '%s' is in the loaded config but not in the running containerd (crictl info): "
                "containerd was not restarted after the change, so pods asking for '%s' fail now" % (name, name),
                restart, dict(evidence, runtime=name)))
        for name in sorted(now - ctx.handlers):
            out.append(finding(
                ctx.node, "restart_pending", "warning", name,
                "runtime '%s' runs now but is not in the loaded config: the next containerd start drops it" % name,
                "put '%s' back in the config, or drain its pods before containerd restarts" % name,
                dict(evidence, runtime=name)))
        default_now = running.get("default_runtime_name")
        if default_now is not None and ctx.default_runtime and default_now != ctx.default_runtime:
            out.append(finding(
                ctx.node, "restart_pending", "warning", "default_runtime_name",
                "the running containerd's default runtime is '%s'; the next start makes it '%s'"
                % (default_now, ctx.default_runtime), restart,
                dict(evidence, running_default=default_now, loaded_default=ctx.default_runtime)))
        cdi_now = running.get("enable_cdi")
        cdi_next = (ctx.loaded or {}).get("enable_cdi")
        if cdi_now is not None and cdi_next is not None and cdi_now != cdi_next:
            out.append(finding(
                ctx.node, "restart_pending", "warning", "enable_cdi",
                "the running containerd has enable_cdi = %s; the next start sets %s"
                % (str(cdi_now).lower(), str(cdi_next).lower()), restart,
                dict(evidence, running_enable_cdi=cdi_now, loaded_enable_cdi=cdi_next)))
        return out
    if _cri_unserved(running):
        fixed = ctx.default_runtime in ctx.handlers or not ctx.default_runtime
        return [finding(
            ctx.node, "restart_pending", "error", "cri",
            "the running containerd serves no CRI (%s): its CRI plugin failed to load at start, so no pod runs; %s"
            % (running.get("crictl_error"), "the config loads now, so a restart is due" if fixed
               else "the config still cannot load it (config_refused): fix the config first"),
            restart if fixed else "fix the config (see config_refused), then " + restart,
            {"crictl_error": running.get("crictl_error"), "endpoint": running.get("endpoint")})]
    started, newest = running.get("daemon_started"), running.get("config_newest_mtime")
    if started is None or newest is None:
        raise NotRun("no start time or no config file mtime: %s" % (running.get("error") or "not reported"))
    # /proc's start time is whole seconds of boot time plus clock ticks: allow for its rounding.
    if newest <= started + 2:
        return []
    return [finding(
        ctx.node, "restart_pending", "warning", "config",
        "a config file changed at %s, after containerd started at %s: the running daemon may lack what the "
        "files say (without crictl the runtimes themselves cannot be compared)" % (_when(newest), _when(started)),
        restart + "; install crictl (cri-tools) for the exact comparison",
        {"daemon_started": started, "config_newest_mtime": newest, "pid": running.get("pid"),
         "started_from": running.get("started_from"), "why_no_crictl": running.get("crictl_error")})]


# --- imports and drop-ins -----------------------------------------------------------------

def _dir_of(path):
    return os.path.dirname(path.rstrip("/"))


# Files no import could ever mean to load: editor and package-manager leftovers.
_BACKUP_NAME = re.compile(r"(~|\.bak|\.orig|\.old|\.swp|\.save|\.rpmsave|\.rpmnew|\.rpmorig|\.dpkg-[a-z]+|\.ucf-[a-z]+)$")


def is_backup_name(path):
    """A backup such as 99-nvidia.toml.12345.20250101~, x.toml.bak or x.toml.dpkg-old."""
    return bool(_BACKUP_NAME.search(os.path.basename(path)))


def check_dead_imports(ctx):
    out = []
    files = ctx.gathered.get("files", [])
    for entry in ctx.gathered["imports"]:
        if entry["matches"]:
            continue
        nearby = sorted(f["path"] for f in files if _dir_of(f["path"]) == _dir_of(entry["resolved"])
                        and f["role"] != "main" and not is_backup_name(f["path"]))
        out.append(finding(
            ctx.node, "dead_imports_glob", "warning", entry["pattern"],
            "imports entry '%s' in %s matches no file; containerd skips it without a log line"
            % (entry["pattern"], entry["declared_in"]),
            ("make the pattern match the drop-ins, e.g. '%s'" % os.path.join(_dir_of(entry["resolved"]), "*" + os.path.splitext(nearby[0])[1]))
            if nearby else "remove the entry or write the drop-ins it is meant to load",
            {"pattern": entry["pattern"], "resolved": entry["resolved"], "declared_in": entry["declared_in"],
             "files_in_dir": nearby},
        ))
    return out


def _declared_runtimes(parsed):
    return sorted(set(n for names in (parsed.get("runtimes_by_plugin") or {}).values() for n in names))


def check_orphans(ctx):
    out = []
    gathered = ctx.gathered
    resolved = [e["resolved"] for e in gathered.get("imports", [])]
    for entry in gathered["files"]:
        if entry["role"] != "unreferenced" or is_backup_name(entry["path"]):
            continue
        parsed = entry.get("parsed") or {}
        declared = _declared_runtimes(parsed)
        lost = [n for n in declared if n not in ctx.handlers]
        same_dir = [p for p in resolved if _dir_of(p) == _dir_of(entry["path"])]
        if same_dir:
            why = "no imports entry matches it (entries for its dir: %s)" % ", ".join(same_dir)
        elif resolved:
            why = "imports read other dirs only (%s)" % ", ".join(resolved)
        else:
            why = "the config has no imports"
            if (ctx.version or (0, 0)) >= (2, 3):
                why += (" (containerd 2.3 dumps imports = ['/etc/containerd/conf.d/*.toml'] by default, "
                        "but loads a drop-in only when the config file itself declares imports)")
        dir_pattern = os.path.join(_dir_of(entry["path"]), "*" + os.path.splitext(entry["path"])[1])
        fix = ("rename it to match %s" % same_dir[0]) if same_dir else (
            "move it into a dir an imports entry reads, or add '%s' to imports" % dir_pattern)
        out.append(finding(
            ctx.node, "orphan_dropin", "error" if lost else "warning", entry["path"],
            "%s is never loaded: %s%s" % (entry["path"], why,
                                          "; runtimes it declares are not loaded: %s" % ", ".join(lost) if lost else ""),
            fix,
            {"file": entry["path"], "imports": resolved, "declares_runtimes": declared, "not_loaded": lost},
        ))
    return out


# --- what containerd reads from each merged file -----------------------------------------

def _merged_files(gathered):
    return [f for f in gathered.get("files", []) if f["role"] in ("main", "imported")]


def _readable(entry):
    parsed = entry.get("parsed") or {}
    return not parsed.get("error") and "version" in parsed


def _root_version(merged):
    for entry in merged:
        if entry["role"] == "main" and _readable(entry):
            return entry["parsed"]["version"]
    return None


def _effective_version(entry, root, version):
    """The version containerd reads a merged file with. containerd 2.0-2.2 merge the files
    first and migrate the result by the root file's version (measured on 2.1.9: a version 2
    drop-in under a version 3 root loses its io.containerd.grpc.v1.cri runtimes); 1.x and
    2.3+ read each file by its own version, a file without one by the root's (measured)."""
    parsed = entry["parsed"]
    if root is not None and (entry["role"] == "imported" and not parsed.get("version_written")):
        return root
    if root is not None and version[0] >= 2 and version < (2, 3):
        return root
    return parsed["version"]


def _runtimes_table_in(entries, plugins):
    """The first file of entries with a runtimes table (even empty) under one of plugins."""
    for entry in entries:
        if set((entry.get("parsed") or {}).get("runtimes_tables") or []) & set(plugins):
            return entry["path"]
    return None


def file_readings(ctx):
    """[(entry, effective version, {plugin: why containerd ignores its runtimes, or None})]
    for every readable merged file.

    containerd 2.x migrating an older config drops the runtimes of an older plugin name when the
    same config has a runtimes table (even empty) under a newer one: a version 2 file with
    runtimes under both io.containerd.grpc.v1.cri and io.containerd.cri.v1.runtime (AgentBaker's
    kata template) loads the latter only. 2.0-2.2 migrate the merged files, 2.3 each file alone
    (measured on 2.1.9 and 2.3.4; runtimes survive when the newer section holds only enable_cdi,
    or when only cri.v1.images is set)."""
    gathered = ctx.gathered
    major, minor = ctx.version
    merged = [e for e in _merged_files(gathered) if _readable(e)]
    root = _root_version(merged)
    out = []
    for entry in merged:
        effective = _effective_version(entry, root, ctx.version)
        replaced = containerd_shapes.replaced_by(major, effective, minor)
        unit = merged if ctx.version < (2, 3) else [entry]
        reasons = {}
        for plugin in sorted(entry["parsed"].get("runtimes_by_plugin") or {}):
            reasons[plugin] = containerd_shapes.ignored_plugin_reason(major, effective, plugin, minor)
            replacing = _runtimes_table_in(unit, replaced.get(plugin, ())) if reasons[plugin] is None else None
            if replacing:
                reasons[plugin] = (
                    "containerd %s migrates a version %d config, and the runtimes table under plugins.\"%s\" in %s "
                    "replaces the runtimes migrated from plugins.\"%s\""
                    % (gathered.get("version", "2.x"), effective, "\" / \"".join(replaced[plugin]), replacing, plugin))
                if plugin == V1 and not _runtimes_table_in(unit, (V3,)):
                    # measured with 2.3.4: plugins.cri next to plugins."io.containerd.grpc.v1.cri" in a
                    # version 1 file keeps one of the two at random (7 starts in 8 the latter)
                    reasons[plugin] += " (or the other way round: which one survives changes from one start to the next)"
        out.append((entry, effective, reasons))
    return out


def check_ignored_sections(ctx):
    out = []
    gathered = ctx.gathered
    major = ctx.version[0]
    for entry, version, reasons in file_readings(ctx):
        if major < 2 and version >= 3:
            out.append(finding(
                ctx.node, "ignored_plugin_section", "error", entry["path"],
                "%s is a version %d file on containerd %s, which reads version 2 only "
                "(1.6 ignores plugins.\"%s\"; 1.7 refuses to start)"
                % (entry["path"], version, gathered.get("version", "1.x"), V3),
                "write version = 2 with plugins.\"%s\" for containerd 1.x" % V2,
                {"file": entry["path"], "file_version": version, "containerd": gathered.get("version")},
            ))
        for plugin, reason in sorted(reasons.items()):
            if reason is None:
                continue
            names = entry["parsed"]["runtimes_by_plugin"][plugin]
            absent = [n for n in names if n not in ctx.handlers]
            if major < 2 and version >= 3 and not absent:
                continue  # already reported above; its runtimes load on 1.6 regardless
            out.append(finding(
                ctx.node, "ignored_plugin_section", "error" if absent else "warning",
                "%s:%s" % (entry["path"], plugin),
                "%s: %s, so its runtimes %s" % (
                    entry["path"], reason,
                    "are absent from the loaded config: %s" % ", ".join(absent) if absent
                    else "are loaded anyway, from another file or containerd's defaults, not with this section's "
                         "settings"),
                "move the runtimes under plugins.\"%s\"" % (V3 if major >= 2 else containerd_shapes.plugins_read(major, version)[0])
                if version >= 2 or major < 2 else "set version = 2 (1.x) or 3 (2.x) with the matching plugin name",
                {"file": entry["path"], "file_version": version, "plugin": plugin, "runtimes": names,
                 "not_loaded": absent, "loader_warnings": gathered.get("dump_warnings", [])[:10]},
            ))
    return out


def check_file_drift(ctx):
    out = []
    major = ctx.version[0]
    merged = _merged_files(ctx.gathered)
    for entry, _version, reasons in file_readings(ctx):
        for plugin, reason in sorted(reasons.items()):
            names = entry["parsed"]["runtimes_by_plugin"][plugin]
            absent = [n for n in names if n not in ctx.handlers]
            if reason is not None or not absent:
                continue
            out.append(finding(
                ctx.node, "file_loaded_drift", "error", "%s:%s" % (entry["path"], ",".join(absent)),
                "%s declares runtime(s) %s, absent from the loaded config%s" % (
                    entry["path"], ", ".join(absent),
                    "; containerd 1.x lets each imported file replace a plugin's whole section "
                    "(containerd#5837), so only the last file's runtimes survive" if major < 2 and len(merged) > 1 else ""),
                "on containerd 1.x put every runtime in one drop-in that carries the whole CRI plugin section"
                if major < 2 else "compare the file with 'containerd config dump' and fix what overrides it",
                {"file": entry["path"], "plugin": plugin, "declared": names, "not_loaded": absent,
                 "merged_files": [f["path"] for f in merged]},
            ))
    return out


def check_dropin_version(ctx):
    if ctx.version >= _REFUSES_DROPIN_ABOVE_ROOT:
        return []  # 2.3+ refuses such a config outright: config_refused says so
    out = []
    for path, version, root in _dropins_above_root(ctx.gathered):
        out.append(finding(
            ctx.node, "dropin_version_above_root", "warning", path,
            "%s is version %d, above the root config's version %d: containerd %s loads it, but containerd "
            "2.3+ refuses to start with it (\"drop-in config version %d higher than root config version %d\"), "
            "so upgrading containerd breaks the node" % (path, version, root, ctx.gathered.get("version"), version, root),
            "write the drop-in with version = %d, or raise the root config to version %d" % (root, version),
            {"file": path, "version": version, "root_version": root, "containerd": ctx.gathered.get("version")},
        ))
    return out


def check_unreadable(ctx):
    out = []
    for entry in _merged_files(ctx.gathered):
        if entry["role"] == "main" and not ctx.gathered.get("config_exists", True):
            continue  # no config file: containerd runs on its defaults (config_defaults)
        parsed = entry.get("parsed") or {}
        error = parsed.get("error") or (entry.get("error") if entry.get("content") is None else None)
        if error:
            if "UTF-8" in error and ctx.version is not None and ctx.version < (2, 0):
                error += " (containerd 1.x loads it; 2.x refuses a config that is not UTF-8, measured with 2.1.9 and 2.3.4)"
            out.append(finding(
                ctx.node, "config_unreadable", "error", entry["path"],
                "%s could not be checked: %s" % (entry["path"], error),
                "fix the file so containerd and this audit can read it",
                {"file": entry["path"], "error": error},
            ))
    return out


def check_defaults(ctx):
    if ctx.gathered.get("config_exists", True):
        return []
    path = ctx.gathered.get("config_path") or "the config file"
    note = ""
    if (ctx.version or (0, 0)) >= (2, 3):
        note = ("; its dump shows imports = ['/etc/containerd/conf.d/*.toml'], but without a config file no "
                "drop-in is loaded (measured with 2.3.4)")
    return [finding(
        ctx.node, "config_defaults", "info", path,
        "there is no %s: containerd runs on its built-in defaults (legal; runc only)%s" % (path, note),
        "nothing to fix; write the file (role gpurt.runtime_gate.containerd_runtime) to register more runtimes",
        {"config_path": path, "containerd": ctx.gathered.get("version")},
    )]


# --- runtime binaries and files -----------------------------------------------------------

def _facts_state(facts, executable=True):
    if not facts.get("exists"):
        return "does not exist"
    if not facts.get("is_file"):
        return "is not a file"
    if executable and not facts.get("executable"):
        return "is not executable"
    return None


def _unreachable_note(reached):
    return "" if reached else ("; no pod can reach it here: it is neither the default runtime nor named by a "
                               "RuntimeClass that can land on this node")


def check_binaries(ctx):
    out = []
    paths = ctx.gathered["paths"]
    shims = ctx.gathered.get("shims")
    reachable = ctx.reachable
    for name, runtime in sorted(ctx.loaded.get("runtimes", {}).items()):
        wanted = []
        if runtime.get("binary_name"):
            wanted.append(("BinaryName", runtime["binary_name"], paths.get(runtime["binary_name"])))
        runtime_type = runtime.get("runtime_type") or ""
        if runtime.get("runtime_path"):
            wanted.append(("runtime_path", runtime["runtime_path"], paths.get(runtime["runtime_path"])))
        elif shims is not None and runtime_type and runtime_type not in _RUNC_TYPES:
            shim = shims.get(runtime_type)
            wanted.append(("shim of runtime_type %s" % runtime_type, (shim or {}).get("path", runtime_type), shim))
        reached = name in reachable
        for what, path, facts in wanted:
            if facts is None:
                continue  # the node did not report on it (older gather result)
            state = _facts_state(facts)
            if state is None:
                continue
            where = " (searched PATH, shim_dirs and the containerd binary's dir)" if facts.get("searched") else ""
            out.append(finding(
                ctx.node, "runtime_binary", "error" if reached else "info", name,
                "runtime '%s' uses %s %s, which %s on the node%s%s"
                % (name, what, path, state, where, _unreachable_note(reached)),
                "install the runtime (e.g. nvidia-container-toolkit, kata-containers, gVisor) or fix the config",
                {"runtime": name, "what": what, "binary_name": path, "facts": facts, "reachable": reached},
            ))
    return out


def check_runtime_files(ctx):
    out = []
    paths = ctx.gathered["paths"]
    reachable = ctx.reachable
    for name, runtime in sorted(ctx.loaded.get("runtimes", {}).items()):
        for key in ("config_path", "base_runtime_spec"):
            path = runtime.get(key)
            facts = paths.get(path) if path else None
            if facts is None:
                continue
            state = _facts_state(facts, executable=False)
            if state is None:
                continue
            label = "options.ConfigPath" if key == "config_path" else "base_runtime_spec"
            reached = name in reachable
            out.append(finding(
                ctx.node, "runtime_file", "error" if reached else "info", "%s:%s" % (name, label),
                "runtime '%s' names %s %s, which %s on the node: its containers fail to start%s"
                % (name, label, path, state, _unreachable_note(reached)),
                "install the file or fix %s of runtime '%s'" % (label, name),
                {"runtime": name, "key": label, "path": path, "facts": facts, "reachable": reached},
            ))
    return out


# --- cgroup driver --------------------------------------------------------------------------

def kubelet_cgroup_driver(kubelet_config, override=None):
    """(driver, source); NotRun when neither the variable nor a readable kubelet config says."""
    if override:
        return override, "variable"
    if not kubelet_config:
        raise NotRun("the node reported no kubelet config")
    path = kubelet_config.get("path")
    if kubelet_config.get("content") is None:
        if kubelet_config.get("error"):
            raise NotRun("kubelet config %s was not read: %s" % (path, kubelet_config["error"]))
        raise NotRun("no kubelet config at %s (set gpurt_kubelet_config_path or gpurt_kubelet_cgroup_driver)" % path)
    import yaml  # controller only: ansible-core ships PyYAML
    try:
        doc = yaml_loader.safe_load(kubelet_config["content"])
    except yaml.YAMLError as exc:
        raise NotRun("kubelet config %s is not YAML: %s" % (path, one_line(str(exc)).split("\\n")[0]))
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise NotRun("kubelet config %s is not a mapping but %s" % (path, type(doc).__name__))
    driver = doc.get("cgroupDriver", "cgroupfs")  # the kubelet's own default when the field is absent
    if driver not in ("systemd", "cgroupfs"):
        raise NotRun("kubelet config %s has cgroupDriver %r, neither systemd nor cgroupfs" % (path, driver))
    return driver, path


def check_cgroup_driver(ctx):
    driver, source = ctx.kubelet_driver()
    want = driver == "systemd"
    reachable = ctx.reachable
    out = []
    for name, runtime in sorted(ctx.loaded.get("runtimes", {}).items()):
        if runtime.get("runtime_type") not in _RUNC_TYPES:
            continue
        have = bool(runtime.get("systemd_cgroup"))
        if have == want:
            continue
        reached = name in reachable
        out.append(finding(
            ctx.node, "cgroup_driver", "error" if reached else "info", name,
            "runtime '%s' has SystemdCgroup = %s but the kubelet uses cgroupDriver %s (%s)%s"
            % (name, str(have).lower(), driver, source, _unreachable_note(reached)),
            "set SystemdCgroup = %s for '%s'" % (str(want).lower(), name),
            {"runtime": name, "systemd_cgroup": have, "kubelet_cgroup_driver": driver, "kubelet_config": source,
             "reachable": reached},
        ))
    return out


# --- CDI ------------------------------------------------------------------------------------

def _is_cdi_handler(name):
    return "cdi" in name.split("-") or name.endswith("cdi")


def injects_cdi_itself(runtime):
    """NVIDIA's nvidia-container-runtime.cdi does the CDI injection itself, without
    containerd's enable_cdi (NVIDIA's own configs set none)."""
    return os.path.basename(runtime.get("binary_name") or "").endswith(".cdi")


def check_cdi_disabled(ctx):
    loaded = ctx.loaded
    if loaded.get("enable_cdi"):
        return []
    out = []
    reachable = ctx.reachable
    old = ctx.version is not None and ctx.version < (1, 7)
    for name, runtime in sorted(loaded.get("runtimes", {}).items()):
        if not _is_cdi_handler(name) or injects_cdi_itself(runtime):
            continue
        reached = name in reachable
        fix = ("containerd %s has no enable_cdi: point BinaryName at NVIDIA's nvidia-container-runtime.cdi, which "
               "injects CDI devices itself, or upgrade containerd to 1.7+" % ctx.gathered.get("version")) if old else (
            "set enable_cdi = true in the CRI plugin section (default in containerd 2.x, not in 1.7), or point "
            "BinaryName at nvidia-container-runtime.cdi")
        out.append(finding(
            ctx.node, "cdi_disabled", "error" if reached else "info", name,
            "'%s' expects CDI device injection, but enable_cdi is false in the loaded config and its BinaryName "
            "(%s) does not inject CDI devices itself%s" % (
                name, runtime.get("binary_name") or "runc",
                "" if reached else "; no RuntimeClass that can land here names it"),
            fix,
            {"handler": name, "enable_cdi": False, "binary_name": runtime.get("binary_name"),
             "cdi_spec_dirs": loaded.get("cdi_spec_dirs", []), "reachable": reached},
        ))
    return out


def check_cdi_specs(ctx):
    out = []
    for spec in ctx.gathered["cdi_specs"]:
        missing = [p["path"] for p in spec.get("host_paths", []) if not p["exists"]]
        if spec.get("error"):
            out.append(finding(
                ctx.node, "cdi_stale_spec", "warning", spec["path"],
                "CDI spec %s could not be read: %s" % (spec["path"], spec["error"]),
                "regenerate it (nvidia-ctk cdi generate) or remove it",
                {"spec": spec["path"], "error": spec["error"]},
            ))
        elif missing:
            out.append(finding(
                ctx.node, "cdi_stale_spec", "error", spec["path"],
                "CDI spec %s names %d host path(s) that no longer exist, e.g. %s (driver updated, spec not regenerated?)"
                % (spec["path"], len(missing), missing[0]),
                "regenerate the spec: nvidia-ctk cdi generate --output=%s" % spec["path"],
                {"spec": spec["path"], "missing_host_paths": missing[:20], "missing_count": len(missing)},
            ))
    return out


# --- overhead -------------------------------------------------------------------------------

def check_overhead(ctx):
    """overhead_unschedulable: pod request + RuntimeClass podFixed against node allocatable."""
    out = []
    allocatable = ctx.allocatable
    requests = ctx.options.get("pod_requests") or {}
    for runtimeclass, _why in ctx.applicable:
        pod_fixed = ((runtimeclass.get("overhead") or {}).get("podFixed") or {})
        for resource in sorted(pod_fixed):
            if resource not in allocatable:
                continue
            try:
                extra = quantity.parse(pod_fixed[resource])
                request = quantity.parse(requests.get(resource, 0))
                capacity = quantity.parse(allocatable[resource])
                arithmetic = "%s + %s > %s" % (quantity.show(resource, request), quantity.show(resource, extra),
                                               quantity.show(resource, capacity))
            except ValueError as exc:
                out.append(finding(
                    ctx.node, "overhead_unschedulable", "warning", "%s:%s" % (runtimeclass["name"], resource),
                    "cannot compare %s of RuntimeClass %s: %s" % (resource, runtimeclass["name"], exc),
                    "fix the quantity", {"runtimeclass": runtimeclass["name"], "resource": resource},
                ))
                continue
            if request + extra <= capacity:
                continue
            out.append(finding(
                ctx.node, "overhead_unschedulable", "error", "%s:%s" % (runtimeclass["name"], resource),
                "pods of RuntimeClass %s cannot be scheduled here: %s request + overhead %s "
                "(%s allocatable)" % (runtimeclass["name"], resource, arithmetic, resource),
                "lower overhead.podFixed.%s of RuntimeClass %s or the pod request, or keep the "
                "RuntimeClass off this node with scheduling.nodeSelector" % (resource, runtimeclass["name"]),
                {"runtimeclass": runtimeclass["name"], "resource": resource, "arithmetic": arithmetic,
                 "pod_request": str(requests.get(resource, 0)), "overhead": str(pod_fixed[resource]),
                 "allocatable": str(allocatable[resource])},
            ))
    return out


# --- cluster-only and cross-node checks -----------------------------------------------------

def check_handlers_reported(ctx):
    if ctx.handlers is not None:
        return []
    node = ctx.gathered.get("node_object") or {}
    return [finding(
        ctx.node, "handlers_not_reported", "warning", ctx.node,
        "Node %s does not report status.runtimeHandlers (Kubernetes 1.30+ with containerd 2.x "
        "report them); its handlers cannot be checked from the cluster" % ctx.node,
        "audit it with host access (playbooks/audit.yml) or upgrade kubelet/containerd",
        {"kubelet_version": node.get("kubelet_version"), "container_runtime_version": node.get("container_runtime_version")},
    )]


def check_drift(groups, runtime_sets):
    """node_drift: within each group, nodes lacking a runtime that another member loads.

    Judged against the union rather than the majority: after a half-failed rollout the
    broken nodes can be the majority, and the node that has the runtime is the right one.
    groups: {group: [node, ...]}; runtime_sets: {node: [runtime names]} for checked nodes.
    """
    out = []
    for group in sorted(groups):
        members = sorted(n for n in groups[group] if n in runtime_sets)
        if len(members) < 2:
            continue
        union = set()
        for member in members:
            union.update(runtime_sets[member])
        for member in members:
            have = set(runtime_sets[member])
            lacks = sorted(union - have)
            if not lacks:
                continue
            loaded_by = dict((name, [m for m in members if name in runtime_sets[m]]) for name in lacks)
            out.append(finding(
                member, "node_drift", "warning", group,
                "lacks runtime(s) %s that other nodes of group %s load (%s)" % (
                    ", ".join(lacks), group,
                    "; ".join("%s on %s" % (name, ", ".join(nodes)) for name, nodes in sorted(loaded_by.items()))),
                "converge the group with the gpurt.runtime_gate.containerd_runtime role",
                {"group": group, "runtimes": sorted(have), "lacks": lacks, "loaded_by": loaded_by},
            ))
    return sort_findings(out)


# --- the registry ---------------------------------------------------------------------------

class Check(object):
    """One check, declared once: id, what it needs, its function, its severity rule.

    needs: names of NEEDS; modes: "hosts" (a gathered node), "cluster" (a Node object's
    status.runtimeHandlers), "group" (across the nodes of an inventory group).
    """

    def __init__(self, check_id, severities, severity_rule, condition, needs, run, modes=("hosts",)):
        self.id = check_id
        self.severities = tuple(severities)
        self.severity_rule = severity_rule
        self.condition = condition
        self.needs = tuple(needs)
        self.run = run
        self.modes = tuple(modes)


def _need_gathered(key, what):
    def need(ctx):
        return None if key in ctx.gathered else "the node reported no %s (%s)" % (key, what)
    return need


def _need_loaded(ctx):
    if ctx.loaded is not None:
        return None
    if ctx.gathered.get("refused"):
        return "containerd refuses the config (config_refused): there is no loaded config to judge"
    return "no loaded config"


def _need_running(ctx):
    running = ctx.gathered.get("running")
    if not isinstance(running, dict):
        return "the running view was not gathered (a bare dump, or gather_running=false)"
    if running.get("source") in ("crictl", "process") or _cri_unserved(running):
        return None
    return "no running view: %s" % (running.get("error") or "not reported")


def _need_kubelet(ctx):
    try:
        ctx.kubelet_driver()
    except NotRun as exc:
        return str(exc)
    return None


NEEDS = {
    "runtimeclasses": lambda ctx: None if ctx.runtimeclasses else "no RuntimeClass was read: nothing to cross-check",
    "handlers": lambda ctx: None if ctx.handlers is not None else (
        _need_loaded(ctx) if "node_object" not in ctx.gathered else "the Node reports no status.runtimeHandlers"),
    "loaded": _need_loaded,
    "config": lambda ctx: None if ctx.loaded is not None or ctx.gathered.get("refused") else "no loaded config",
    "version": lambda ctx: None if ctx.version is not None else "the containerd version is unknown (a bare dump)",
    "files": _need_gathered("files", "a bare dump has no files"),
    "imports": _need_gathered("imports", "a bare dump has no files"),
    "paths": _need_gathered("paths", "a bare dump has no host paths"),
    "cdi_specs": _need_gathered("cdi_specs", "a bare dump has no CDI specs"),
    "running": _need_running,
    "kubelet": _need_kubelet,
    "allocatable": lambda ctx: None if ctx.allocatable else (
        "node allocatable unknown (no Node object, no gpurt_node_allocatable)"),
    "node_object": lambda ctx: None if "node_object" in ctx.gathered else "not a Node object",
}

REGISTRY = (
    Check("missing_handler", ("error",), "error",
          "a RuntimeClass whose `scheduling.nodeSelector` matches the node (unknown labels: assumed to match) names a "
          "handler that is not a loaded runtime; suggests a loaded name only when it is close (at most two edits), "
          "is not itself asked for by a RuntimeClass that can land here, and the handler is not a real runtime's "
          "name (`nvidai` → did you mean `nvidia`?; never `nvidia` for `nvidia-cdi` or `runc` for `crun`)",
          ("runtimeclasses", "handlers"), check_missing_handler, modes=("hosts", "cluster")),
    Check("config_refused", ("error",), "error",
          "containerd will not start with the config (`config dump` fails: TOML errors, an unsupported version, on "
          "2.3+ a drop-in whose version is above the root file's, `imports = [\"/dev/zero\"]`), with containerd's "
          "own cause line; or it starts but its CRI plugin cannot load: `default_runtime_name` names no loaded "
          "runtime (on 1.x, runtimes declared without `runc` while the default is `runc`), so no pod runs",
          ("config",), check_config_refused),
    Check("restart_pending", ("error", "warning"),
          "error for a loaded runtime the running daemon lacks, or a daemon serving no CRI; warning for a running "
          "runtime the next start drops, and for the start-time fallback",
          "the running daemon (`crictl info`) differs from the loaded config: a restart that did not happen; "
          "without crictl, a config file newer than the daemon's start (systemd or `/proc/<pid>/stat`)",
          ("running", "loaded"), check_restart_pending),
    Check("default_runtime_blast_radius", ("warning",), "warning",
          "`default_runtime_name` is not `runc`: every pod of the node runs through it",
          ("loaded",), check_blast_radius),
    Check("dead_imports_glob", ("warning",), "warning",
          "an `imports` entry matches no file on the node (containerd skips it silently)",
          ("imports",), check_dead_imports),
    Check("orphan_dropin", ("error", "warning"), "error if it declares runtimes that are not loaded, else warning",
          "a file in a drop-in dir that no `imports` entry matches (`.conf` vs `.toml`; `config.d/` vs `conf.d/`, as "
          "a released nvidia-ctk did; on 2.3, any drop-in when the config file declares no imports); backups "
          "(`*~`, `*.bak`, `*.dpkg-*`, ...) are not drop-ins",
          ("files", "loaded"), check_orphans),
    Check("ignored_plugin_section", ("error", "warning"), "error if its runtimes are not loaded, else warning",
          "a CRI section containerd does not read for the file's version: v3 with `io.containerd.grpc.v1.cri`, v3 on "
          "1.x, v1 on 2.x, and a v2 config on 2.x that also has a `io.containerd.cri.v1.runtime` runtimes table "
          "(the migration drops the old-name runtimes)",
          ("files", "loaded", "version"), check_ignored_sections),
    Check("file_loaded_drift", ("error",), "error",
          "a runtime in a merged file is absent from the loaded config for no reason above (e.g. the 1.x rule below)",
          ("files", "loaded", "version"), check_file_drift),
    Check("dropin_version_above_root", ("warning",), "warning",
          "containerd older than 2.3 loads a drop-in whose version is above the root file's; 2.3+ refuses to start "
          "with it, so the upgrade breaks the node",
          ("files", "version"), check_dropin_version),
    Check("config_unreadable", ("error",), "error",
          "a config file containerd loads could not be read or parsed by the audit (too large, not UTF-8, not a "
          "regular file); not reported where containerd refuses the config (config_refused says why)",
          ("files", "loaded"), check_unreadable),
    Check("config_defaults", ("info",), "info",
          "there is no main config file: containerd runs on its built-in defaults (legal)",
          ("files",), check_defaults),
    Check("runtime_binary", ("error", "info"), "error for a runtime a pod can reach, else info",
          "a runtime's `options.BinaryName`, `runtime_path`, or the shim of a non-runc `runtime_type` "
          "(`io.containerd.kata.v2` → `containerd-shim-kata-v2` in PATH, `gpurt_shim_dirs` or next to containerd) "
          "is missing or not executable",
          ("paths", "loaded"), check_binaries),
    Check("runtime_file", ("error", "info"), "error for a runtime a pod can reach, else info",
          "a runtime's `options.ConfigPath` or `base_runtime_spec` file does not exist",
          ("paths", "loaded"), check_runtime_files),
    Check("cgroup_driver", ("error", "info"),
          "error for a runtime a pod can reach (the default, or a handler of a RuntimeClass that can land here; "
          "unknown labels: every RuntimeClass), else info",
          "a runc-type runtime's `SystemdCgroup` disagrees with the kubelet's `cgroupDriver`; skipped when the "
          "kubelet config is missing or unreadable",
          ("loaded", "kubelet"), check_cgroup_driver),
    Check("cdi_disabled", ("error", "info"), "error for a reachable runtime, else info",
          "a `*-cdi` runtime on a node without `enable_cdi`, unless its BinaryName is NVIDIA's "
          "`nvidia-container-runtime.cdi`, which injects CDI devices itself",
          ("loaded",), check_cdi_disabled),
    Check("cdi_stale_spec", ("error", "warning"), "error; warning for a spec that cannot be read",
          "a CDI spec (`/etc/cdi`, `/var/run/cdi`) names host paths that no longer exist",
          ("cdi_specs",), check_cdi_specs),
    Check("overhead_unschedulable", ("error", "warning"), "error; warning for a quantity that cannot be compared",
          "RuntimeClass `overhead.podFixed` + the pod request exceeds allocatable, with the arithmetic "
          "(`900m + 250m > 1000m`)",
          ("allocatable",), check_overhead, modes=("hosts", "cluster")),
    Check("node_drift", ("warning",), "warning",
          "a node lacks a runtime that another node of its inventory group loads",
          (), None, modes=("group",)),
    Check("handlers_not_reported", ("warning",), "warning",
          "cluster-only mode: the Node has no `status.runtimeHandlers` (it is NOT CHECKED)",
          ("node_object",), check_handlers_reported, modes=("cluster",)),
)

BY_ID = dict((c.id, c) for c in REGISTRY)
CHECKS = dict((c.id, c.condition) for c in REGISTRY)


def check_ids(mode=None):
    return [c.id for c in REGISTRY if mode is None or mode in c.modes]


def validate_skip(skip):
    unknown = sorted(set(skip or []) - set(BY_ID))
    if unknown:
        raise ValueError("unknown check id(s) in skip_checks: %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(BY_ID))))


def run_checks(ctx, mode="hosts", skip=()):
    """(sorted findings, [ids that ran], {id: why it was skipped}) for one node.

    A check runs only when everything it needs is there; otherwise, or when it raises NotRun,
    it is skipped with the reason, never counted as passed.
    """
    skip = set(skip or [])
    found, ran, skipped = [], [], {}
    for check in REGISTRY:
        if mode not in check.modes:
            continue
        if check.id in skip:
            skipped[check.id] = "skip_checks"
            continue
        why = None
        for need in check.needs:
            why = NEEDS[need](ctx)
            if why:
                break
        if why:
            skipped[check.id] = why
            continue
        try:
            items = check.run(ctx)
        except NotRun as exc:
            skipped[check.id] = str(exc)
            continue
        for item in items:
            if item["check"] != check.id or item["severity"] not in check.severities:
                raise AssertionError("check %s produced a %s finding of %s" % (check.id, item["severity"], item["check"]))
        found += items
        ran.append(check.id)
    return sort_findings(found), ran, skipped


def check_node(node, gathered, runtimeclasses, labels=None, allocatable=None, options=None):
    """Every per-node check against what containerd_config_info gathered: (findings, ran, skipped)."""
    options = options or {}
    ctx = Context(node, gathered, runtimeclasses, labels, allocatable, options)
    return run_checks(ctx, "hosts", options.get("skip_checks"))


def check_reported_node(node, runtimeclasses, pod_requests=None, skip=None):
    """Cluster-only mode: judge a Node object by its status.runtimeHandlers.

    Returns (checked, findings, ran, skipped). A Node that reports no handlers cannot be judged.
    """
    name = node["name"]
    ctx = Context(name, {"node_object": node}, runtimeclasses, node.get("labels") or {}, node.get("allocatable"),
                  {"pod_requests": pod_requests}, handlers=node.get("runtime_handlers"),
                  source="Node %s status.runtimeHandlers" % name)
    found, ran, skipped = run_checks(ctx, "cluster", skip)
    return node.get("runtime_handlers") is not None, found, ran, skipped


# --- the README's check table ---------------------------------------------------------------

def readme_table():
    """The README's check table, generated from REGISTRY (tests keep the README in step)."""
    lines = ["| id | severity | condition | needs |", "|---|---|---|---|"]
    for check in REGISTRY:
        needs = ", ".join(check.needs) if check.needs else "an inventory group of two or more checked nodes"
        lines.append("| `%s` | %s | %s | %s |" % (check.id, check.severity_rule, check.condition, needs))
    return "\n".join(lines)

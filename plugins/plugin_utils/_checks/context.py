# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one node's checks read (the judging context): its gather result or reported handlers, the
RuntimeClasses that can land on it, and the needs every family shares."""

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.gate_names import LABEL_PREFIX
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.kubelet import kubelet_cgroup_driver
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.model import NotRun
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.registry import need


# --- what a node can run ------------------------------------------------------------------

def _label_text(value):
    """Label values are strings; YAML inventories turn `true` and `1` into bool and int."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return None if value is None else str(value)


def selector_matches(node_selector, labels):
    """(applies, why) for a RuntimeClass scheduling.nodeSelector against node labels.

    Unknown labels (None) count as a match: a handler that might land on the node
    is checked rather than silently passed. Our own verified labels (prevent.yml's gate) are left out:
    they are what the audit proves, so a node that lost one must still be judged for that handler.
    """
    if not node_selector:
        return True, "no nodeSelector"
    if labels is None:
        return True, "node labels unknown; assumed the RuntimeClass can land here"
    for key, value in sorted(node_selector.items()):
        if str(key).startswith(LABEL_PREFIX):
            continue
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


# --- the node's merged files ----------------------------------------------------------------

def merged_files(gathered):
    return [f for f in gathered.get("files", []) if f["role"] in ("main", "imported")]


def dropins_above_root(gathered):
    """[(path, version, root_version)] of merged drop-ins whose written version is above the root's."""
    files = merged_files(gathered)
    main = [f for f in files if f["role"] == "main"]
    root = ((main[0].get("parsed") or {}).get("version") if main else None) or 1
    out = []
    for entry in files:
        parsed = entry.get("parsed") or {}
        if entry["role"] == "imported" and parsed.get("version_written") and parsed.get("version", 0) > root:
            out.append((entry["path"], parsed["version"], root))
    return out


# --- what a check may need from the node (a family adds its own) ------------------------------

def gathered_key(key, what):
    """A need met when the gather result has key."""
    def met(ctx):
        return None if key in ctx.gathered else "the node reported no %s (%s)" % (key, what)
    return met


@need("loaded")
def need_loaded(ctx):
    if ctx.loaded is not None:
        return None
    if ctx.gathered.get("refused"):
        return "containerd refuses the config (config_refused): there is no loaded config to judge"
    return "no loaded config"


@need("runtimeclasses")
def need_runtimeclasses(ctx):
    return None if ctx.runtimeclasses else "no RuntimeClass was read: nothing to cross-check"


@need("handlers")
def need_handlers(ctx):
    if ctx.handlers is not None:
        return None
    return need_loaded(ctx) if "node_object" not in ctx.gathered else "the Node reports no status.runtimeHandlers"


@need("config")
def need_config(ctx):
    return None if ctx.loaded is not None or ctx.gathered.get("refused") else "no loaded config"


@need("version")
def need_version(ctx):
    return None if ctx.version is not None else "the containerd version is unknown (a bare dump)"


need("files")(gathered_key("files", "a bare dump has no files"))
need("imports")(gathered_key("imports", "a bare dump has no files"))
need("paths")(gathered_key("paths", "a bare dump has no host paths"))

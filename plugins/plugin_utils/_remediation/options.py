# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The remediation's options, validated once: the action's argument spec, then the paths and names
(check_options), before anything runs on the node; and the runtimes, completed with their defaults."""

import copy
import fnmatch
import os
import re

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import label_syntax
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _input_types as input_types
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.kubelet import kubelet_cgroup_driver
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.model import NotRun
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.ownership import own_name
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.refusal import Refusal


_GLOB_CHARS = re.compile(r"[*?\[\]]")


# The containerd_runtime action's options. Node paths: type str, not path, which would expand them on
# the controller.
ARGUMENT_SPEC = dict(
    containerd_bin=containerd_facts.GATHER_SPEC["containerd_bin"],
    config_path=dict(type="str", default=containerd_facts.CONFIG_PATH),
    dropin_dir=dict(type="str"),
    dropin_glob=dict(type="str", default="*.toml"),
    dropin_prefix=dict(type="str", default="zz-"),
    dropin_suffix=dict(type="str", default=".toml"),
    runtimes=dict(type="list", elements="dict", default=[]),
    default_runtime_name=dict(type="str"),
    allow_non_runc_default=dict(type="bool", default=False),
    systemd_cgroup=dict(type="bool"),
    align_runc_cgroup=dict(type="bool", default=False),
    require_binaries=dict(type="bool", default=True),
    accept_changes=dict(type="list", elements="str", default=[]),
    remove_runtimes=dict(type="list", elements="str", default=[]),
    migrate=dict(type="str", default="auto", choices=["auto", "always", "never"]),
    edit_generated=dict(type="bool", default=False),
    backup=dict(type="bool", default=True),
    backup_dir=dict(type="str", default=containerd_facts.BACKUP_DIR),
    kubelet_config_path=dict(type="str", default=containerd_facts.KUBELET_CONFIG_PATH),
    timeout=containerd_facts.GATHER_SPEC["timeout"],
    max_file_bytes=containerd_facts.GATHER_SPEC["max_file_bytes"],
    crictl_bin=containerd_facts.GATHER_SPEC["crictl_bin"],
    cri_endpoint=containerd_facts.GATHER_SPEC["cri_endpoint"],
    # Ownership evidence: where the node's / is, and the unit that starts containerd.
    host_root=dict(type="str", default="/"),
    service_name=dict(type="str", default="containerd"),
    # The role's state on the node (the restart marker), under host_root.
    state_dir=dict(type="str", default=containerd_facts.STATE_DIR),
    # What proves a restart: the running daemon (crictl info), or, asked for, the config it starts with.
    restart_proof=dict(type="str", default="running", choices=["running", "config"]),
    # A refusal or a failure fails the task, or is only reported in its result (remediate.yml reports each host once).
    on_failure=dict(type="str", default="fail", choices=["fail", "report"]),
)


def _plain_name(value, what):
    if not isinstance(value, str) or "/" in value or ".." in value or _GLOB_CHARS.search(value):
        raise Refusal("%s %r must not contain '/', '..' or glob characters" % (what, value))


def _absolute_path(value, what):
    if not isinstance(value, str) or not os.path.isabs(value):
        raise Refusal("%s must be an absolute path, got %r" % (what, value))
    if _GLOB_CHARS.search(value) or os.path.normpath(value) != value.rstrip("/") or "\n" in value:
        raise Refusal("%s %r must be a normalised path without glob characters" % (what, value))


def validated_options(args):
    """The action's options once its argument spec validated them: the drop-in dir defaulted, the
    paths and names checked (Refusal). The plan takes them as they are."""
    opts = dict(args)
    if not opts["dropin_dir"]:
        opts["dropin_dir"] = containerd_facts.own_dropin_dir(opts["config_path"])
    check_options(opts)
    return opts


def dropin_dirs(opts):
    """The drop-in directories the node lists: the role's, and those the audit lists (its dropin_dirs,
    by default the ones next to the config)."""
    listed = opts.get("dropin_dirs")
    if listed is None:
        listed = containerd_facts.dropin_dirs(opts["config_path"])
    return sorted(set([opts["dropin_dir"]] + list(listed)))


def check_options(opts):
    """Refuse bad paths and names before anything runs on the node."""
    _absolute_path(opts["config_path"], "config_path")
    _absolute_path(opts["dropin_dir"], "dropin_dir")
    _absolute_path(opts["backup_dir"], "backup_dir")
    _absolute_path(opts.setdefault("state_dir", containerd_facts.STATE_DIR), "state_dir")
    _plain_name(opts["dropin_prefix"], "dropin_prefix")
    _plain_name(opts["dropin_suffix"], "dropin_suffix")
    glob = opts["dropin_glob"]
    if not isinstance(glob, str) or "/" in glob or ".." in glob or not glob:
        raise Refusal("dropin_glob %r must be one file name pattern, without '/' or '..'" % (glob,))
    sample = own_name(opts, "nvidia")
    if not fnmatch.fnmatchcase(sample, glob.replace("[^", "[!")):
        raise Refusal("dropin_glob %r does not match the drop-in names this role writes (%s, from dropin_prefix %r "
                      "and dropin_suffix %r)" % (glob, sample, opts["dropin_prefix"], opts["dropin_suffix"]))
    backup = opts["backup_dir"].rstrip("/") + "/"
    for inside, what in ((opts["dropin_dir"], "dropin_dir"),
                         (os.path.dirname(opts["config_path"]), "the directory of config_path")):
        if (inside.rstrip("/") + "/").startswith(backup) or backup.startswith(inside.rstrip("/") + "/"):
            raise Refusal("backup_dir %s must be outside %s (%s), where an imports glob could load a backup"
                          % (opts["backup_dir"], inside, what))
    try:
        opts["host_root"] = host_paths.host_root(opts.get("host_root"))
    except ValueError as exc:
        raise Refusal(str(exc))
    if opts.get("migrate") not in ("auto", "always", "never"):
        raise Refusal("migrate must be auto, always or never")


_RUNTIME_KEYS = dict(runtime_type=str, binary_name=str, systemd_cgroup=bool, cdi=bool)


def _type_word(value):
    return input_types.type_name(value)


def _toml_value_problem(value, where):
    """Why value cannot be written as a TOML value (TOML has no null), naming where it is; else None."""
    if value is None:
        return "%s is null: TOML has no null (remove the key or give it a value)" % where
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                return "%s has a key %r: keys must be non-empty strings" % (where, key)
            problem = _toml_value_problem(item, "%s.%s" % (where, key))
            if problem:
                return problem
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            problem = _toml_value_problem(item, "%s[%d]" % (where, index))
            if problem:
                return problem
    elif not isinstance(value, (str, bool, int, float)):
        return "%s is %s, which TOML cannot hold" % (where, _type_word(value))
    return None


def _check_runtime_values(name, spec):
    """Refusal naming the runtime and the key for a value of the wrong type or one TOML cannot write."""
    for key, kind in _RUNTIME_KEYS.items():
        value = spec.get(key)
        if value is not None and not isinstance(value, kind):
            raise Refusal("runtime %r: %s must be %s, got %s: %r" % (
                name, key, "a string" if kind is str else "a boolean (true or false)", _type_word(value), value))
        if isinstance(value, str) and (not value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value)):
            raise Refusal("runtime %r: %s %r is empty or holds a control character" % (name, key, value))
    for key in ("options", "extra"):
        problem = _toml_value_problem(spec.get(key) or {}, "runtime %r: %s" % (name, key))
        if problem:
            raise Refusal(problem)


def normalize_runtimes(runtimes, systemd_cgroup, kubelet_cgroup=lambda: None):
    """[{name, table, cdi}] with defaults filled in; Refusal on bad input. A runc-type runtime's
    SystemdCgroup: its own systemd_cgroup, else the option's, else kubelet_cgroup() (asked only then,
    and once for all the runtimes: it parses the kubelet config)."""
    out = []
    seen = set()
    kubelet = []
    for index, spec in enumerate(runtimes or []):
        if not isinstance(spec, dict) or not spec.get("name"):
            raise Refusal("runtime #%d needs a name: set runtimes[].name" % (index + 1))
        name = spec["name"]
        if not isinstance(name, str) or not label_syntax.DNS_LABEL.match(name) or len(name) > 63:
            raise Refusal("runtime name %r is not a DNS label, which RuntimeClass handlers must be: set "
                          "runtimes[].name to one" % (name,))
        if name in seen:
            raise Refusal("runtime %r is listed twice: set runtimes with each name once" % name)
        if name == "runc":
            raise Refusal("runc is kept as the node has it: set runtimes without it")
        seen.add(name)
        for key in ("options", "extra"):
            if spec.get(key) is not None and not isinstance(spec[key], dict):
                raise Refusal("runtime %r: %s must be a dict, got %s" % (name, key, _type_word(spec[key])))
        _check_runtime_values(name, spec)
        table = copy.deepcopy(spec.get("extra") or {})
        table["runtime_type"] = spec.get("runtime_type") or containerd_facts.DEFAULT_RUNTIME_TYPE
        options = copy.deepcopy(spec.get("options") or {})
        if spec.get("binary_name"):
            options["BinaryName"] = spec["binary_name"]
        if table["runtime_type"] in containerd_facts.RUNC_TYPES:
            cgroup = spec.get("systemd_cgroup")
            cgroup = systemd_cgroup if cgroup is None else cgroup
            if cgroup is None:
                if not kubelet:
                    kubelet.append(kubelet_cgroup())
                cgroup = kubelet[0]
            if cgroup is not None:
                options["SystemdCgroup"] = bool(cgroup)
        if options:
            table["options"] = options
        out.append({"name": name, "table": table, "cdi": bool(spec.get("cdi"))})
    return out


def kubelet_systemd_cgroup(gathered):
    """SystemdCgroup for the kubelet's cgroupDriver, read as the audit's cgroup_driver check reads it;
    None when the node has no kubelet config to read. A config that is there but names no driver the
    kubelet knows is refused: writing either value would be a guess."""
    kubelet = gathered.get("kubelet_config") or {}
    if kubelet.get("content") is None:
        return None
    try:
        driver, _source = kubelet_cgroup_driver(kubelet)
    except NotRun as exc:
        # The role's action says it in the role's words (set containerd_runtime_systemd_cgroup).
        raise Refusal("%s, so the SystemdCgroup of the runtimes is unknown; set systemd_cgroup to say it. "
                      "Nothing was written." % exc)
    return driver == "systemd"

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Family: runtimes and binaries. What each loaded runtime needs on the node: its binary or shim,
its files, a SystemdCgroup that agrees with the kubelet, CDI where it expects it, CDI specs whose
host paths still exist."""

import os

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.context import gathered_key
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.model import NotRun, finding
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.registry import check, fixed_by, need, not_fixed


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


def _searched(facts, shim):
    """Where a bare name was looked up, as the node reported it: the directories, and whence they come."""
    if "searched" not in facts:
        return ""
    dirs = ", ".join(facts["searched"]) or "no directory"
    if not facts.get("path_from"):
        return " (searched %s)" % dirs
    return " (searched %s: containerd's PATH (%s), then gpurt_shim_dirs%s)" % (
        dirs, facts["path_from"], ", then the containerd binary's dir" if shim else "")


def _found_at(path, facts):
    resolved = facts.get("resolved")
    return "%s (found at %s)" % (path, resolved) if resolved and resolved != path else path


@check("runtime_binary", ("error", "info"), "error for a runtime a pod can reach, else info",
       "a runtime's `options.BinaryName`, `runtime_path`, or the shim of a non-runc `runtime_type` "
       "(`io.containerd.kata.v2` → `containerd-shim-kata-v2`) is missing or not executable. An absolute path is "
       "checked as it is; a bare name is looked up as the runc shim and containerd look it up: in containerd's "
       "PATH (the `Environment=`/`EnvironmentFile=` PATH of `containerd.service` and its drop-ins, else systemd's "
       "default PATH for services, with `/sbin:/bin` on an unmerged /usr), then `gpurt_shim_dirs`, all under "
       "`gpurt_host_root`; a shim also next to the containerd binary",
       ("paths", "loaded"),
       not_fixed("the role installs no runtime; with `containerd_runtime_require_binaries` (the default) it refuses "
                 "to register a runtime whose BinaryName is not an executable on the node"),
       booted_node=True)
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
        elif shims is not None and runtime_type and runtime_type not in containerd_facts.RUNC_TYPES:
            shim = shims.get(runtime_type)
            wanted.append(("shim of runtime_type %s" % runtime_type, (shim or {}).get("path", runtime_type), shim))
        reached = name in reachable
        for what, path, facts in wanted:
            if facts is None:
                continue  # the node did not report on it (older gather result)
            state = _facts_state(facts)
            if state is None:
                continue
            where = _searched(facts, what.startswith("shim"))
            out.append(finding(
                ctx.node, "runtime_binary", "error" if reached else "info", name,
                "runtime '%s' uses %s %s, which %s on the node%s%s"
                % (name, what, _found_at(path, facts), state, where, _unreachable_note(reached)),
                "install the runtime (e.g. nvidia-container-toolkit, kata-containers, gVisor) or fix the config",
                {"runtime": name, "what": what, "binary_name": path, "facts": facts, "reachable": reached},
            ))
    return out


@check("runtime_file", ("error", "info"), "error for a runtime a pod can reach, else info",
       "a runtime's `options.ConfigPath` or `base_runtime_spec` file does not exist",
       ("paths", "loaded"),
       not_fixed("the role installs no runtime files; what fixes it: the runtime's installer (or the config's owner, "
                 "pointing the runtime at files that exist)"))
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

@check("cgroup_driver", ("error", "info"),
       "error for a runtime a pod can reach (the default, or a handler of a RuntimeClass that can land here; "
       "unknown labels: every RuntimeClass), else info",
       "a runc-type runtime's `SystemdCgroup` disagrees with the kubelet's `cgroupDriver`; skipped when the "
       "kubelet config is missing or unreadable",
       ("loaded", "kubelet"),
       fixed_by("for the runtimes it registers: SystemdCgroup follows the kubelet's cgroupDriver (or "
                "`containerd_runtime_systemd_cgroup`); for other runc-type runtimes (runc) only with "
                "`containerd_runtime_align_runc_cgroup: true`, a disruptive change (`gpurt_drain: true` drains the node "
                "around the restart); without it the report says so and the error stays"))
def check_cgroup_driver(ctx):
    driver, source = ctx.kubelet_driver()
    want = driver == "systemd"
    reachable = ctx.reachable
    out = []
    for name, runtime in sorted(ctx.loaded.get("runtimes", {}).items()):
        if runtime.get("runtime_type") not in containerd_facts.RUNC_TYPES:
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


@check("cdi_disabled", ("error", "info"), "error for a reachable runtime, else info",
       "a `*-cdi` runtime on a node without `enable_cdi`, unless its BinaryName is NVIDIA's "
       "`nvidia-container-runtime.cdi`, which injects CDI devices itself",
       ("loaded",),
       fixed_by("sets `enable_cdi = true` for a runtime it registers with `cdi: true` (containerd 1.7+); other "
                "runtimes are left as they are"),
       fires_below=(2, 4))
def check_cdi_disabled(ctx):
    loaded = ctx.loaded
    # measured: containerd 2.4 has no enable_cdi (ignored with a warning, absent from its dump): CDI is always on
    if loaded.get("enable_cdi") or (ctx.version is not None and ctx.version >= (2, 4)):
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


@check("cdi_stale_spec", ("error", "warning"), "error; warning for a spec that cannot be read",
       "a CDI spec (`/etc/cdi`, `/var/run/cdi`) names host paths that no longer exist",
       ("cdi_specs",),
       not_fixed("the role does not write CDI specs (`nvidia-ctk cdi generate` does)"),
       booted_node=True)
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


@need("kubelet")
def need_kubelet(ctx):
    try:
        ctx.kubelet_driver()
    except NotRun as exc:
        return str(exc)
    return None


need("cdi_specs")(gathered_key("cdi_specs", "a bare dump has no CDI specs"))

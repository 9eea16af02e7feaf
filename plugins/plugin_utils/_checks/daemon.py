# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Family: daemon and running view. Whether containerd starts with the config and serves CRI, what
its default runtime puts at stake, and whether the running daemon has what the config loads."""

import time

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _restart_marker as restart_marker
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as config_shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.context import dropins_above_root, merged_files
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.model import NotRun, finding
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.registry import check, fixed_by, need, not_fixed

V2, V3 = config_shapes.CRI_PLUGIN_V2, config_shapes.CRI_PLUGIN_V3


# --- config_refused: containerd will not start, or starts without its CRI plugin -----------

def _cri_unserved(running):
    error = (running or {}).get("crictl_error") or ""
    return "unknown service runtime.v1.RuntimeService" in error


@check("config_refused", ("error",), "error",
       "containerd will not start with the config (`config dump` fails: TOML errors, an unsupported version, on "
       "2.3+ a drop-in whose version is above the root file's, `imports = [\"/dev/zero\"]`), with containerd's "
       "own cause line; or it starts but its CRI plugin cannot load: `default_runtime_name` names no loaded "
       "runtime (on 1.x, runtimes declared without `runc` while the default is `runc`), so no pod runs",
       ("config",),
       not_fixed("a config containerd refuses fails the role's gather, so nothing is written (fix the file containerd "
                 "names); on 1.x, runtimes declared without `runc` while the default is `runc` get containerd's "
                 "default runc back in the role's CRI drop-in; another `default_runtime_name` that names no loaded "
                 "runtime is kept (the role loads it only when `containerd_runtime_runtimes` lists it)"))
def check_config_refused(ctx):
    gathered = ctx.gathered
    refused = gathered.get("refused")
    if refused:
        above = dropins_above_root(gathered)
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


# --- cri_plugin_disabled: containerd starts without its CRI service ------------------------

@check("cri_plugin_disabled", ("error",), "error",
       "the loaded config's `disabled_plugins` disables the CRI plugin (`cri`, `io.containerd.grpc.v1.cri`, and on "
       "2.x `io.containerd.cri.v1.runtime` or `io.containerd.cri.v1.images`, without which it fails to load), as "
       "Docker's containerd.io package ships it: the daemon serves no CRI, so no pod runs, though 2.x still "
       "dumps its runtimes",
       ("loaded",),
       not_fixed("the role refuses such a node before writing anything (its runtimes could not be served); what "
                 "fixes it: remove the CRI plugin from `disabled_plugins` in the file the finding names, restart "
                 "containerd, then run the role"))
def check_cri_disabled(ctx):
    major = ctx.version[0] if ctx.version else None
    disabling, files = config_shapes.cri_disabled_by(
        ctx.loaded.get("disabled_plugins"),
        [(e["path"], (e.get("parsed") or {}).get("disabled_plugins")) for e in merged_files(ctx.gathered)], major)
    if not disabling:
        return []
    listed = config_shapes.names_line
    where = "; ".join("%s sets disabled_plugins = %s" % (path, listed(names)) for path, names in files) or \
        "the loaded config sets disabled_plugins = %s" % listed(disabling)
    fix = "; ".join("remove %s from disabled_plugins in %s" % (listed(names)[1:-1], path) for path, names in files) \
        or "remove %s from disabled_plugins" % listed(disabling)[1:-1]
    return [finding(
        ctx.node, "cri_plugin_disabled", "error", ",".join(disabling),
        "containerd%s serves no CRI: %s, so the kubelet reaches no runtime and no pod runs on the node%s" % (
            " " + ctx.gathered["version"] if ctx.gathered.get("version") else "", where,
            "; the dump still lists runtimes (%s), but the CRI plugin that would serve them is not loaded"
            % ", ".join(sorted(ctx.handlers)) if ctx.handlers else ""),
        fix + " (Docker's containerd.io package ships disabled_plugins = [\"cri\"]), then restart containerd",
        {"key": "disabled_plugins", "disabled": disabling, "files": [{"file": p, "names": n} for p, n in files],
         "containerd": ctx.gathered.get("version")},
    )]


# --- restart_pending: the running daemon against the next start ---------------------------

def _when(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


# The kubelet copies the running containerd's handlers into the Node's status.runtimeHandlers within
# seconds of a start; a daemon that started this shortly before the Node was read may not be there yet.
KUBELET_CATCH_UP = 60


def node_reported_runtimes(ctx):
    """(runtimes, None) when the Node's status.runtimeHandlers, as the kubelet read them from the
    running containerd, can stand for the running view; else (None, why not). containerd 2.x lists
    every runtime it loaded there (1.x lists none)."""
    reported = ctx.options.get("node_reported")
    if not isinstance(reported, dict) or not reported.get("runtime_handlers"):
        return None, "the Node reports no named status.runtimeHandlers"
    if not ctx.version or ctx.version[0] < 2:
        return None, "containerd before 2.0 does not report its runtimes to the kubelet"
    listed_at = reported.get("listed_at")
    if listed_at is None:
        return None, "the Node was not read from the cluster"
    started = (ctx.gathered.get("running") or {}).get("daemon_started")
    if started is not None and started > listed_at - KUBELET_CATCH_UP:
        return None, ("containerd started at %s, too shortly before the Node was read for its status to "
                      "show that daemon" % _when(started))
    return sorted(reported["runtime_handlers"]), None


def _against_node_status(ctx, reported):
    """restart_pending by the Node's status: runtimes by name only (not their options)."""
    source = "Node %s status.runtimeHandlers" % ((ctx.options.get("node_reported") or {}).get("name") or ctx.node)
    now = set(reported)
    evidence = {"reported_runtimes": sorted(now), "loaded_runtimes": sorted(ctx.handlers), "source": source}
    out = []
    for name in sorted(ctx.handlers - now):
        # By name only, from the kubelet's copy: an error where pods fail now (a RuntimeClass that can land
        # here asks for it, or it is the default), a warning elsewhere.
        used = name in ctx.reachable
        out.append(finding(
            ctx.node, "restart_pending", "error" if used else "warning", name,
            "runtime '%s' is in the loaded config but the running containerd does not have it (the kubelet "
            "reports %s in %s): containerd was not restarted after the change, so %s" % (
                name, ", ".join(sorted(now)), source,
                "pods asking for '%s' fail now" % name if used else "no pod can use it yet"),
            "restart containerd (systemctl restart containerd), in a drained batch", dict(evidence, runtime=name)))
    for name in sorted(now - ctx.handlers):
        out.append(finding(
            ctx.node, "restart_pending", "warning", name,
            "runtime '%s' runs now (%s) but is not in the loaded config: the next containerd start drops it"
            % (name, source),
            "put '%s' back in the config, or drain its pods before containerd restarts" % name,
            dict(evidence, runtime=name)))
    return out


def _marker_findings(ctx):
    """The role's restart marker: it wrote files and the proof after the restart has not removed it."""
    marker = ctx.gathered.get("restart_marker")
    if not marker:
        return []
    return [finding(
        ctx.node, "restart_pending", "error", "restart_marker",
        "%s: the running containerd may lack what the files say, whatever else can be read of it"
        % restart_marker.line(marker),
        "run remediate.yml (it restarts containerd and proves the runtimes, which removes the marker); restarting by "
        "hand leaves the marker until a run proves the restarted daemon",
        {"marker": marker["path"], "written_at": marker.get("written_at"), "time": marker.get("time"),
         "files": marker.get("files") or [], "marker_error": marker.get("error")})]


@check("restart_pending", ("error", "warning"),
       "error for the role's restart marker, for a loaded runtime the running daemon lacks (judged by the Node's "
       "status: only where a pod can ask for it), or a daemon serving no CRI; warning for a running runtime the "
       "next start drops, and for the start-time fallback",
       "the role's restart marker is on the node (it wrote files and no proof after a restart removed the marker: "
       "the restart failed, was not run, or the run was killed), with the time and the files; the running daemon "
       "(`crictl info`) differs from the loaded config: a restart that did not happen; without crictl, the "
       "runtimes the kubelet reports in the Node's `status.runtimeHandlers` (containerd 2.x), and a config file "
       "newer than the daemon's start (systemd or `/proc/<pid>/stat`)",
       ("running", "loaded"),
       fixed_by("restarts containerd after the role wrote a file, and when a restart for its own runtimes did not "
                "happen (its restart marker is there, `crictl info` lacks one or runs another BinaryName, or the "
                "daemon started before its drop-ins were written), then proves the runtimes and removes the "
                "marker; other tools' pending edits are not restarted for"))
def check_restart_pending(ctx):
    marked = _marker_findings(ctx)
    running = ctx.gathered.get("running")
    if not isinstance(running, dict) or _running_view_missing(ctx):
        return marked  # the running view is missing: need_running let the check run for the marker alone
    try:
        return marked + _against_running(ctx, running)
    except NotRun:
        if marked:  # the marker alone says it
            return marked
        raise


def _against_running(ctx, running):
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
    reported, _why = node_reported_runtimes(ctx)
    by_status = [] if reported is None else _against_node_status(ctx, reported)
    started, newest = running.get("daemon_started"), running.get("config_newest_mtime")
    if started is None or newest is None:
        if reported is not None:
            return by_status
        raise NotRun("no start time or no config file mtime: %s" % (running.get("error") or "not reported"))
    # /proc's start time is whole seconds of boot time plus clock ticks: allow for its rounding.
    if newest <= started + 2:
        return by_status
    return by_status + [finding(
        ctx.node, "restart_pending", "warning", "config",
        "a config file changed at %s, after containerd started at %s: the running daemon may lack what the "
        "files say (without crictl the runtimes themselves cannot be compared)" % (_when(newest), _when(started)),
        restart + "; install crictl (cri-tools) for the exact comparison",
        {"daemon_started": started, "config_newest_mtime": newest, "pid": running.get("pid"),
         "started_from": running.get("started_from"), "why_no_crictl": running.get("crictl_error")})]


# --- default_runtime_blast_radius ---------------------------------------------------------

@check("default_runtime_blast_radius", ("warning",), "warning",
       "`default_runtime_name` is not `runc`: every pod of the node runs through it",
       ("loaded",),
       fixed_by("only when asked: `containerd_runtime_default_runtime_name: runc` in the role's CRI drop-in; by "
                "default the loaded default stays"))
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


def _running_view_missing(ctx):
    """Why the running daemon cannot be compared with the loaded config, or None."""
    running = ctx.gathered.get("running")
    if not isinstance(running, dict):
        return "the running view was not gathered (a bare dump, or gather_running=false)"
    if running.get("source") in ("crictl", "process") or _cri_unserved(running):
        return None
    reported, why = node_reported_runtimes(ctx)
    if reported is not None:
        return None
    return "no running view: %s; %s" % (running.get("error") or "not reported", why)


@need("running")
def need_running(ctx):
    """The running view, or the role's restart marker, which says a restart is pending without it."""
    if ctx.gathered.get("restart_marker"):
        return None
    return _running_view_missing(ctx)

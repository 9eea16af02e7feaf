# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The proof after the restart: the running daemon must have what the run reported, judged on `crictl
info`. Where the CRI socket does not answer there is no proof: a dump shows what the files say, not
what the daemon serves (measured: a config that disables the CRI plugin dumps its runtimes on 2.x, and
the daemon serves none). Only a run asked for `restart_proof=config` (a node without a daemon to ask)
judges the load of the config the service starts with instead, and says so. What a write leaves for
this proof, and what a failed write or a failed proof says about the files (changed, put back).
Controller only."""

import hashlib

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as config_shapes


def record(opts, node_args, the_plan, written):
    """What the handler after the restart needs of a successful write: the node arguments, the runtimes
    the run reports, and each written or removed file with its backup (None: the write created it)."""
    run_dir = written.get("backup_dir")
    files = []
    for item in the_plan["writes"] + the_plan["removes"]:
        existed = item.get("before") is not None
        files.append({"path": item["path"], "backup": (run_dir + item["path"]) if existed and run_dir and opts.get("backup") else None,
                      "existed": existed,
                      "sha256": hashlib.sha256(item["content"].encode("utf-8")).hexdigest()
                      if item.get("content") is not None else None})
    runtimes = [{"name": s["name"], "binary_name": (s["table"].get("options") or {}).get("BinaryName") or ""}
                for s in the_plan["specs"]]
    return {"node_args": node_args, "runtimes": runtimes, "files": files, "backups_kept": bool(opts.get("backup")),
            "mode": opts.get("restart_proof") or "running"}


def unproved(proof, after):
    """Why the restart has no proof, or None: the run asks the running daemon (restart_proof=running, the
    default) and no CRI socket answered, so what it runs is unknown. The files stay as written."""
    running = after.get("running") or {}
    if running.get("source") == "crictl" or proof.get("mode") == "config":
        return None
    return ("the proof is missing: the restarted containerd did not answer on its CRI socket (%s), so whether it "
            "serves %s is unknown (its config dump is not the running daemon's view); the files stay as written. "
            "Make `crictl info` answer on the node (install crictl, or set containerd_runtime_crictl_bin / "
            "containerd_runtime_cri_endpoint), or set containerd_runtime_restart_proof=config where no daemon can "
            "be asked." % (running.get("crictl_error") or running.get("error") or "no running view",
                           ", ".join(r["name"] for r in proof["runtimes"]) or "its runtimes"))


def missing_after_restart(proof, after, loaded):
    """[why] for each reported runtime the restarted daemon lacks; [] when it has them all.
    after: the node's after_restart gather; loaded: its parsed summary (parse_gathered)."""
    running = after.get("running") or {}
    out = []
    if running.get("source") == "crictl":
        names = set(running.get("runtimes") or [])
        details = running.get("runtime_details") or {}
        where = "the restarted containerd (crictl info on %s)" % running.get("endpoint")
        for runtime in proof["runtimes"]:
            have = (details.get(runtime["name"]) or {}).get("binary_name")
            if runtime["name"] not in names:
                out.append("%s has no runtime %s (it runs %s)" % (where, runtime["name"], ", ".join(sorted(names)) or "none"))
            elif runtime["binary_name"] and have not in (None, "", runtime["binary_name"]):
                out.append("%s runs %s with %s, not %s" % (where, runtime["name"], have, runtime["binary_name"]))
    else:
        runtimes = (loaded or {}).get("runtimes") or {}
        where = "the config containerd starts with (%s, loaded after the restart; restart_proof=config: the running " \
            "daemon was not asked)" % after.get("config_path")
        disabled, _files = config_shapes.cri_disabled_by((loaded or {}).get("disabled_plugins"), (),
                                                         after.get("version_major"))
        if disabled:
            out.append("%s disables the CRI plugin (disabled_plugins: %s): nothing serves a runtime"
                       % (where, ", ".join(disabled)))
        for runtime in proof["runtimes"]:
            have = runtimes.get(runtime["name"])
            if have is None:
                out.append("%s has no runtime %s" % (where, runtime["name"]))
            elif runtime["binary_name"] and have.get("binary_name") not in ("", runtime["binary_name"]):
                out.append("%s loads %s with %s, not %s" % (where, runtime["name"], have.get("binary_name"),
                                                            runtime["binary_name"]))
    if out:
        states = dict((f["path"], f) for f in after.get("files") or [])
        for item in proof["files"]:
            now = states.get(item["path"])
            if item["sha256"] and now is not None and now.get("content") is not None and \
                    hashlib.sha256(now["content"].encode("utf-8")).hexdigest() != item["sha256"]:
                out.append("%s is no longer what the run wrote: something rewrote it at the start" % item["path"])
    return out


# The option that restarts containerd where systemd does not (named in the module's words: the role's action says
# containerd_runtime_restart_command).
_NO_SYSTEMD_HINT = "where systemd does not run containerd, set restart_command to the argv that restarts it"


def not_restarted(restart, by_command, proof):
    """One line on a restart that did not happen, or None when it did (or was not run). restart: the registered
    result of the role's restart task, whose changed_when marks a restart that happened; by_command: it ran
    restart_command (else the systemd unit); proof: what the write left (its files)."""
    if not isinstance(restart, dict) or restart.get("skipped") or restart.get("changed"):
        return None
    lines = [restart.get("msg")] if restart.get("msg") and restart.get("msg") != "non-zero return code" else []
    lines += [restart.get("stderr"), restart.get("stdout")] if not lines or by_command else []
    why = "; ".join(line.strip() for text in lines if text for line in str(text).splitlines() if line.strip())
    if by_command:
        why = "restart_command exited %s%s" % (restart.get("rc"), ": " + why if why else "")
    files = [f["path"] for f in proof.get("files") or []]
    return "containerd was not restarted (%s); %s; the restart marker stays, so the next run restarts again%s" % (
        why or "the restart failed",
        "written: %s, loaded at containerd's next start" % ", ".join(files) if files else "this run wrote nothing",
        "" if by_command else "; " + _NO_SYSTEMD_HINT)


def files_line(changed, put_back, not_put_back, removed_new=()):
    """One true sentence on what a failed step left: which files changed, which were put back."""
    if not changed:
        return "nothing was changed"
    parts = ["changed: %s" % ", ".join(changed)]
    if not_put_back:
        if put_back:
            parts.append("put back: %s" % ", ".join(put_back))
        if removed_new:
            parts.append("removed again (the run had created them): %s" % ", ".join(removed_new))
        parts.append("NOT put back: %s" % "; ".join(not_put_back))
    else:
        parts.append("every file was put back as it was before the run")
    return "; ".join(parts)

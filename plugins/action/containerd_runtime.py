# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Register runtimes with a node's containerd: gather, plan, prove on the node, write, verify.

One call of the node module per step: gather (1); when something must change, stage and load
the proposed files (2); outside check mode, write them with the proof and rollback (3).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import loaded_config
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import remediation

NODE_MODULE = "gpurt.runtime_gate.containerd_config_files"

ARGUMENT_SPEC = dict(
    containerd_bin=dict(type="str", default="containerd"),
    config_path=dict(type="str", default="/etc/containerd/config.toml"),
    dropin_dir=dict(type="str"),
    dropin_glob=dict(type="str", default="*.toml"),
    dropin_prefix=dict(type="str", default="zz-"),
    dropin_suffix=dict(type="str", default=".toml"),
    runtimes=dict(type="list", elements="dict", default=[]),
    default_runtime_name=dict(type="str"),
    allow_non_runc_default=dict(type="bool", default=False),
    systemd_cgroup=dict(type="bool"),
    require_binaries=dict(type="bool", default=True),
    accept_changes=dict(type="list", elements="str", default=[]),
    remove_runtimes=dict(type="list", elements="str", default=[]),
    migrate=dict(type="str", default="auto", choices=["auto", "always", "never"]),
    edit_generated=dict(type="bool", default=False),
    backup=dict(type="bool", default=True),
    backup_dir=dict(type="str", default="/var/backups/gpurt-runtime-gate"),
    kubelet_config_path=dict(type="str", default="/var/lib/kubelet/config.yaml"),
    timeout=dict(type="int", default=30),
    max_file_bytes=dict(type="int", default=1048576),
    crictl_bin=dict(type="str", default="crictl"),
    cri_endpoint=dict(type="str"),
)

# What the node module takes besides the step's own arguments.
_NODE_ARGS = ("containerd_bin", "config_path", "dropin_dir", "kubelet_config_path", "timeout", "max_file_bytes")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def _node(self, task_vars, step, **args):
        module_args = dict((k, self._opts[k]) for k in _NODE_ARGS)
        module_args.update(step=step, dropin_dirs=self._dropin_dirs, **args)
        return self._execute_module(module_name=NODE_MODULE, module_args=module_args, task_vars=task_vars)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, opts = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if not opts["dropin_dir"]:
            opts["dropin_dir"] = "%s/conf.d" % opts["config_path"].rsplit("/", 1)[0]
        self._opts = opts
        host = task_vars.get("inventory_hostname", "node")
        try:
            remediation.check_options(opts)
        except remediation.Refusal as exc:
            return self._refused(result, host, exc.reasons, "input")
        config_dir = opts["config_path"].rsplit("/", 1)[0]
        self._dropin_dirs = sorted(set([opts["dropin_dir"], config_dir + "/conf.d", config_dir + "/config.d"]))
        wanted_binaries = [r.get("binary_name") for r in opts["runtimes"] if isinstance(r, dict) and r.get("binary_name")]

        gathered = self._node(task_vars, "gather", migrate=opts["migrate"], extra_paths=wanted_binaries,
                              crictl_bin=opts["crictl_bin"], cri_endpoint=opts["cri_endpoint"])
        if gathered.get("failed") or gathered.get("unreachable"):
            result.update(failed=True, step="gather", msg="%s: cannot gather the node's containerd config, nothing was "
                          "written: %s" % (host, gathered.get("msg", "gather failed")))
            return result
        try:
            the_plan = remediation.plan(gathered, opts)
        except remediation.Refusal as exc:
            return self._refused(result, host, exc.reasons, "plan", gathered)
        result.update(containerd=the_plan["containerd"], notes=the_plan["notes"],
                      warnings=the_plan.get("warnings", []) + self._blast(the_plan))
        if the_plan["noop"]:
            pending = remediation.restart_pending(gathered, the_plan["specs"], opts)
            if pending:
                result.update(restart_pending=pending, msg="nothing to write; restart pending: %s" % pending)
                result["warnings"].append("%s: restarting containerd: %s" % (host, pending))
            return self._done(result, gathered, changed=bool(pending))

        files = the_plan["writes"] + the_plan["removes"]
        node_files = [dict(path=f["path"], content=f["content"], expect_sha256=f["expect_sha256"]) for f in files]
        staged = self._node(task_vars, "stage", files=node_files, staged_main=the_plan["staged_main"])
        if staged.get("failed"):
            return self._refused(result, host, ["staging failed: %s" % staged.get("msg")], "stage", gathered)
        problems, changes = remediation.prove(the_plan, gathered, staged, opts["accept_changes"])
        result["diff"] = [dict(before_header=f["path"], after_header=f["path"], before=f["before"] or "",
                               after=f["content"] or "") for f in files] + [remediation.loaded_diff(changes)]
        result["loaded_changes"] = [remediation.change_line(*c) for c in changes]
        result["files"] = [f["path"] for f in files]
        if problems:
            return self._refused(result, host, problems, "proof", gathered)
        if self._play_context.check_mode:
            result["loaded_after"] = loaded_config.summarize_dump(staged["dump"])
            result.update(changed=True, msg="would write %s (the staged load was proved; check mode wrote nothing)"
                          % ", ".join(result["files"]))
            return result

        written = self._node(task_vars, "write", files=node_files, expected_sha256=staged["normalized_sha256"],
                             import_patterns=the_plan["import_patterns"], backup_dir=opts["backup_dir"],
                             version_output=gathered.get("version_output"))
        if written.get("failed"):
            result.update(failed=True, changed=not written.get("restored", False), step="write",
                          restored=written.get("restored"), backup_dir=written.get("backup_dir"),
                          msg="%s: %s; %s" % (host, written.get("msg"), "every file was put back" if written.get("restored")
                                              else "files could NOT all be put back: %s; backups in %s" % (
                                                  written.get("restore_problems"), written.get("backup_dir"))))
            return result
        if not opts["backup"] and written.get("backup_dir"):
            self._remove_backups(task_vars, written["backup_dir"])
            written["backup_dir"] = None
        result["backup_dir"] = written.get("backup_dir")
        result["msg"] = "wrote %s" % ", ".join(written.get("written") + ["removed " + p for p in written.get("removed")])
        return self._done(result, written, changed=True)

    def _done(self, result, gathered, changed):
        try:
            loaded_config.parse_gathered(gathered)
        except loaded_config.DumpError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        for key in ("changed", "invocation", "_ansible_no_log", "written", "removed", "backup_dir", "default_text",
                    "file_states", "migration"):
            gathered.pop(key, None)
        loaded_config.drop_texts(gathered)  # registered for the whole play: parsed facts only
        result.update(changed=changed, gathered=gathered, loaded_after=gathered["loaded"])
        result.setdefault("msg", "every runtime is loaded as wanted; nothing written")
        return result

    def _refused(self, result, host, reasons, step, gathered=None):
        result.update(failed=True, refused=True, step=step, reasons=reasons,
                      msg="%s: refused, nothing was written: %s" % (host, "\n".join(reasons)))
        if gathered is not None and not gathered.get("failed"):
            result["containerd"] = "%s.%s" % (gathered.get("version_major"), gathered.get("version_minor"))
        return result

    def _blast(self, the_plan):
        if the_plan.get("wanted_default") and the_plan["wanted_default"] != "runc":
            return ["default_runtime_name = %s: every pod of this node, GPU or not, runs through %s; if it breaks, "
                    "every pod of the node fails to start" % (the_plan["wanted_default"], the_plan["wanted_default"])]
        if the_plan.get("wanted_default") == "runc" and the_plan.get("loaded_default") != "runc":
            return ["default_runtime_name goes from %s back to runc: pods without a RuntimeClass no longer run "
                    "through %s (GPU pods that relied on it lose their GPUs)" % (
                        the_plan["loaded_default"], the_plan["loaded_default"])]
        return []

    def _remove_backups(self, task_vars, path):
        self._execute_module(module_name="ansible.builtin.file", module_args=dict(path=path, state="absent"),
                             task_vars=task_vars)

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Register runtimes with a node's containerd: gather, plan, prove on the node, write, verify.

One call of the node module per step: gather (1); when something must change, the ownership evidence
of the planned files and the staged load of them (2), unless the gather already staged exactly that plan
(_remediation/speculation); outside check mode, write them with the proof and rollback (3).
"""

from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _node_options as node_options
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _remediation as remediation
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _role_inputs as role_inputs
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _user_words as user_words
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import ownership_gate
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import restart_proof
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import speculation
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._worker_action import WorkerAction

NODE_MODULE = "gpurt.runtime_gate.register_runtimes_node"

ARGUMENT_SPEC = dict(
    remediation.ARGUMENT_SPEC,
    # The handler after the restart: the task's registered result, and how to restart again.
    after_restart=dict(type="dict"),
    restart_command=dict(type="list", elements="str", default=[]),
    restarted=dict(type="bool", default=True),
    # The handler's restart task, registered: its changed_when says whether containerd was restarted.
    restart_result=dict(type="dict"),
    # The audit's per-node inputs the gather takes besides those above (plugin_utils/_node_options).
    shim_dirs=dict(type="list", elements="str"),
    cdi_spec_dirs=dict(type="list", elements="str"),
    dropin_dirs=dict(type="list", elements="str"),
    host_vars=dict(type="bool", default=True),
    role_vars=dict(type="bool", default=False),
)

# What every node step takes besides its own arguments: the per-node options of the audit's gather
# (dropin_dirs apart: the role's own dir is listed too), and the role's drop-in dir.
_NODE_ARGS = tuple(o for o in node_options.OPTION_NAMES if o != "dropin_dirs") + ("dropin_dir", "max_file_bytes")


def _node_files(the_plan):
    """The plan's writes and removes as the node's stage and write steps take them."""
    return [dict(path=f["path"], content=f["content"], expect_sha256=f["expect_sha256"])
            for f in the_plan["writes"] + the_plan["removes"]]


class ActionModule(WorkerAction):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def _node(self, task_vars, step, **args):
        module_args = dict((k, self._opts[k]) for k in _NODE_ARGS if self._opts.get(k) is not None)
        module_args.update(step=step, dropin_dirs=self._dropin_dirs, **args)
        return self._execute_module(module_name=NODE_MODULE, module_args=module_args, task_vars=task_vars)

    def run(self, tmp=None, task_vars=None):
        result = self._run_steps(tmp, task_vars)
        return self._reported(self._in_user_words(result), task_vars or {})

    def _reported(self, result, task_vars):
        """outcome: what the task did (changed, unchanged, refused, failed); with on_failure=report a refusal or
        a failure does not fail the task, for a caller that reports every host once (remediate.yml)."""
        failed = bool(result.get("failed"))
        result["outcome"] = ("refused" if result.get("refused") else "failed") if failed else \
            ("changed" if result.get("changed") else "unchanged")
        on_failure = self._task.args.get("on_failure")
        if on_failure is None and self._task.args.get("role_vars"):
            on_failure = self._templar.template(task_vars.get(user_words.ROLE_PREFIX + "on_failure"))
        if failed and on_failure == "report":
            result["failed"] = False
        return result

    def _in_user_words(self, result):
        """Run by the containerd_runtime role, the advice names the role variables (set
        containerd_runtime_containerd_bin), not the module's options."""
        names = user_words.role_names(self._task, ARGUMENT_SPEC)
        if names and result.get("msg"):
            result["msg"] = user_words.in_user_words(result["msg"], names)
        if names and isinstance(result.get("reasons"), list):
            result["reasons"] = [user_words.in_user_words(r, names) for r in result["reasons"]]
        return result

    def _run_steps(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        host = task_vars.get("inventory_hostname", "node")
        try:
            given, args = self._arguments(task_vars)
        except role_inputs.RoleInputError as exc:
            return self._refused(result, host, [str(exc)], "input")
        if args.get("after_restart") is not None:
            return self._after_restart(result, host, task_vars, args)
        try:
            opts = self._options(given, args, task_vars)
        except remediation.Refusal as exc:
            return self._refused(result, host, exc.reasons, "input")
        gathered, speculated, proposed = self._gather(task_vars, opts)
        if gathered.get("failed") or gathered.get("unreachable"):
            result.update(failed=True, step="gather", msg="%s: cannot gather the node's containerd config, nothing was "
                          "written: %s" % (host, gathered.get("msg", "gather failed")))
            return result
        try:
            the_plan = remediation.plan(gathered, opts)
        except remediation.Refusal as exc:
            return self._refused(result, host, exc.reasons, "plan", gathered)
        self._report_plan(result, the_plan)
        if the_plan["noop"]:
            return self._nothing_to_write(result, host, gathered, the_plan)
        return self._change(result, host, task_vars, gathered, the_plan, speculated, proposed)

    def _arguments(self, task_vars):
        """(the arguments given, validated): from the role's variables (role_vars=true), else the task's."""
        if self._task.args.get("role_vars"):
            return self._from_role_vars(task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        return self._task.args, args

    def _options(self, given, args, task_vars):
        """The validated options, the host's audit variables taken in (host_vars): the re-audit judges as the
        audit does. Refusal (every input problem) otherwise."""
        if args["host_vars"]:
            try:
                args.update(node_options.from_host_vars(given, task_vars, self._templar))
            except node_options.HostVarError as exc:
                raise remediation.Refusal(str(exc))
        opts = self._opts = remediation.validated_options(args)
        self._dropin_dirs = remediation.dropin_dirs(opts)
        return opts

    def _gather(self, task_vars, opts):
        """(the node's gather for a plan, what it speculated, the proposals it was given). The likeliest plan (the
        role's drop-ins, and the imports entry that loads them where none does) is staged in the gather's call;
        it stands for the plan's stage only when the plan is exactly that."""
        wanted_binaries = [r.get("binary_name") for r in opts["runtimes"] if isinstance(r, dict) and r.get("binary_name")]
        proposed = speculation.proposals(opts)
        more = dict(self._evidence_args(), speculate=proposed, gather_staged=self._play_context.check_mode) \
            if proposed else {}
        gathered = self._node(task_vars, "gather", migrate=opts["migrate"], extra_paths=wanted_binaries, **more)
        return gathered, gathered.pop("speculated", None), proposed

    def _report_plan(self, result, the_plan):
        """What every planned run reports: its notes and warnings, the hosts to drain, what 1.x pins."""
        result["disruptive"] = the_plan.get("disruptive") or []  # remediate.yml drains these hosts (gpurt_drain)
        result.update(containerd=the_plan["containerd"], notes=the_plan["notes"],
                      warnings=the_plan.get("warnings", []) + self._blast(the_plan))
        if the_plan.get("pinned"):
            result["pinned"] = the_plan["pinned"]  # 1.x: the CRI keys the role's drop-in copies, and from where

    def _nothing_to_write(self, result, host, gathered, the_plan):
        """A no-op plan: nothing is written, but a restart still pending (the marker, the running view) is."""
        pending = remediation.restart_pending(gathered, the_plan["specs"], self._opts)
        if pending:
            check_mode = self._play_context.check_mode
            result.update(restart_pending=pending, msg="nothing to write; %s: %s" % (
                "would restart containerd (check mode restarts nothing)" if check_mode else "restart pending",
                pending))
            result["warnings"].append("%s: %s containerd: %s" % (host, "would restart" if check_mode
                                                                 else "restarting", pending))
            # The handler restarts and proves the runtimes the run wants; a proof removes the marker.
            self._record_restart_proof(result, the_plan, {})
            # The marker stays in what the re-audit judges, in check mode too: only a proved restart removes
            # it, and check mode proves none (the restart that is pending may fail again).
        return self._done(result, gathered, changed=bool(pending))

    def _change(self, result, host, task_vars, gathered, the_plan, speculated, proposed):
        """A plan that writes: the planned files' ownership decided from the node's evidence and the files
        staged, then proved and written."""
        # One node call reports who owns the planned files and stages them; a second stage follows only
        # when that evidence moves the plan (another drop-in dir, a generator's template).
        staged = speculation.matching_stage(the_plan, gathered, speculated, proposed) or \
            self._stage(task_vars, gathered, the_plan, owned_paths=ownership_gate.evidence_paths(the_plan, gathered))
        try:
            gathered, the_plan, replanned = self._owned(task_vars, gathered, the_plan, staged)
        except remediation.Refusal as exc:
            return self._refused(result, host, exc.reasons, "ownership", gathered)
        result["notes"] = the_plan["notes"]
        if the_plan["noop"]:
            return self._done(result, gathered, changed=False)
        if replanned:
            staged = self._stage(task_vars, gathered, the_plan)
        if staged.get("failed") or staged.get("stage_failed"):
            why = staged.get("stage_failed") or staged.get("msg")
            return self._refused(result, host, ["staging failed: %s" % why], "stage", gathered)
        return self._prove_and_write(result, host, task_vars, gathered, the_plan, staged)

    def _prove_and_write(self, result, host, task_vars, gathered, the_plan, staged):
        """The staged load proved against the current one (the diff, the loaded changes); outside check mode,
        the files written with the node's proof and rollback."""
        opts = self._opts
        inputs = the_plan.get("input_paths") or []
        files = the_plan["writes"] + the_plan["removes"]
        problems, changes = remediation.prove(the_plan, gathered, staged, opts["accept_changes"])
        result["diff"] = [dict(before_header=f["path"], after_header=f["path"], before=f["before"] or "",
                               after=f["content"] or "") for f in files] + [remediation.loaded_diff(changes)]
        result["loaded_changes"] = [remediation.change_line(*c) for c in changes]
        result["files"] = [f["path"] for f in files]
        if problems:
            return self._refused(result, host, problems, "proof", gathered)
        if self._play_context.check_mode:
            return self._would_write(result, staged)

        written = self._node(task_vars, "write", files=_node_files(the_plan), expected_sha256=staged["normalized_sha256"],
                             import_patterns=the_plan["import_patterns"], backup_dir=opts["backup_dir"],
                             version_output=gathered.get("version_output"), input_paths=inputs)
        if written.get("failed"):
            return self._write_failed(result, host, written)
        self._record_restart_proof(result, the_plan, written)
        if not opts["backup"] and written.get("backup_dir"):
            self._remove_backups(task_vars, written["backup_dir"])
            written["backup_dir"] = None
        result["backup_dir"] = written.get("backup_dir")
        result["msg"] = "wrote %s" % ", ".join(written.get("written") + ["removed " + p for p in written.get("removed")])
        return self._done(result, written, changed=True)

    def _write_failed(self, result, host, written):
        """The node's write failed: what it had changed, what it put back, and where the backups are."""
        changed = written.get("changed_files") or []  # absent: the write failed before it touched a file
        problems = written.get("restore_problems") or []
        line = restart_proof.files_line(changed, written.get("put_back") or [], problems)
        if problems and written.get("backup_dir"):
            line += "; backups in %s" % written["backup_dir"]
        result.update(failed=True, changed=bool(problems), step="write", restored=not problems,
                      changed_files=changed, backup_dir=written.get("backup_dir"),
                      msg="%s: %s; %s" % (host, written.get("msg"), line))
        return result

    def _record_restart_proof(self, result, the_plan, written):
        """What the handler after the restart proves (restart_proof.record), with the node steps' arguments."""
        result["restart_proof"] = restart_proof.record(
            self._opts, dict((k, self._opts.get(k)) for k in _NODE_ARGS), the_plan, written)
        result["restart_proof"]["node_args"]["dropin_dirs"] = self._dropin_dirs

    def _from_role_vars(self, task_vars):
        """(the arguments given, validated) from the role's variables (role_vars=true), the task's own
        arguments over them; RoleInputError with every problem, named by variable."""
        spec = role_inputs.validation_spec()
        try:
            values = self._templar.template(role_inputs.given_variables(task_vars, spec))
            fallbacks = self._templar.template(role_inputs.fallback_variables(task_vars))
        except AnsibleError as exc:
            raise role_inputs.RoleInputError("a variable of the role does not resolve: %s" % exc)
        checked = ArgumentSpecValidator(spec).validate(values)
        problems = checked.error_messages or role_inputs.hook_problems(checked.validated_parameters)
        if problems:
            raise role_inputs.RoleInputError("the role's variables are not valid: %s" % "; ".join(problems))
        given = role_inputs.module_args(checked.validated_parameters, remediation.ARGUMENT_SPEC, fallbacks, values)
        given.update(self._task.args)
        validated = ArgumentSpecValidator(ARGUMENT_SPEC).validate(given)
        if validated.error_messages:
            raise role_inputs.RoleInputError("; ".join(validated.error_messages))
        return given, validated.validated_parameters

    def _would_write(self, result, staged):
        """Check mode: the staged tree's gather stands for what the write would return."""
        result["msg"] = "would write %s (the staged load was proved; check mode wrote nothing)" % ", ".join(result["files"])
        if isinstance(staged.get("gathered"), dict):
            return self._done(result, staged["gathered"], changed=True)
        result.update(changed=True, loaded_after=parse_gathered.summarize_dump(staged["dump"]))
        return result

    def _done(self, result, gathered, changed):
        try:
            parse_gathered.parse_gathered(gathered)
        except parse_gathered.DumpError as exc:
            result.update(failed=True, msg=str(exc))
            return result
        for key in ("changed", "invocation", "_ansible_no_log", "written", "removed", "backup_dir", "default_text",
                    "file_states", "migration"):
            gathered.pop(key, None)
        parse_gathered.drop_texts(gathered)  # registered for the whole play: parsed facts only
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

    # --- ownership by evidence, and the proof after the restart (issue 27) --------------------------

    def _stage(self, task_vars, gathered, the_plan, owned_paths=None):
        """The node's load of the plan's files, staged; with OWNED_PATHS, the ownership evidence of those
        first (the same call). In check mode the stage also gathers the staged tree: the re-audit judges
        what the write would return."""
        args = dict(files=_node_files(the_plan), staged_main=the_plan["staged_main"],
                    input_paths=the_plan.get("input_paths") or [], gather_staged=self._play_context.check_mode,
                    version_output=gathered.get("version_output"))
        if owned_paths:
            args.update(self._evidence_args(), owned_paths=owned_paths)
        return self._node(task_vars, "stage", **args)

    def _evidence_args(self):
        """What the node's ownership evidence reads besides the paths: the node's root and containerd's unit."""
        return dict(host_root=self._opts["host_root"], service_names=[self._opts["service_name"]])

    def _owned(self, task_vars, gathered, the_plan, found=None):
        """(gathered, plan, replanned) once every planned file is decided from the node's evidence (FOUND,
        else asked for): Refusal, the drop-ins moved to the directory a generated main config imports
        (gathered and planned again), or the main config's edit moved to the template its start renders it
        from. replanned: the plan's files are not those FOUND came with."""
        replanned = False
        for _attempt in range(3):
            if found is None:
                found = self._node(task_vars, "ownership", owned_paths=ownership_gate.evidence_paths(the_plan, gathered),
                                   **self._evidence_args())
            if found.get("failed"):
                raise remediation.Refusal("cannot read who owns the files the run would write: %s. Nothing was "
                                          "written." % found.get("msg"))
            verdict = ownership_gate.judge(the_plan, gathered, found, self._opts.get("edit_generated"),
                                           self._opts["dropin_dir"])
            if verdict["refusals"]:
                raise remediation.Refusal(verdict["refusals"])
            if verdict["dropin_dir"] and verdict["dropin_dir"] != self._opts["dropin_dir"]:
                self._opts = dict(self._opts, dropin_dir=verdict["dropin_dir"])
                self._dropin_dirs = remediation.dropin_dirs(self._opts)
                gathered = self._node(task_vars, "gather", migrate=self._opts["migrate"],
                                      extra_paths=[s["table"].get("options", {}).get("BinaryName")
                                                   for s in the_plan["specs"] if s["table"].get("options", {}).get("BinaryName")])
                if gathered.get("failed"):
                    raise remediation.Refusal("cannot gather again for %s: %s" % (verdict["dropin_dir"], gathered.get("msg")))
                the_plan = remediation.plan(gathered, self._opts)
                the_plan["notes"] += verdict["notes"]
                if the_plan["noop"]:
                    return gathered, the_plan, True
                found, replanned = None, True
                continue
            if verdict["template"]:
                decided, template = verdict["template"]
                ownership_gate.through_template(the_plan, gathered, found, decided, template)
                replanned = True
            the_plan["notes"] += verdict["notes"]
            return gathered, the_plan, replanned
        raise remediation.Refusal("the ownership of the drop-in directory kept changing between gathers")

    def _after_restart(self, result, host, task_vars, args):
        """The handler after the restart: the running daemon must have what the run reported; else the
        files are put back, containerd is restarted again and the host fails."""
        previous = dict(args["after_restart"])
        proof = previous.pop("restart_proof", None)
        for key in ("invocation", "_ansible_no_log", "diff"):
            previous.pop(key, None)
        if not proof or previous.get("failed") or self._play_context.check_mode or not args["restarted"]:
            previous.update(changed=previous.get("changed", False))
            return previous
        why_not = restart_proof.not_restarted(args.get("restart_result"), bool(args["restart_command"]), proof)
        if why_not:
            previous.update(failed=True, changed=True, step="restart", msg="%s: %s" % (host, why_not))
            return previous
        self._opts = dict(proof["node_args"])
        self._dropin_dirs = self._opts.pop("dropin_dirs", None) or [self._opts["dropin_dir"]]
        after = self._node(task_vars, "after_restart")
        missing = None if after.get("failed") else restart_proof.unproved(proof, after)
        if missing:
            previous.update(failed=True, changed=True, step="after_restart", reasons=[missing],
                            msg="%s: the restart is not proved: %s Written: %s." % (
                                host, missing, ", ".join(f["path"] for f in proof["files"])))
            return previous
        if after.get("failed"):
            why = ["the restarted containerd's config cannot be read: %s" % after.get("msg")]
        else:
            try:
                loaded = parse_gathered.summarize_dump(after["dump"]) if after.get("dump") else {}
            except parse_gathered.DumpError as exc:
                loaded = {}
                why = ["the restarted containerd's config does not parse: %s" % exc]
            else:
                why = restart_proof.missing_after_restart(proof, after, loaded)
        if not why:
            proved = self._node(task_vars, "restart_proved")
            if proved.get("failed"):
                previous.update(failed=True, changed=True, step="after_restart",
                                msg="%s: the restarted containerd has the runtimes, but the restart marker could not "
                                    "be removed: %s" % (host, proved.get("msg")))
                return previous
            after["restart_marker"] = None
            running = after.get("running") or {}
            previous["msg"] = "%s; after the restart %s has %s" % (
                previous.get("msg") or "written",
                "the running containerd (crictl info)" if running.get("source") == "crictl" else
                "the config containerd starts with (%s; restart_proof=config: the running daemon was not asked)"
                % after.get("config_path"),
                ", ".join(r["name"] for r in proof["runtimes"]))
            return self._done(previous, after, changed=True)
        marker = "the restart marker stays, so the next run restarts and proves again"
        if not proof["files"]:  # a pending restart: this run wrote nothing, so nothing is put back
            previous.update(failed=True, changed=True, step="after_restart", reasons=why,
                            msg="%s: the runtimes are not there after the restart: %s; this run wrote nothing; %s"
                                % (host, "; ".join(why), marker))
            return previous
        files = [dict(path=f["path"], backup=f["backup"], existed=f["existed"]) for f in proof["files"]]
        restored = self._node(task_vars, "restore", files=files)
        put_back = restored.get("put_back") or []
        problems = restored.get("problems") or ([restored.get("msg")] if restored.get("failed") else [])
        line = restart_proof.files_line([f["path"] for f in proof["files"]], put_back, problems,
                                        restored.get("removed_new") or [])
        again = self._restart_again(task_vars, args)
        previous.update(failed=True, changed=True, step="after_restart", reasons=why,
                        msg="%s: the runtimes did not survive the restart: %s; %s; %s; %s" % (
                            host, "; ".join(why), line, again, marker))
        return previous

    def _restart_again(self, task_vars, args):
        if args.get("restart_command"):
            ran = self._execute_module(module_name="ansible.builtin.command",
                                       module_args=dict(argv=args["restart_command"]), task_vars=task_vars)
        else:
            ran = self._execute_module(module_name="ansible.builtin.systemd_service",
                                       module_args=dict(name=args["service_name"], state="restarted"),
                                       task_vars=task_vars)
        if ran.get("failed"):
            return "containerd could NOT be restarted again on the restored files: %s" % ran.get("msg")
        return "containerd was restarted again on the restored files"

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node side of remediation: what a plan needs beyond the audit's gather, the staged load of
proposed files in a private directory, and the write with backups, proof and rollback.

Runs on target hosts: Python 3.8+, standard library only. The controller parses the TOML; the
node compares only texts and hashes, so the proof that the written files load exactly as the
staged ones did needs no TOML parser here.
"""

import hashlib
import os
import shutil
import stat
import tempfile
import time

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_config_text as node_config_text
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_commands as commands
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_gather as node_gather
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _restart_marker as restart_marker
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._gathered import PlanGathered

# The controller writes imports into the staged main config with this prefix; the node puts
# its private staging directory in its place.
STAGE_PLACEHOLDER = "@@GPURT_STAGE@@"
_TOML_UNSAFE = ('"', "\\", "'", "\n")


class FilesError(Exception):
    """A step that must not go on, with a message fit for the task result."""


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def file_state(path):
    """What the plan must know to write a file safely: exists, sha256, mode, uid, gid, mtime."""
    try:
        info = os.stat(path)
    except OSError:
        return {"exists": False, "sha256": None}
    state = {"exists": True, "sha256": None, "mode": "%04o" % stat.S_IMODE(info.st_mode),
             "uid": info.st_uid, "gid": info.st_gid, "realpath": os.path.realpath(path), "mtime": info.st_mtime}
    if stat.S_ISREG(info.st_mode):
        try:
            with open(path, "rb") as handle:
                state["sha256"] = sha256_bytes(handle.read())
        except (IOError, OSError) as exc:
            state["error"] = "cannot read: %s" % (exc.strerror or exc)
    else:
        state["error"] = "not a regular file"
    return state


def normalized_dump_sha256(dump_text):
    """Hash of a dump without its top-level imports: the one line where a staged load (files
    under a private dir) and the real load of the same files differ. containerd 1.x also
    lists the merged files there in an order that changes between runs."""
    text = node_config_text.without_top_level_array(dump_text, "imports")
    if text is None:
        raise FilesError("cannot cut the imports line out of the dump to compare it")
    return sha256_bytes(text.encode("utf-8"))


def _run(argv, timeout, max_bytes=None, max_memory=None):
    proc = commands.start(argv, max_memory)
    return commands.finish(proc, argv, timeout, max_bytes)


def _migration(binary, config_path, text, policy, default_version, timeout):
    """containerd's own `config migrate` of the main file, run on a private copy without its
    imports (migrate would inline what they load). None when the policy does not ask for it."""
    version = node_config_text.top_level_version(text)
    version = 1 if version is None else version
    if policy == "never" or version >= (default_version or 0):
        return None
    if policy == "auto" and version != 1:
        return None
    stripped = node_config_text.without_top_level_array(text, "imports")
    out = {"from_version": version, "stripped": stripped, "text": None, "warnings": [], "error": None}
    if stripped is None:
        out["error"] = "the imports array of %s is not a shape this module can cut out" % config_path
        return out
    work = tempfile.mkdtemp(prefix="gpurt-migrate-")
    try:
        copy = os.path.join(work, "config.toml")
        with open(copy, "w") as handle:
            handle.write(stripped)
        argv = [binary, "--config", copy, "config", "migrate"]
        try:
            rc, text_out, stderr = _run(argv, timeout)
        except commands.GatherError as exc:
            out["error"] = str(exc)
            return out
        out["warnings"] = commands.loader_lines(stderr)
        if rc != 0:
            out["error"] = "'containerd config migrate' exited %d: %s" % (rc, stderr.strip()[-2000:])
        else:
            out["text"] = text_out
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def gather_for_plan(params) -> PlanGathered:
    """The audit's gather plus: `config default`, the state of every file the plan may write,
    facts on the wanted BinaryNames, and containerd's migration of an old main file."""
    binary = commands.find_binary(params["containerd_bin"])
    default_argv = [binary, "config", "default"]
    default_proc = commands.start(default_argv)  # runs while the gather runs its own commands
    try:
        result = node_gather.gather(params)
    except commands.GatherError:
        commands.kill(default_proc)
        raise
    rc, default_text, stderr = commands.finish(default_proc, default_argv, params["timeout"], params["max_dump_bytes"])
    if rc != 0:
        raise commands.GatherError("'%s' exited %d: %s" % (" ".join(default_argv), rc, stderr.strip()[-2000:]))
    result["default_text"] = default_text
    watched = [result["config_path"]] + host_paths.list_files(params["dropin_dir"])
    result["file_states"] = dict((path, file_state(path)) for path in watched)
    result["dropin_dir_exists"] = os.path.isdir(params["dropin_dir"])
    if params.get("extra_paths"):
        lookup = node_gather.RuntimeLookup(params.get("host_root"), params.get("shim_dirs"), binary, result["config_path"])
        for name in params["extra_paths"]:
            result["paths"][name] = lookup.binary(name)
    config_text = result["files"][0]["content"]
    result["migration"] = None
    if result["version_major"] >= 2 and config_text is not None:
        result["migration"] = _migration(binary, result["config_path"], config_text, params["migrate"],
                                         node_config_text.top_level_version(default_text), params["timeout"])
    return result


def _check_expected(files):
    """Refuse when a file changed since the plan read it (another tool writing meanwhile)."""
    for item in files:
        now = file_state(item["path"])["sha256"]
        if now != item.get("expect_sha256"):
            raise FilesError("%s changed since it was read (sha256 %s, planned against %s); nothing was written, "
                             "run again" % (item["path"], now or "absent", item.get("expect_sha256") or "absent"))


def _check_targets(files, config_path, dropin_dir, input_paths=()):
    """Every file is the main config, a file directly in the drop-in dir, or a generator's input the
    controller decided to write instead of the file it renders (input_paths)."""
    for item in files:
        path = item["path"]
        if path != config_path and os.path.dirname(path) != dropin_dir and path not in input_paths:
            raise FilesError("%s is neither the main config nor in the drop-in dir %s" % (path, dropin_dir))


def stage(params):
    """Write the proposed files under a private directory that mirrors the node's paths, load
    them with the node's containerd and return the dump; the directory is always removed."""
    config_path, dropin_dir, files = params["config_path"], params["dropin_dir"], params["files"]
    inputs = params.get("input_paths") or []
    _check_targets(files, config_path, dropin_dir, inputs)
    _check_expected(files)
    files = [item for item in files if item["path"] not in inputs]  # containerd does not load a template
    root = tempfile.mkdtemp(prefix="gpurt-stage-")
    try:
        if any(char in root for char in _TOML_UNSAFE):
            raise FilesError("the staging directory %s has characters a TOML string would need escaped" % root)
        staged_dropin = root + dropin_dir
        os.makedirs(staged_dropin)
        planned = dict((item["path"], item) for item in files)
        for path in host_paths.list_files(dropin_dir):
            if path not in planned:
                shutil.copyfile(path, root + path)
        for item in files:
            if item.get("content") is not None and item["path"] != config_path:
                with open(root + item["path"], "w") as handle:
                    handle.write(item["content"])
        staged_main = root + config_path
        os.makedirs(os.path.dirname(staged_main), exist_ok=True)
        main_text = params["staged_main"].replace(STAGE_PLACEHOLDER, root)
        with open(staged_main, "w") as handle:
            handle.write(main_text)
        binary = commands.find_binary(params["containerd_bin"])
        argv = [binary, "--config", staged_main, "config", "dump"]
        # The node's own drop-ins load here too, under the same memory limit as the gather's dump.
        rc, dump, stderr = _run(argv, params["timeout"], params["max_dump_bytes"], commands.memory_limit(params))
        imports = []
        for pattern in node_config_text.top_level_imports(main_text):
            resolved, matches = host_paths.import_matches(pattern, staged_main)
            imports.append({"pattern": pattern.replace(root, ""), "resolved": resolved.replace(root, ""),
                            "matches": [m[len(root):] if m.startswith(root + "/") else m for m in matches]})
        out = {"rc": rc, "dump": dump if rc == 0 else None, "dump_warnings": commands.loader_lines(stderr),
               "stderr_tail": stderr.strip()[-2000:] if rc != 0 else "", "imports": imports,
               "normalized_sha256": normalized_dump_sha256(dump) if rc == 0 and dump.strip() else None}
        if params.get("gather_staged") and rc == 0 and dump.strip():
            out["gathered"] = _staged_gather(params, root, staged_main, (argv, rc, dump, stderr))
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _unstaged(value, root):
    """value with the staging directory taken out of every string: the node's own paths."""
    if isinstance(value, str):
        return value.replace(root, "")
    if isinstance(value, list):
        return [_unstaged(item, root) for item in value]
    if isinstance(value, dict):
        return dict((_unstaged(k, root), _unstaged(v, root)) for k, v in value.items())
    return value


def _staged_gather(params, root, staged_main, dump_run):
    """The gather the write step returns, taken on the staged tree: the same files, imports, dump, host
    paths, shims, kubelet config and CDI specs the real run's re-audit judges, as the node will have
    them once the planned files are written (check mode's re-audit). The daemon is not restarted, so
    no running view."""
    dropin_dir = params["dropin_dir"]
    dirs = params.get("dropin_dirs")
    if dirs is None:
        dirs = containerd_facts.dropin_dirs(params["config_path"])
    staged_params = dict(params, config_path=staged_main, gather_running=False, read_marker=False,
                         dropin_dirs=[root + d if d == dropin_dir else d for d in dirs])
    gathered = node_gather.gather(staged_params, ran={"dump": dump_run, "version_output": params.get("version_output")})
    gathered = _unstaged(gathered, root)
    # A restart already pending stays pending after the write (check mode proves no restart): the node's own marker.
    gathered["restart_marker"] = restart_marker.read(params, os.path.abspath(params["config_path"]))
    return gathered


def _write_atomically(path, content, like):
    """Write content to path through a temporary file in the same directory and a rename;
    keep the mode and owner of the file it replaces (like), else 0644."""
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    handle, tmp = tempfile.mkstemp(dir=directory, prefix=".gpurt-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, int(like.get("mode") or "0644", 8))
        if like.get("exists") and os.geteuid() == 0:
            os.chown(tmp, like["uid"], like["gid"])
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


write_atomically = _write_atomically


def _backup_matched_by(backup_paths, patterns):
    hits = []
    for pattern in patterns:
        for path in backup_paths:
            if host_paths.glob_matches_path(pattern, path):
                hits.append("%s matches backup %s" % (pattern, path))
    return hits


def _restore(done):
    """Undo the writes in reverse order: put each backup back, remove files that were new."""
    problems = []
    for item in reversed(done):
        try:
            if item["backup"]:
                with open(item["backup"]) as handle:
                    _write_atomically(item["path"], handle.read(), item["state"])
            elif os.path.lexists(item["path"]):
                os.remove(item["path"])
        except (IOError, OSError) as exc:
            problems.append("%s: %s" % (item["path"], exc))
    return problems


def write(params):
    """Back up, write and remove the planned files, load the real config and compare it with the
    staged load the controller proved; on any difference or error put everything back."""
    config_path, dropin_dir, files = params["config_path"], params["dropin_dir"], params["files"]
    _check_targets(files, config_path, dropin_dir, params.get("input_paths") or [])
    _check_expected(files)
    backup_root = params["backup_dir"]
    if not os.path.isabs(backup_root):
        raise FilesError("backup_dir must be an absolute path")
    os.makedirs(backup_root, mode=0o700, exist_ok=True)
    run_dir = tempfile.mkdtemp(prefix=time.strftime("%Y%m%dT%H%M%SZ-", time.gmtime()), dir=backup_root)
    backups = dict((item["path"], run_dir + item["path"]) for item in files if file_state(item["path"])["exists"])
    hits = _backup_matched_by(list(backups.values()), params.get("import_patterns") or [])
    if hits:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise FilesError("an imports entry would load the backups (%s); choose a backup_dir outside every "
                         "imported directory. Nothing was written." % "; ".join(hits))
    os.makedirs(dropin_dir, mode=0o755, exist_ok=True)
    done = []
    failure = None
    changed = []  # the files this write really changed, in order
    current = None
    # The restart marker goes first: a run killed anywhere after this line leaves a pending restart the next
    # run and the audit see, whatever the running view can tell.
    real_config = os.path.abspath(config_path)
    had_marker = restart_marker.read(params, real_config) is not None
    restart_marker.write(params, real_config, [i["path"] for i in files])
    try:
        for item in files:
            current = item["path"]
            state = file_state(item["path"])
            backup = backups.get(item["path"])
            if backup:
                os.makedirs(os.path.dirname(backup), mode=0o700, exist_ok=True)
                shutil.copy2(item["path"], backup)
            done.append({"path": item["path"], "backup": backup, "state": state})
            if item.get("content") is None:
                os.remove(item["path"])
            else:
                _write_atomically(item["path"], item["content"], state)
            changed.append(item["path"])
    except (IOError, OSError) as exc:
        failure = "writing %s failed: %s" % (current, exc.strerror or exc)
    dump = None
    if failure is None:
        argv = [params["containerd_bin"], "--config", os.path.abspath(config_path), "config", "dump"]
        try:
            argv[0] = commands.find_binary(params["containerd_bin"])
            rc, dump, stderr = _run(argv, params["timeout"], params["max_dump_bytes"], commands.memory_limit(params))
        except commands.GatherError as exc:
            rc, stderr = -1, str(exc)
        if rc != 0:
            failure = "the written config does not load: %s" % stderr.strip()[-2000:]
        else:
            try:
                if normalized_dump_sha256(dump) != params["expected_sha256"]:
                    failure = "the written files load differently from the staged ones that were proved"
            except FilesError as exc:
                failure = str(exc)
    if failure is not None:
        problems = _restore([d for d in done if d["path"] in changed])
        failed_paths = [line.split(": ", 1)[0] for line in problems]
        if not problems and not had_marker:
            restart_marker.remove(params, real_config)  # every file is as it was: nothing to restart for
        return {"failed": True, "msg": failure, "restored": not problems, "restore_problems": problems,
                "changed_files": changed, "put_back": [p for p in changed if p not in failed_paths],
                "backup_dir": run_dir, "dump_after_write": dump}
    if not backups:
        os.rmdir(run_dir)
        run_dir = None
    # The restart comes next: no running view yet. The dump just taken and the version the gather
    # step saw (version_output) are not run again.
    result = node_gather.gather(dict(params, gather_running=False),
                                ran={"dump": (argv, rc, dump, stderr), "version_output": params.get("version_output")})
    result.update(backup_dir=run_dir, written=[i["path"] for i in files if i.get("content") is not None],
                  removed=[i["path"] for i in files if i.get("content") is None])
    return result

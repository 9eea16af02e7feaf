# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a node bootstrap's files into a sandbox directory on the controller and pick the
containerd binary of the node group's release; say NOT VALIDATED, and why, where the bootstrap cannot be
evaluated (the playbook stops there)."""

import os

from ansible.errors import AnsibleActionFail

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _bootstrap as bootstrap
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _userdata as userdata
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._controller_action import ControllerAction

NOT_VALIDATED = "NOT VALIDATED"
ARGUMENT_SPEC = dict(
    root=dict(type="path", required=True),
    files=dict(type="list", elements="dict", default=[]),
    userdata=dict(type="path"),
    image_config=dict(type="str"),
    config_path=dict(type="str", default=containerd_facts.CONFIG_PATH),
    kubelet_config_path=dict(type="str", default=containerd_facts.KUBELET_CONFIG_PATH),
    containerd_version=dict(type="str", default="2"),
    containerd_bins=dict(type="dict", default={}),
    name=dict(type="str", default="bootstrap"),
)


def _read(path, what):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        raise AnsibleActionFail("cannot read %s %s: %s" % (what, path, exc.strerror or exc))


class ActionModule(ControllerAction):
    def run(self, tmp=None, task_vars=None):
        result, args = self._validated(tmp, task_vars, ARGUMENT_SPEC)
        config_path = os.path.normpath(args["config_path"])
        files = []
        unevaluated = []
        try:
            containerd = bootstrap.pick_containerd(bootstrap.parse_release(args["containerd_version"]),
                                                   args["containerd_bins"])
            if args["image_config"] and args["image_config"] != "none":
                files.append({"path": config_path, "origin": "image config %s" % args["image_config"],
                              "content": _read(args["image_config"], "image config").decode("utf-8", "surrogateescape")})
            for index, entry in enumerate(args["files"]):
                if not entry.get("path") or "content" not in entry:
                    raise AnsibleActionFail("files entry #%d needs path and content" % (index + 1))
                files.append({"path": entry["path"], "content": entry["content"], "origin": entry.get("origin", "template")})
            if args["userdata"]:
                watched = (os.path.dirname(config_path) + "/", os.path.normpath(args["kubelet_config_path"]))
                found = userdata.read(_read(args["userdata"], "user-data"), watched)
                files.extend(found.files.values())
                unevaluated.extend(found.unevaluated)
            # (Said only alone: a part that was not evaluated is the reason then.)
            if not unevaluated and not args["image_config"] and not any(os.path.normpath(f["path"]) == config_path for f in files):
                unevaluated.append(
                    "the bootstrap writes no %s: the node runs the one its image ships, unknown here (set "
                    "gpurt_bootstrap_image_config to that file, or to 'none' when the image has none and containerd "
                    "runs on its defaults)" % config_path)
            # The sandbox is scratch space on the controller, not a managed node: written in check mode too.
            written = bootstrap.write_sandbox(files, args["root"], os.path.dirname(config_path))
        except (IOError, OSError) as exc:
            raise AnsibleActionFail("cannot write the sandbox: %s" % exc)
        except (userdata.UserDataError, bootstrap.SandboxError) as exc:
            raise AnsibleActionFail(str(exc))
        config = bootstrap.sandbox_path(args["root"], config_path)
        result.update(
            changed=False,
            root=args["root"],
            files=written,
            unevaluated=unevaluated,
            config_path=config,
            config_written=any(os.path.normpath(w["path"]) == config_path for w in written),
            dropin_dirs=containerd_facts.dropin_dirs(config),
            kubelet_config_path=bootstrap.sandbox_path(args["root"], args["kubelet_config_path"]),
            containerd_bin=containerd["path"],
            containerd_version=containerd["version"],
            containerd_source=containerd["source"],
        )
        if unevaluated:
            # Fail closed: a verdict on what was reproduced would stand in for what was not. The playbook stops
            # (validate_bootstrap.yml, in one short line); these lines say why, once, in the summary.
            result["gpurt_summary_lines"] = ["%s: %s: %s" % (args["name"], NOT_VALIDATED, reason)
                                             for reason in unevaluated]
        return result

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a node bootstrap's files into a sandbox directory on the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import bootstrap
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import userdata as userdata_utils

ARGUMENT_SPEC = dict(
    root=dict(type="path", required=True),
    files=dict(type="list", elements="dict", default=[]),
    userdata=dict(type="path"),
    config_path=dict(type="str", default="/etc/containerd/config.toml"),
    kubelet_config_path=dict(type="str", default="/var/lib/kubelet/config.yaml"),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(
            argument_spec=ARGUMENT_SPEC, required_one_of=[["files", "userdata"]])
        notes = []
        files = []
        try:
            for index, entry in enumerate(args["files"]):
                if not entry.get("path") or "content" not in entry:
                    raise AnsibleActionFail("files entry #%d needs path and content" % (index + 1))
                files.append({"path": entry["path"], "content": entry["content"], "origin": entry.get("origin", "template")})
            if args["userdata"]:
                with open(args["userdata"], "rb") as handle:
                    found, notes = userdata_utils.files_written(handle.read())
                files.extend(found.values())
            # The sandbox is scratch space on the controller, not a managed node: written in check mode too.
            written = bootstrap.write_sandbox(files, args["root"], os.path.dirname(args["config_path"]))
            config = bootstrap.sandbox_path(args["root"], args["config_path"])
            kubelet = bootstrap.sandbox_path(args["root"], args["kubelet_config_path"])
        except (IOError, OSError) as exc:
            raise AnsibleActionFail("cannot read or write bootstrap files: %s" % exc)
        except (userdata_utils.UserDataError, bootstrap.SandboxError) as exc:
            raise AnsibleActionFail(str(exc))
        result.update(
            changed=False,
            root=args["root"],
            files=written,
            notes=notes,
            config_path=config,
            config_written=any(w["path"] == os.path.normpath(args["config_path"]) for w in written),
            dropin_dirs=[os.path.join(os.path.dirname(config), d) for d in ("conf.d", "config.d")],
            kubelet_config_path=kubelet,
        )
        return result

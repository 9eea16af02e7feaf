# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-node options of a gather and the host variable each is read from: one list for the
audit (containerd_config_info with host_vars=true) and the remediation (register_runtimes, every node
step), so that the re-audit after a write judges the node as the audit does. Controller only."""

from ansible.errors import AnsibleError

# (gather option, host variable). A new per-node input of the gather goes here and nowhere else.
NODE_OPTIONS = (
    ("containerd_bin", "gpurt_containerd_bin"),
    ("config_path", "gpurt_containerd_config_path"),
    ("dropin_dirs", "gpurt_dropin_dirs"),
    ("kubelet_config_path", "gpurt_kubelet_config_path"),
    ("cdi_spec_dirs", "gpurt_cdi_spec_dirs"),
    ("timeout", "gpurt_containerd_timeout"),
    ("shim_dirs", "gpurt_shim_dirs"),
    ("crictl_bin", "gpurt_crictl_bin"),
    ("cri_endpoint", "gpurt_cri_endpoint"),
    ("host_root", "gpurt_host_root"),
    ("state_dir", "gpurt_state_dir"),
)
OPTION_NAMES = tuple(option for option, _variable in NODE_OPTIONS)


class HostVarError(Exception):
    pass


def from_host_vars(given, task_vars, templar):
    """{option: value} of every per-node option not in given (the options the task set), taken from
    the host's variable when it is set and not null (null, as unset: the option's default); templated
    only when it is a template. HostVarError naming the variable when it does not resolve."""
    out = {}
    for option, variable in NODE_OPTIONS:
        if option in given or (task_vars or {}).get(variable) is None:
            continue
        try:
            value = templar.template(task_vars[variable])
        except AnsibleError as exc:
            raise HostVarError("cannot resolve the host variable %s: %s" % (variable, exc))
        if value is not None:
            out[option] = value
    return out


def variable_names():
    """{option: host variable}, to say a message in the words of the user who set the variable."""
    return dict(NODE_OPTIONS)

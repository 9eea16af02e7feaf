"""The containerd_runtime role's variables as register_runtimes' options (role_vars=true)."""
import os

import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import ARGUMENT_SPEC
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _role_inputs as role_inputs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def role_defaults():
    with open(os.path.join(REPO, "roles", "containerd_runtime", "defaults", "main.yml")) as handle:
        return yaml.safe_load(handle)


def args_of(fallbacks=None, **overrides):
    """module_args as the action calls it, from the role defaults with OVERRIDES."""
    spec = role_inputs.validation_spec()
    values = role_inputs.given_variables(dict(role_defaults(), **overrides), spec)
    checked = ArgumentSpecValidator(spec).validate(values)
    assert not checked.error_messages, checked.error_messages
    return role_inputs.module_args(checked.validated_parameters, ARGUMENT_SPEC, fallbacks, values)


def test_every_role_variable_is_in_the_spec_and_every_default_is_plain():
    """The action templates the role's variables itself: a default that is a template would cost a
    compile per host again, and a variable missing from the spec would never be checked."""
    defaults = role_defaults()
    assert sorted(defaults) == sorted(role_inputs.validation_spec())
    assert [name for name, value in defaults.items() if "{{" in str(value)] == []


def test_the_defaults_leave_the_per_node_options_to_the_host_variables():
    args = args_of()
    # null: not given, so the action's host_vars (gpurt_containerd_bin ...) or the option's default apply
    for option in ("containerd_bin", "config_path", "dropin_dir", "kubelet_config_path", "timeout", "crictl_bin",
                   "cri_endpoint", "host_root", "default_runtime_name", "systemd_cgroup"):
        assert option not in args, option
    assert args["runtimes"] == [{"name": "nvidia", "binary_name": "/usr/bin/nvidia-container-runtime"}]
    assert (args["dropin_glob"], args["dropin_prefix"], args["backup_dir"], args["service_name"]) == (
        "*.toml", "zz-", "/var/backups/gpurt-runtime-gate", "containerd")
    # the handlers' variables are not the module's options (containerd_runtime_after_restart_tasks is no after_restart)
    assert not set(args) & {"restart_command", "restart_timeout", "after_restart", "after_restart_tasks"}, args


def test_set_variables_become_options():
    args = args_of(
        containerd_runtime_containerd_bin="/opt/bin/containerd", containerd_runtime_timeout="7",
        containerd_runtime_systemd_cgroup=False, containerd_runtime_default_runtime_name="",
        containerd_runtime_enable_nvidia_cdi=True)
    assert (args["containerd_bin"], args["timeout"], args["systemd_cgroup"]) == ("/opt/bin/containerd", 7, False)
    assert "default_runtime_name" not in args  # empty: none asked
    assert [r["name"] for r in args["runtimes"]] == ["nvidia", "nvidia-cdi"]


def test_config_dir_gives_the_dropin_dir_unless_it_is_set():
    assert args_of(containerd_runtime_config_dir="/etc/k0s")["dropin_dir"] == "/etc/k0s/conf.d"
    assert args_of(containerd_runtime_config_dir="/etc/k0s",
                   containerd_runtime_dropin_dir="/etc/k0s/containerd.d")["dropin_dir"] == "/etc/k0s/containerd.d"


def test_a_null_host_root_falls_back_to_gpurt_host_root():
    """gpurt_host_root is a per-node option of the audit's gather now (it reads the restart marker under it):
    a null role variable leaves host_root out, and the action takes the host variable, as for every such option."""
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _node_options as node_options
    assert ("host_root", "gpurt_host_root") in node_options.NODE_OPTIONS
    assert ("state_dir", "gpurt_state_dir") in node_options.NODE_OPTIONS
    assert "host_root" not in args_of() and "state_dir" not in args_of()
    assert args_of(containerd_runtime_host_root="/mnt/image")["host_root"] == "/mnt/image"
    assert role_inputs.fallback_variables({"gpurt_host_root": "/srv/node1"}) == {}


def test_a_wrong_type_is_named_by_its_variable():
    spec = role_inputs.validation_spec()
    checked = ArgumentSpecValidator(spec).validate(role_inputs.given_variables(
        dict(role_defaults(), containerd_runtime_timeout="soon", containerd_runtime_restart_command="reboot now"), spec))
    text = " ".join(checked.error_messages)
    assert "containerd_runtime_timeout" in text, text


def test_a_restart_hook_must_be_a_readable_file_given_by_absolute_path(tmp_path):
    hook = tmp_path / "drain.yml"
    hook.write_text("- ansible.builtin.debug:\n")
    assert role_inputs.hook_problems({"containerd_runtime_before_restart_tasks": str(hook),
                                      "containerd_runtime_after_restart_tasks": None}) == []
    problems = role_inputs.hook_problems({"containerd_runtime_before_restart_tasks": "tasks/drain.yml",
                                          "containerd_runtime_after_restart_tasks": str(tmp_path / "missing.yml")})
    assert problems == [
        "containerd_runtime_before_restart_tasks must be an absolute path to a task file on the controller, got "
        "'tasks/drain.yml'",
        "containerd_runtime_after_restart_tasks: %s is not a readable file on the controller" % (tmp_path / "missing.yml")]

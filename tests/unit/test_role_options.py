"""The containerd_runtime role's options are declared once, in its argument spec: the role's defaults
file, the register_runtimes action's options and docs/remediation.md's table are copies that a test
holds equal to it, so no copy can disagree unnoticed."""
import os
import subprocess
import sys

import yaml

from ansible_collections.gpurt.runtime_gate.plugins.action import register_runtimes as action
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _role_inputs as role_inputs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLE = os.path.join(REPO, "roles", "containerd_runtime")
PREFIX = "containerd_runtime_"
# Role variables the role itself acts on (they never reach the node module as options).
ROLE_ONLY = {"config_dir", "enable_nvidia_cdi", "nvidia_cdi", "restart", "restart_timeout",
             "before_restart_tasks", "after_restart_tasks"}
# Options of the action the role sets itself or that only the modules' own users set.
ACTION_ONLY = {"max_file_bytes", "after_restart", "restarted", "restart_result", "shim_dirs", "cdi_spec_dirs",
               "dropin_dirs", "host_vars", "role_vars"}
# The role registers nvidia by default; the action, called alone, registers only what it is given.
DEFAULTS_DIFFER = {"runtimes"}


def _load(*parts):
    with open(os.path.join(ROLE, *parts)) as handle:
        return yaml.safe_load(handle)


def spec_options():
    return _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


def test_defaults_file_holds_each_declared_default_and_nothing_else():
    spec, defaults = spec_options(), _load("defaults", "main.yml")
    assert sorted(defaults) == sorted(spec), "defaults/main.yml and the argument spec name other variables"
    differ = dict((name, (defaults[name], spec[name].get("default"))) for name in spec
                  if defaults[name] != spec[name].get("default"))
    assert not differ, "defaults/main.yml disagrees with meta/argument_specs.yml: %s" % differ


def test_action_options_are_the_role_options():
    options = set(name[len(PREFIX):] for name in spec_options())
    assert options - set(action.ARGUMENT_SPEC) == ROLE_ONLY
    assert set(action.ARGUMENT_SPEC) - options == ACTION_ONLY


def test_action_defaults_equal_the_declared_defaults():
    differ = {}
    for name, option in spec_options().items():
        short = name[len(PREFIX):]
        if short in ROLE_ONLY or short in DEFAULTS_DIFFER or option.get("default") is None:
            continue  # a null role default leaves the option to the audit's gpurt_* variable or the action's default
        if action.ARGUMENT_SPEC[short].get("default") != option["default"]:
            differ[short] = (action.ARGUMENT_SPEC[short].get("default"), option["default"])
        kind = action.ARGUMENT_SPEC[short].get("type", "str")
        assert kind == option.get("type", "str"), (short, kind, option.get("type"))
    assert not differ, "the action's defaults disagree with the role's argument spec: %s" % differ


def test_choices_are_the_declared_ones():
    for name, option in spec_options().items():
        short = name[len(PREFIX):]
        if "choices" in option and short in action.ARGUMENT_SPEC:
            assert action.ARGUMENT_SPEC[short].get("choices") == option["choices"], short


def test_the_action_reads_the_same_spec():
    assert set(role_inputs.validation_spec()) == set(spec_options())


def test_docs_table_is_current():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "role_options_reference.py"), "--check"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout

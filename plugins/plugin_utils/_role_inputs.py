# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The containerd_runtime role's variables as register_runtimes' options: checked against the role's
own argument spec (roles/containerd_runtime/meta/argument_specs.yml, the one place they are declared),
then each containerd_runtime_<option> given as <option>. The action reads them itself (role_vars=true)
because ansible-core templates every task argument and every argument spec entry again for each host:
about 3 ms of controller CPU each, some 60 per host when the task listed them and the role's
automatic validation checked them. Controller only; PyYAML ships with ansible-core."""

import os
import posixpath

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _safe_yaml as safe_yaml
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._collection import COLLECTION_ROOT
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._playbook_inputs import validation_options
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._user_words import ROLE_PREFIX as PREFIX

SPEC_PATH = os.path.join(COLLECTION_ROOT, "roles", "containerd_runtime", "meta", "argument_specs.yml")
# A null variable leaves its option out: the action then takes the audit's gpurt_* host variable
# (plugin_utils/_node_options.py, gpurt_host_root among them) or the option's default. These options
# have a playbook variable the audit's gather does not take (none now).
FALLBACKS = {}
# An empty value leaves these out too (no default runtime asked, the config's own CRI address).
_OMIT_WHEN_EMPTY = ("default_runtime_name", "cri_endpoint")

_SPEC = []  # the parsed spec, once per process


class RoleInputError(ValueError):
    pass


def validation_spec(path=SPEC_PATH):
    """{variable: spec} of the role's main entry point, as ansible's ArgumentSpecValidator takes it."""
    if not _SPEC:
        import yaml  # controller only
        try:
            with open(path) as handle:
                doc = safe_yaml.safe_load(handle)
            options = doc["argument_specs"]["main"]["options"]
        except (IOError, OSError) as exc:
            raise RoleInputError("cannot read the role's argument spec %s: %s" % (path, exc.strerror or exc))
        except (yaml.YAMLError, KeyError, TypeError) as exc:
            raise RoleInputError("the role's argument spec %s has no usable main options: %s" % (path, exc))
        _SPEC.append(validation_options(options))
    return _SPEC[0]


def given_variables(task_vars, spec):
    """{variable: raw value} of the role's variables the task sees (its defaults included)."""
    return dict((name, task_vars[name]) for name in spec if name in (task_vars or {}))


def fallback_variables(task_vars):
    """{option: raw value} of the FALLBACKS variables that are set."""
    return dict((option, task_vars[name]) for option, name in FALLBACKS.items()
                if (task_vars or {}).get(name) is not None)


def hook_problems(validated):
    """Why the task files the restart handler would include around a restart cannot be included: found
    before anything is written, not by the handler after the write."""
    problems = []
    for name in (PREFIX + "before_restart_tasks", PREFIX + "after_restart_tasks"):
        path = validated.get(name)
        if not path:
            continue
        if not os.path.isabs(path):
            problems.append("%s must be an absolute path to a task file on the controller, got %r" % (name, path))
        elif not os.path.isfile(path) or not os.access(path, os.R_OK):
            problems.append("%s: %s is not a readable file on the controller" % (name, path))
    return problems


def module_args(validated, options, fallbacks=None, given=None):
    """register_runtimes' arguments from the validated role variables: containerd_runtime_<option> for
    each of OPTIONS that is not null (else its FALLBACKS value), the drop-in dir from config_dir, the
    runtimes with the nvidia-cdi entry when enable_nvidia_cdi. The runtimes are taken as GIVEN (the
    variables before validation, which fills each entry's sub-option defaults): the module judges them."""
    args = {}
    for option in options:
        value = validated.get(PREFIX + option)
        if value is None:
            value = (fallbacks or {}).get(option)
        if value is None or (option in _OMIT_WHEN_EMPTY and not value):
            continue
        args[option] = value
    if "dropin_dir" not in args and validated.get(PREFIX + "config_dir"):
        args["dropin_dir"] = posixpath.join(validated[PREFIX + "config_dir"], containerd_facts.DROPIN_DIR_NAMES[0])
    given = validated if given is None else given
    runtimes = list(given.get(PREFIX + "runtimes") or [])
    if validated.get(PREFIX + "enable_nvidia_cdi"):
        runtimes.append(given.get(PREFIX + "nvidia_cdi"))
    args["runtimes"] = runtimes
    return args

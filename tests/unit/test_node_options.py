"""One source of per-node options for the audit and the remediation (plugin_utils/_node_options.py):
the audit's gather (containerd_config_info host_vars=true) and every node step of register_runtimes
take the same options from the same host variables, so the re-audit judges a node as the audit does.
A second list of those variables anywhere in the plugins, a node step that drops one, or a role
default that reads another variable fails here."""
import ast
import os
import re

import pytest
import yaml

from ansible_collections.gpurt.runtime_gate.plugins.action import register_runtimes
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _node_options as node_options
from tests.lib import module_docs
from tests.unit.test_one_definition import PLUGINS, code_strings, python_files

HOME = os.path.join(PLUGINS, "plugin_utils", "_node_options.py")
ROLE = os.path.join(os.path.dirname(PLUGINS), "roles", "containerd_runtime")
VARIABLES = set(variable for _option, variable in node_options.NODE_OPTIONS)


def literals_naming_variables(path):
    """(line, [variables]) of every tuple, list, set or dict literal of a file's code that names two
    or more of the per-node host variables: a list of them."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            named = set()
            for inner in ast.walk(node):
                if isinstance(inner, ast.Constant) and inner.value in VARIABLES:
                    named.add(inner.value)
            if len(named) >= 2:
                yield node.lineno, sorted(named)


def test_the_per_node_variables_are_listed_once():
    places = ["%s:%d %s" % (os.path.relpath(path, PLUGINS), line, named) for path in python_files() if path != HOME
              for line, named in literals_naming_variables(path)]
    assert not places, "a second list of per-node host variables; use plugin_utils/_node_options: %s" % places


def test_the_scan_sees_a_second_list(tmp_path):
    copy = tmp_path / "second.py"
    copy.write_text('OPTIONS = ((\"shim_dirs\", \"gpurt_shim_dirs\"), (\"timeout\", \"gpurt_containerd_timeout\"))\n')
    assert [line for line, _named in literals_naming_variables(str(copy))] == [1]
    single = tmp_path / "single.py"
    single.write_text('ADVICE = "set gpurt_shim_dirs"\nX = ("gpurt_shim_dirs",)\n')
    assert list(literals_naming_variables(str(single))) == []


@pytest.mark.parametrize("variable", sorted(VARIABLES))
def test_a_per_node_variable_is_read_only_through_the_shared_list(variable):
    """No plugin reads a per-node host variable on its own (task_vars.get("gpurt_shim_dirs"))."""
    places = ["%s:%d" % (os.path.relpath(path, PLUGINS), line) for path in python_files() if path != HOME
              for line, text in code_strings(path) if text == variable]
    assert not places, "%s is read outside plugin_utils/_node_options: %s" % (variable, places)


def test_every_gather_option_of_the_list_is_a_gather_option():
    gather = set(containerd_facts.GATHER_SPEC) | {"shim_dirs"}
    assert set(node_options.OPTION_NAMES) <= gather


def test_every_node_step_of_the_remediation_takes_every_per_node_option():
    # dropin_dirs is sent on every step too, with the role's own drop-in dir added.
    assert set(node_options.OPTION_NAMES) - {"dropin_dirs"} <= set(register_runtimes._NODE_ARGS)
    for option in node_options.OPTION_NAMES:
        assert option in register_runtimes.ARGUMENT_SPEC, option


def test_the_remediation_documents_the_variables_it_reads():
    doc = module_docs.load_docs()["register_runtimes"]["doc"]["options"]["host_vars"]["description"]
    text = " ".join(doc)
    assert sorted(v for v in VARIABLES if "C(%s)" % v in text) == sorted(VARIABLES)


def test_the_role_reads_each_option_it_passes_from_the_audits_variable():
    """The role passes some per-node options itself (from its variables): each such role variable
    defaults to the host variable the audit reads; those it leaves out the action takes from the host."""
    with open(os.path.join(ROLE, "tasks", "main.yml")) as handle:
        task = [t for t in yaml.safe_load(handle) if "gpurt.runtime_gate.register_runtimes" in t][0]
    with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    args = task["gpurt.runtime_gate.register_runtimes"]
    assert "host_vars" not in args  # default true: the action fills what the role leaves out
    for option, variable in node_options.NODE_OPTIONS:
        if option not in args:
            continue
        role_variable = re.search(r"\{\{\s*(containerd_runtime_\w+)", str(args[option])).group(1)
        assert variable in str(defaults[role_variable]), (option, role_variable, defaults[role_variable])


class _Templar(object):
    def template(self, value):
        return value


def test_host_values_fill_only_what_the_task_left_out():
    task_vars = {"gpurt_shim_dirs": ["/opt/shims"], "gpurt_containerd_timeout": 7, "gpurt_cri_endpoint": None}
    taken = node_options.from_host_vars({"timeout": 3}, task_vars, _Templar())
    assert taken == {"shim_dirs": ["/opt/shims"]}

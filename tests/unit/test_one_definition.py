"""Each shared fact is defined once (module_utils/_containerd_facts.py) and imported where it is used:
a second definition of a runc-type runtime type, a default path or the gather's option spec fails here."""
import ast
import os

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts

PLUGINS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "plugins")
HOME = os.path.join(PLUGINS, "module_utils", "_containerd_facts.py")
# Strings that are documentation, not code: ansible-doc's blocks and docstrings.
_DOC_NAMES = ("DOCUMENTATION", "EXAMPLES", "RETURN")

FACTS = list(containerd_facts.RUNC_TYPES) + list(containerd_facts.CDI_SPEC_DIRS) + [
    containerd_facts.CONFIG_PATH, containerd_facts.KUBELET_CONFIG_PATH, containerd_facts.CRI_ENDPOINT, containerd_facts.BACKUP_DIR, containerd_facts.DROPIN_DIR,
] + list(containerd_facts.DROPIN_DIR_NAMES)


def python_files():
    for root, _dirs, names in os.walk(PLUGINS):
        for name in sorted(names):
            if name.endswith(".py"):
                yield os.path.join(root, name)


def code_strings(path):
    """(line, value) of every string constant of a file's code."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in _DOC_NAMES for t in node.targets):
            skip.add(id(node.value))
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body and \
                isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            skip.add(id(node.body[0].value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def assignments(path, name):
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id.lstrip("_") == name for t in node.targets)]


@pytest.mark.parametrize("value", FACTS)
def test_a_shared_fact_is_written_once(value):
    places = ["%s:%d" % (os.path.relpath(path, PLUGINS), line) for path in python_files() if path != HOME
              for line, text in code_strings(path) if text == value]
    assert not places, "%r is defined again; import it from module_utils/_containerd_facts: %s" % (value, places)


@pytest.mark.parametrize("name", ["RUNC_TYPES", "DEFAULT_RUNTIME_TYPE", "GATHER_SPEC", "JUDGE_SPEC"])
def test_a_shared_name_is_assigned_once(name):
    places = ["%s:%d" % (os.path.relpath(path, PLUGINS), line) for path in python_files()
              for line in assignments(path, name)]
    assert len(places) == 1, "%s is assigned in %s" % (name, places)


def test_the_role_and_the_audit_agree_on_runc_types():
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _remediation as remediation
    specs = remediation.normalize_runtimes([{"name": "legacy", "runtime_type": "io.containerd.runtime.v1.linux"}], True)
    assert specs[0]["table"]["options"] == {"SystemdCgroup": True}


# Facts that are rules rather than values: the RFC 1123 name patterns (module_utils/_k8s/label_syntax).
RULES = [r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"]


@pytest.mark.parametrize("rule", RULES, ids=["dns_label", "dns_subdomain"])
def test_a_name_rule_is_written_once(rule):
    places = ["%s:%d" % (os.path.relpath(path, PLUGINS), line) for path in python_files()
              for line, text in code_strings(path) if text == rule]
    assert len(places) == 1, "%r is written in %s; import it from module_utils/_k8s/label_syntax" % (rule, places)


@pytest.mark.parametrize("name", ["COLLECTION_ROOT"])
def test_a_collection_fact_is_assigned_once(name):
    places = ["%s:%d" % (os.path.relpath(path, PLUGINS), line) for path in python_files()
              for line in assignments(path, name)]
    assert len(places) == 1, "%s is assigned in %s" % (name, places)


def test_a_generator_placeholder_is_one_pattern():
    """${SNAP_DATA}, {{ .X }} and {% ... %}: one pattern (plugin_utils/_config_shapes) reads them for the
    orphan judgment and for rendering a template, so the two cannot disagree about what a placeholder is."""
    places = ["%s:%d" % (os.path.relpath(path, PLUGINS), line) for path in python_files()
              for line, text in code_strings(path) if "\\{\\{" in text and "\\$\\{" in text]
    assert len(places) == 1, "a generator placeholder pattern is written in %s" % places


@pytest.mark.parametrize("name", ["PER_FILE_MIGRATION", "GENERATOR_PLACEHOLDER"])
def test_a_config_fact_is_assigned_once(name):
    places = ["%s:%d" % (os.path.relpath(path, PLUGINS), line) for path in python_files()
              for line in assignments(path, name)]
    assert len(places) == 1, "%s is assigned in %s" % (name, places)


def test_each_auth_option_reads_the_variable_its_docs_name():
    """kubernetes.core's K8S_AUTH_* variables: module_utils/_k8s/client derives each from the option's
    kubernetes.core name (its alias, where it has one); the auth doc fragment names the same one."""
    import re

    import yaml

    from ansible_collections.gpurt.runtime_gate.plugins.doc_fragments.k8s_auth import ModuleDocFragment
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import client

    options = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    documented = dict((name, re.findall(r"E\((K8S_AUTH_[A-Z_]+)\)", " ".join(option["description"])))
                      for name, option in options.items())
    assert documented == dict((name, [variable]) for name, variable in client.AUTH_ENV.items())
    assert client.AUTH_ENV["validate_certs"] == "K8S_AUTH_VERIFY_SSL"


def _walks_a_key_path(function):
    """Whether a function has the loop of a nested-dict lookup: `for key in path: if not isinstance(node,
    dict) or key not in node: <leave>; node = node[key]`."""
    for loop in ast.walk(function):
        if not isinstance(loop, ast.For) or not isinstance(loop.target, ast.Name) or len(loop.body) != 2:
            continue
        test, step = loop.body
        if not (isinstance(test, ast.If) and isinstance(test.test, ast.BoolOp) and isinstance(step, ast.Assign)):
            continue
        tests = ast.dump(test.test)
        if "isinstance" in tests and "NotIn" in tests and isinstance(step.value, ast.Subscript) \
                and loop.target.id in ast.dump(step.value.slice):
            return True
    return False


def test_a_key_path_is_walked_in_one_place():
    """The value at a key path of nested dicts is module_utils/_nested.get_in, for the node and the controller
    (its missing= tells an absent key from a null); a second walk of that shape fails here."""
    places = []
    for path in python_files():
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        places.extend("%s:%d %s" % (os.path.relpath(path, PLUGINS), node.lineno, node.name) for node in ast.walk(tree)
                      if isinstance(node, ast.FunctionDef) and _walks_a_key_path(node))
    assert places == ["module_utils/_nested.py:8 get_in"]

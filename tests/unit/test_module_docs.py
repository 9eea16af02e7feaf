"""Each action plugin's documented options (its module doc stub, fragments included, as
ansible-doc renders them) are exactly its ARGUMENT_SPEC: names, types, elements, defaults,
choices, required, aliases. (ansible-test validate-modules checks the real modules; it cannot see
an action plugin's spec.) What the modules return against RETURN: tests/integration/test_return_docs.py."""
import os

import pytest
import yaml

from ansible_collections.gpurt.runtime_gate.plugins.action import audit_report
from ansible_collections.gpurt.runtime_gate.plugins.action import bootstrap_sandbox
from ansible_collections.gpurt.runtime_gate.plugins.action import controller_check
from ansible_collections.gpurt.runtime_gate.plugins.action import register_runtimes
from ansible_collections.gpurt.runtime_gate.plugins.action import rollout
from ansible_collections.gpurt.runtime_gate.plugins.action import runtime_check
from tests.lib import module_docs

# Action plugins that validate their own arguments (their module file is documentation only).
ACTION_SPECS = {
    "audit_report": audit_report.ARGUMENT_SPEC,
    "bootstrap_sandbox": bootstrap_sandbox.ARGUMENT_SPEC,
    "controller_check": controller_check.ARGUMENT_SPEC,
    "register_runtimes": register_runtimes.ARGUMENT_SPEC,
    "rollout": rollout.ARGUMENT_SPEC,
    "runtime_check": runtime_check.ARGUMENT_SPEC,
}


@pytest.fixture(scope="module")
def docs():
    return module_docs.load_docs()


def test_every_action_plugin_with_its_own_spec_is_listed(docs):
    actions = module_docs.action_names()
    # These actions pass every option to their real module or validate them with its spec (checked by
    # validate-modules): containerd_config_info, and the list modules (plugin_utils/_listing_action).
    assert sorted(list(ACTION_SPECS) + ["containerd_config_info", "node_info", "runtimeclass_info"]) == actions
    assert set(actions) <= set(docs)


@pytest.mark.parametrize("name", sorted(ACTION_SPECS))
def test_doc_stub_options_equal_the_argument_spec(docs, name):
    documented = module_docs.normalized_doc_options(docs[name]["doc"].get("options"))
    spec = module_docs.normalized_spec(ACTION_SPECS[name])
    assert sorted(documented) == sorted(spec), "options documented but not in the spec: %s; in the spec but " \
        "not documented: %s" % (sorted(set(documented) - set(spec)), sorted(set(spec) - set(documented)))
    differences = dict((option, {"documented": documented[option], "spec": spec[option]})
                       for option in spec if documented[option] != spec[option])
    assert differences == {}


def test_the_comparison_sees_a_wrong_default_type_and_choices():
    spec = module_docs.normalized_spec({"a": dict(type="int", default=3), "b": dict(choices=["x", "y"])})
    assert module_docs.normalized_doc_options({"a": {"type": "int", "default": 3}, "b": {"choices": ["y", "x"]}}) == spec
    assert module_docs.normalized_doc_options({"a": {"type": "int", "default": 4}, "b": {"choices": ["y", "x"]}}) != spec
    assert module_docs.normalized_doc_options({"a": {"type": "str", "default": 3}, "b": {"choices": ["y", "x"]}}) != spec
    assert module_docs.normalized_doc_options({"a": {"type": "int", "default": 3}, "b": {"choices": ["x"]}}) != spec


def test_undocumented_keys_follow_contains():
    documented = {"a": {"contains": {"b": {}}}, "c": {}}
    result = {"a": [{"b": 1, "x": 2}], "c": {"free": 1}, "d": 0, "changed": False, "msg": ""}
    assert module_docs.undocumented_keys(result, documented) == ["a[].x", "d"]


def test_the_k8s_action_group_is_what_the_modules_document(docs):
    with open(os.path.join(module_docs.MODULES_DIR, "..", "..", "meta", "runtime.yml")) as handle:
        group = yaml.safe_load(handle)["action_groups"]["k8s"]
    documented = sorted(name for name, doc in docs.items()
                        if "gpurt.runtime_gate.k8s" in ((doc["doc"].get("attributes") or {}).get("action_group") or {})
                        .get("membership", []))
    assert sorted(group) == documented == ["admission_policy", "node_fence", "node_info", "node_labels",
                                           "runtimeclass", "runtimeclass_admission_info", "runtimeclass_info"]


def test_host_vars_map_documented_options_to_audit_variables_of_their_type(docs):
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _node_options as node_options
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _playbook_inputs as playbook_inputs

    options = docs["containerd_config_info"]["doc"]["options"]
    variables = playbook_inputs.options(playbook_inputs.load(), "audit")
    as_variable = {"str": "str", "path": "str", "int": "int", "list": "list"}
    for option, variable in node_options.NODE_OPTIONS:
        assert option in options, option
        assert variable in variables, variable
        assert as_variable[options[option]["type"]] == variables[variable]["type"], (option, variable)
        # the module doc lists the pair
        assert "C(%s) from C(%s)" % (option, variable) in " ".join(options["host_vars"]["description"])

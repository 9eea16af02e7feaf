"""Hostile-input suite, class "a clear message for every bad value": fuzz every playbook variable
(playbooks/vars/argument_specs.yml) and the argument specs of the actions and modules with wrong
types, nulls, empty strings, huge values and control characters. Each value is either taken or
refused with a message naming the variable; never an exception of another kind (a traceback)."""
import math

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpurt.runtime_gate.plugins.action import audit_report, bootstrap_sandbox, rollout, runtime_check
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import listing
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _input_types as input_types
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _playbook_inputs as playbook_inputs
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import options as remediation_options
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.refusal import Refusal

FUZZ = settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

CONTROL = st.sampled_from(["\n", "\r", "\x00", "\x1b[31m", "\x7f", "\t"])
HOSTILE_STRINGS = st.one_of(
    st.just(""), st.just(" "), st.text(max_size=20),
    st.builds(lambda a, c, b: a + c + b, st.text(max_size=5), CONTROL, st.text(max_size=5)),
    st.integers(min_value=4097, max_value=70000).map(lambda n: "x" * n),
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2 ** 70, max_value=2 ** 70),
                    st.floats(allow_nan=True), HOSTILE_STRINGS)
HOSTILE = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=4)),
    max_leaves=10)

DOC = playbook_inputs.load()
ALL_OPTIONS = sorted(set((playbook, name) for playbook in playbook_inputs.playbooks(DOC)
                         for name in playbook_inputs.validation_spec(DOC, playbook)))


@FUZZ
@given(data=st.data())
def test_every_playbook_variable_takes_or_names_a_hostile_value(data):
    playbook, name = data.draw(st.sampled_from(ALL_OPTIONS))
    value = data.draw(HOSTILE)
    spec = playbook_inputs.validation_spec(DOC, playbook)
    errors = input_types.type_errors(spec, {name: value}, host="node-1")
    for message in errors:
        assert message.startswith(name), message
        assert message.endswith("(host node-1)"), message
        assert len(message) < 600, message  # a huge value is cut, not echoed
    if spec[name].get("no_log") and value not in (None, ""):
        assert not any(str(value) in m for m in errors if len(str(value)) > 3)


@pytest.mark.parametrize("name", sorted(input_types.READ_AS_SET))
@pytest.mark.parametrize("value", ["pool=gpu", ["a"], 7, True])
def test_a_variable_read_as_set_is_refused_in_the_wrong_type_naming_both_types(name, value):
    spec = playbook_inputs.validation_spec(DOC, "audit")
    if not input_types._is(value, spec[name].get("type", "str")):
        [message] = input_types.type_errors(spec, {name: value})
        expected = input_types.EXPECTED[spec[name]["type"]]
        assert message.startswith("%s must be %s, got %s" % (name, expected, input_types.type_name(value))), message


def test_a_token_of_the_wrong_type_is_not_shown():
    spec = playbook_inputs.validation_spec(DOC, "cluster_audit")
    [message] = input_types.type_errors(spec, {"gpurt_k8s_api_key": {"token": "s3cr3t-value"}})
    assert "s3cr3t" not in message and "(not shown)" in message


RUNTIME = st.fixed_dictionaries({"name": st.sampled_from(["nvidia", "kata", "runc", "", "Bad_Name"]) | HOSTILE},
                                optional={"binary_name": HOSTILE, "runtime_type": HOSTILE, "systemd_cgroup": HOSTILE,
                                          "cdi": HOSTILE, "options": HOSTILE, "extra": HOSTILE})


@FUZZ
@given(runtimes=st.lists(RUNTIME | HOSTILE, max_size=3), systemd=st.one_of(st.none(), st.booleans()))
def test_hostile_runtimes_are_refused_by_name_or_written_as_toml(runtimes, systemd):
    """Before: a null option ended in "cannot write a NoneType as TOML", naming neither the runtime nor the key."""
    try:
        normalized = remediation_options.normalize_runtimes(runtimes, systemd, kubelet_cgroup=lambda: True)
    except Refusal as exc:
        assert str(exc).startswith(("runtime ", "runc is kept")), exc
        return
    for runtime in normalized:
        toml_codec.dumps({"plugins": {"cri": {"runtimes": {runtime["name"]: runtime["table"]}}}})


@pytest.mark.parametrize("option,value,words", [
    ("options", {"BinaryName": None}, "runtime 'nvidia': options.BinaryName is null"),
    ("binary_name", 123, "runtime 'nvidia': binary_name must be a string, got an integer"),
    ("cdi", "no", "runtime 'nvidia': cdi must be a boolean (true or false), got a string"),
    ("extra", {"a": [1, None]}, "runtime 'nvidia': extra.a[1] is null"),
    ("binary_name", "/usr/bin/x\n", "runtime 'nvidia': binary_name '/usr/bin/x\\n' is empty or holds a control"),
])
def test_a_bad_runtime_value_names_the_runtime_and_the_key(option, value, words):
    with pytest.raises(Refusal) as err:
        remediation_options.normalize_runtimes([{"name": "nvidia", option: value}], True)
    assert str(err.value).startswith(words), err.value


SPECS = {
    "register_runtimes": remediation_options.ARGUMENT_SPEC,
    "containerd_config_info": containerd_facts.GATHER_SPEC,
    "audit_report": audit_report.ARGUMENT_SPEC,
    "rollout": rollout.ARGUMENT_SPEC,
    "runtime_check": runtime_check.ARGUMENT_SPEC,
    "bootstrap_sandbox": bootstrap_sandbox.ARGUMENT_SPEC,
    "runtimeclass_info": listing.RUNTIMECLASS_INFO_SPEC,
    "node_info": listing.NODE_INFO_SPEC,
}
MODULE_OPTIONS = sorted((module, option) for module, spec in SPECS.items() for option in spec)


@FUZZ
@given(data=st.data())
def test_every_module_option_validates_a_hostile_value_or_names_it(data):
    module, option = data.draw(st.sampled_from(MODULE_OPTIONS))
    spec = SPECS[module]
    value = data.draw(HOSTILE)
    try:
        result = ArgumentSpecValidator(spec).validate({option: value})
    except OverflowError:
        # ansible-core's int conversion of an infinite float; a task fails with "cannot convert Infinity to
        # integer" (docs/known-limits.md)
        assert spec[option].get("type") == "int" and isinstance(value, float) and math.isinf(value), (option, value)
        return
    for error in result.error_messages:
        named = [option] + list(spec[option].get("aliases") or [])
        assert any(n in error for n in named) or "required" in error, (module, option, error)


@FUZZ
@given(data=st.data())
def test_the_remediation_paths_and_names_take_or_refuse_a_hostile_string(data):
    option = data.draw(st.sampled_from(["config_path", "dropin_dir", "backup_dir", "dropin_prefix", "dropin_suffix",
                                        "dropin_glob"]))
    value = data.draw(HOSTILE_STRINGS)
    result = ArgumentSpecValidator(remediation_options.ARGUMENT_SPEC).validate({option: value})
    if result.error_messages:
        return
    try:
        opts = remediation_options.validated_options(result.validated_parameters)
    except Refusal as exc:
        assert option in str(exc), exc
        return
    for key in ("config_path", "dropin_dir", "backup_dir"):
        assert "\n" not in opts[key] and "\x00" not in opts[key], opts


@FUZZ
@given(obj=st.fixed_dictionaries({"metadata": st.one_of(st.just({"name": "rc"}), HOSTILE)},
                                 optional={"handler": HOSTILE, "scheduling": HOSTILE, "overhead": HOSTILE}),
       selector=st.dictionaries(st.text(max_size=5), HOSTILE, max_size=3))
def test_a_hostile_runtimeclass_is_read_or_refused_naming_it(obj, selector):
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import objects
    if isinstance(obj.get("scheduling"), dict):
        obj["scheduling"]["nodeSelector"] = selector
    try:
        rc = objects.normalize_runtimeclass(obj, "rc.yaml")
    except ValueError as exc:
        assert str(exc).startswith("RuntimeClass"), exc
        return
    assert isinstance(rc["handler"], str) and rc["handler"]
    assert all(isinstance(v, str) for v in rc["node_selector"].values())

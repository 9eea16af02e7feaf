"""The playbooks' one vocabulary: playbooks/vars/argument_specs.yml against the playbooks."""
import os
import re

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _playbook_inputs as playbook_inputs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PLAYBOOKS = os.path.join(REPO, "playbooks")
NAMES = ("audit", "cluster_audit", "crosscheck", "fence", "fleet_verdict", "prevent", "remediate", "validate_bootstrap")


@pytest.fixture(scope="module")
def doc():
    return playbook_inputs.load()


def read_playbook(name):
    """The playbook's text, and that of each vars file and task file it loads."""
    with open(os.path.join(PLAYBOOKS, name + ".yml")) as handle:
        text = handle.read()
    # a play imported by name (fence.yml: ansible-rulebook copies the playbook alone) is read in its place
    for play in re.findall(r"import_playbook: gpurt\.runtime_gate\.plays\.(\w+)$", text, re.M):
        with open(os.path.join(PLAYBOOKS, "plays", play + ".yml")) as handle:
            text = handle.read().replace("- ../vars/", "- vars/") + text
    included = re.findall(r"^\s+- (vars/\S+\.yml)$", text, re.M) + re.findall(r"include_tasks: (tasks/\S+\.yml)$", text, re.M)
    for vars_file in sorted(set(included)):
        with open(os.path.join(PLAYBOOKS, vars_file)) as handle:
            text += handle.read()
    return text


def test_every_playbook_has_a_spec_and_nothing_else_does(doc):
    assert playbook_inputs.playbooks(doc) == sorted(NAMES)
    assert sorted(f[:-4] for f in os.listdir(PLAYBOOKS) if f.endswith(".yml")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_spec_lists_every_gpurt_variable_the_playbook_reads(doc, name):
    text = read_playbook(name)
    # Read through the role's defaults, or by the modules from host variables.
    read = set(re.findall(r"(?<![&*])\b(gpurt_[a-z0-9_]+)\b", text))  # not YAML anchors
    registered = set(re.findall(r"register: (gpurt_[a-z0-9_]+)", text)) | set(
        re.findall(r"^\s+(gpurt_[a-z0-9_]+):\s*>?-?\s*$", text, re.MULTILINE)) | set(
        # what a playbook sets for the playbooks it imports (fence.yml: the re-audit's hosts)
        re.findall(r"^    (gpurt_[a-z0-9_]+): ", "".join(re.findall(r"^  vars:\n((?:    \S.*\n)+)", text, re.M)), re.M))
    wanted = read - registered - playbook_inputs.INTERNAL - {"gpurt_audit_failing", "gpurt_remediate_failing"}
    options = set(playbook_inputs.options(doc, name))
    assert wanted - options == set(), "%s.yml reads variables its spec does not list" % name


@pytest.mark.parametrize("name", NAMES)
def test_the_playbook_checks_and_validates_its_inputs_first(name):
    text = read_playbook(name)
    first = text.index("gpurt.runtime_gate.controller_check:")
    assert "playbook: %s\n" % name in text[first:first + 200]
    # controller_check validates the values itself; only crosscheck.yml has a validate_argument_spec task of its own
    # (its aliases dump_file and runtimeclasses), after it
    assert name != "crosscheck" or text.index("ansible.builtin.validate_argument_spec:") > first
    assert name == "crosscheck" or "ansible.builtin.validate_argument_spec:" not in text
    # Nothing that can fail for other reasons comes before the check.
    tasks = re.findall(r"^    - name: (.*)$", text[:first], re.MULTILINE)[:-1]
    assert tasks in ([], ["Note that the host pattern matched hosts"]), tasks


def test_each_spec_is_valid_for_the_argument_spec_validator(doc):
    for name in NAMES:
        spec = playbook_inputs.validation_spec(doc, name)
        assert spec and all("description" not in option for option in spec.values())
        result = ArgumentSpecValidator(spec).validate({})
        assert not result.error_messages, (name, result.error_messages)


def test_every_option_is_described(doc):
    for name in NAMES:
        for option, spec in playbook_inputs.options(doc, name).items():
            assert option.startswith("gpurt_"), option
            assert spec.get("description"), (name, option)


@pytest.mark.parametrize("name, closest", [
    ("gpurt_kubconfig", "gpurt_kubeconfig"),
    ("gpurt_fail_one", "gpurt_fail_on"),
    ("gpurt_report_directory", "gpurt_report_dir"),
    ("gpurt_max_fail_percent", "gpurt_max_fail_percentage"),
])
def test_an_unknown_variable_is_a_warning_naming_the_closest(doc, name, closest):
    assert playbook_inputs.unknown_warnings(doc, [name, "gpurt_kubeconfig", "ansible_host", "kubeconfig_other"]) == [
        "unknown variable %s: no gpurt.runtime_gate playbook reads it; did you mean %s?" % (name, closest)]


def test_an_unknown_variable_with_nothing_close(doc):
    assert playbook_inputs.unknown_warnings(doc, ["gpurt_zzz"]) == [
        "unknown variable gpurt_zzz: no gpurt.runtime_gate playbook reads it"]


def test_known_names_of_other_playbooks_and_internal_names_are_no_warning(doc):
    # A shared inventory sets variables of every playbook; chained playbooks leave their results.
    defined = ["gpurt_bootstrap_containerd_bins", "gpurt_manage_runtimeclasses", "gpurt_loaded", "gpurt_report",
               "dump_file", "runtimeclasses"]
    assert playbook_inputs.unknown_warnings(doc, defined) == []


def test_retired_names_fail_naming_the_new_one(doc):
    warnings, errors, _spec = playbook_inputs.check("crosscheck", ["kubeconfig", "dump_file", "fail_on"], doc)
    assert errors == ["fail_on is not read any more by crosscheck.yml: set gpurt_fail_on instead",
                      "kubeconfig is not read any more by crosscheck.yml: set gpurt_kubeconfig instead"]
    assert warnings == []
    _w, errors, _s = playbook_inputs.check("validate_bootstrap", ["bootstrap_containerd_major", "runtimeclasses"], doc)
    assert errors == [
        "bootstrap_containerd_major is not read any more by validate_bootstrap.yml: set "
        "gpurt_bootstrap_containerd_version instead",
        "runtimeclasses is not read any more by validate_bootstrap.yml: set gpurt_runtimeclasses_src instead"]
    # The audit never read those names: a variable called kubeconfig is someone else's.
    assert playbook_inputs.check("audit", ["kubeconfig"], doc)[1] == []


def test_the_spec_handed_to_validation_holds_what_the_run_sets(doc):
    _w, _e, spec = playbook_inputs.check("crosscheck", ["dump_file", "gpurt_fail_on", "ansible_host"], doc)
    assert sorted(spec) == ["gpurt_dump_file", "gpurt_fail_on"]
    assert spec["gpurt_dump_file"] == {"type": "path", "aliases": ["dump_file"]}
    result = ArgumentSpecValidator(spec).validate({"dump_file": "/d", "gpurt_fail_on": "bogus"})
    assert result.error_messages == ["value of gpurt_fail_on must be one of: error, warning, info, none, got: bogus"]


def test_secrets_are_no_log(doc):
    for name in NAMES:
        spec = playbook_inputs.validation_spec(doc, name)
        if "gpurt_k8s_api_key" in spec:
            assert spec["gpurt_k8s_api_key"]["no_log"] is True


def test_a_broken_spec_file_is_a_clear_error(tmp_path):
    path = tmp_path / "specs.yml"
    path.write_text("argument_specs: [\n")
    with pytest.raises(playbook_inputs.SpecError, match="cannot parse the playbooks' argument specs"):
        playbook_inputs.load(str(path))
    path.write_text(yaml.safe_dump({"other": 1}))
    with pytest.raises(playbook_inputs.SpecError, match="has no argument_specs mapping"):
        playbook_inputs.load(str(path))
    with pytest.raises(playbook_inputs.SpecError, match="no argument spec for playbook 'nope'"):
        playbook_inputs.options(playbook_inputs.load(), "nope")


@pytest.mark.parametrize("name", NAMES)
def test_the_spec_lists_nothing_the_playbook_does_not_read(doc, name):
    text = read_playbook(name)
    if name == "remediate":  # the role's action reads the per-node containerd variables (null role defaults)
        for path in (("roles", "containerd_runtime", "defaults", "main.yml"),
                     ("plugins", "plugin_utils", "_node_options.py"), ("plugins", "plugin_utils", "_role_inputs.py")):
            with open(os.path.join(REPO, *path)) as handle:
                text += handle.read()
    unread = [option for option in playbook_inputs.options(doc, name) if not re.search(r"\b%s\b" % option, text)]
    # The modules read these host variables themselves (audit_report, rollout), not the playbook.
    unread = [o for o in unread if o not in ("gpurt_node_name", "gpurt_node_labels", "gpurt_node_allocatable",
                                             "gpurt_kubelet_cgroup_driver") or name in ("crosscheck", "validate_bootstrap")]
    assert unread == [], "%s.yml does not read %s" % (name, unread)

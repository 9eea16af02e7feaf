"""What the controller needs, said once at play start."""
import os
import re
import sys

import pytest
import yaml

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _controller_requirements as controller_requirements
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def test_a_supported_controller_has_no_problems():
    assert controller_requirements.problems((3, 11, 7), "/usr/bin/python3", "2.19.14", "tomllib") == []
    assert controller_requirements.problems((3, 10, 13), "/venv/bin/python", "2.16.0", "tomli 1.1.0") == []
    assert controller_requirements.problems((3, 12, 0), "/p", "2.20.0rc1", "tomllib") == []


def test_python_39_with_ansible_215_is_told_what_it_needs():
    found = controller_requirements.problems((3, 9, 18, "final", 0), "/opt/py39/bin/python", "2.15.13", None)
    assert found[0] == ("gpurt.runtime_gate needs Python 3.10+ on the controller (ansible-core 2.16 needs it too); "
                        "this controller runs Python 3.9.18 (/opt/py39/bin/python) with ansible-core 2.15.13")
    assert found[1].startswith("gpurt.runtime_gate needs ansible-core 2.16+ (meta/runtime.yml)")
    assert len(found) == 2  # no advice about tomli for a Python that cannot run ansible-core 2.16 anyway


def test_python_310_without_tomli_is_told_to_install_it():
    found = controller_requirements.problems((3, 10, 13), "/usr/bin/python3.10", "2.16.19", None)
    assert found == ["gpurt.runtime_gate needs Python 3.11+ on the controller, or Python 3.10 with the tomli package "
                     "(pip install 'tomli>=1.1', listed in the collection's requirements.txt); this controller runs "
                     "Python 3.10.13 (/usr/bin/python3.10) with ansible-core 2.16.19, without tomli"]


@pytest.mark.parametrize("text, numbers", [("2.16.0", (2, 16, 0)), ("2.19.0b1", (2, 19, 0)), ("2.20.0.dev0", (2, 20, 0)),
                                           ("devel", ())])
def test_version_numbers(text, numbers):
    assert controller_requirements._numbers(text) == numbers


def test_minimum_ansible_is_what_meta_runtime_claims():
    with open(os.path.join(REPO, "meta", "runtime.yml")) as handle:
        claim = yaml.safe_load(handle)["requires_ansible"]
    assert re.fullmatch(r">=(\d+)\.(\d+)\.0", claim), claim
    assert tuple(int(n) for n in claim[2:].split(".")[:2]) == controller_requirements.MIN_ANSIBLE


def test_the_reader_this_python_has():
    """tomllib on 3.11+, the tomli that requirements.txt installs on 3.10 (make test-oldest runs this there)."""
    found = controller_requirements.facts(sys.version_info, sys.executable, "2.16.0")
    if sys.version_info >= (3, 11):
        assert found["toml_reader"] == "tomllib"
    else:
        import tomli
        assert found["toml_reader"] == "tomli %s" % tomli.__version__
    assert found["problems"] == []
    assert toml_codec.loads('a = "b"\n') == {"a": "b"}


# --- packages each playbook needs -----------------------------------------------------------------

@pytest.mark.parametrize("playbook, values, needed", [
    ("remediate", {}, ["yaml", "tomlkit", "kubernetes"]),
    ("remediate", {"gpurt_runtimeclasses_src": "/m"}, ["yaml", "tomlkit"]),
    ("remediate", {"gpurt_runtimeclasses_src": "/m", "gpurt_manage_runtimeclasses": True},
     ["yaml", "tomlkit", "kubernetes"]),
    ("audit", {"gpurt_runtimeclasses_src": "/m"}, ["yaml"]),
    ("audit", {"gpurt_runtimeclasses_src": "/m", "gpurt_list_nodes": "true"}, ["yaml", "kubernetes"]),
    ("audit", {"gpurt_runtimeclasses_src": "/m", "gpurt_list_nodes": False}, ["yaml"]),
    ("crosscheck", {"runtimeclasses": "/m"}, ["yaml"]),
    ("crosscheck", {"gpurt_runtimeclasses_src": ""}, ["yaml", "kubernetes"]),
    ("cluster_audit", {"gpurt_runtimeclasses_src": "/m"}, ["yaml", "kubernetes"]),
    ("validate_bootstrap", {}, ["yaml", "kubernetes"]),
    (None, {}, []),
])
def test_the_packages_a_run_needs_follow_its_variables(playbook, values, needed):
    assert controller_requirements.needed_packages(playbook, values) == needed


def test_missing_packages_are_named_once_with_the_install_command():
    absent = {"tomlkit", "kubernetes"}
    found = controller_requirements.missing_packages(["yaml", "tomlkit", "kubernetes"], lambda n: n not in absent,
                                                     "/venv/bin/python3")
    assert found == ["this controller's Python (/venv/bin/python3) lacks kubernetes, tomlkit, which this playbook "
                     "needs; install with: /venv/bin/python3 -m pip install kubernetes tomlkit"]
    assert controller_requirements.missing_packages(["yaml"], lambda n: False, "/p")[0].endswith("pip install PyYAML")
    assert controller_requirements.missing_packages(["yaml", "tomlkit"], lambda n: True, "/p") == []


def test_importable_is_true_for_present_and_false_for_absent_or_broken(tmp_path, monkeypatch):
    (tmp_path / "gpurt_broken_pkg.py").write_text("raise ImportError('broken install')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert controller_requirements.importable("json")
    assert not controller_requirements.importable("gpurt_no_such_package")
    assert not controller_requirements.importable("gpurt_broken_pkg")

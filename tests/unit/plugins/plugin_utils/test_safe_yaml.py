"""_safe_yaml.py: the one safe YAML loader, for text, a str subclass (as Ansible hands it over) or a file."""
import io

import pytest
import yaml

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _safe_yaml as safe_yaml


class UnsafeText(str):  # as ansible-core 2.16 hands a registered result's strings over
    pass


@pytest.mark.parametrize("stream", ["a: [1, b]\n", UnsafeText("a: [1, b]\n"), io.StringIO("a: [1, b]\n")])
def test_safe_load_of_text_a_str_subclass_and_a_file(stream):
    assert safe_yaml.safe_load(stream) == {"a": [1, "b"]}


def test_safe_load_is_safe_and_raises_yaml_errors():
    with pytest.raises(yaml.YAMLError):
        safe_yaml.safe_load("!!python/object/apply:os.system ['true']\n")
    with pytest.raises(yaml.YAMLError):
        safe_yaml.safe_load("[not: yaml")

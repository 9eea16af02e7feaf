"""_toml_codec.py: TOML read and written: real dumps round-trip to a fixed point, keys and strings quoted,
every value type, clear errors."""
import os

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from tests.lib.dumps import DUMPS


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(DUMPS) if n.endswith(".toml")))
def test_round_trip_of_real_dumps(name):
    with open(os.path.join(DUMPS, name)) as handle:
        doc = toml_codec.loads(handle.read())
    text = toml_codec.dumps(doc)
    assert toml_codec.loads(text) == doc
    # A fixed point: writing what was read back gives the same text (idempotent role runs).
    assert toml_codec.dumps(toml_codec.loads(text)) == text


def test_quoting_of_keys_and_strings():
    doc = {"plugins": {"io.containerd.cri.v1.runtime": {"containerd": {"runtimes": {"nvidia-cdi": {
        "runtime_type": "io.containerd.runc.v2", "weird": 'a "quoted"\\ \n\t\x01 value', "bare_key-1": True}}}}}}
    text = toml_codec.dumps(doc)
    assert '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia-cdi]' in text
    assert toml_codec.loads(text) == doc


def test_scalars_arrays_inline_tables_and_table_arrays():
    doc = {"version": 3, "f": 0.5, "neg": -3, "flags": [True, False], "nested": [[1, 2], ["a"]],
           "empty": {}, "inline": [{"a": 1}, {"b": "x"}], "arr": [{"name": "a"}, {"name": "b", "sub": {"k": 1}}],
           "inf": float("inf")}
    text = toml_codec.dumps(doc)
    assert toml_codec.loads(text) == doc


def test_empty_table_keeps_its_header():
    text = toml_codec.dumps({"plugins": {"x": {"options": {}}}})
    assert '[plugins.x.options]' in text


def test_errors():
    with pytest.raises(toml_codec.TomlError) as excinfo:
        toml_codec.loads("a = [", "node1 dump")
    assert "node1 dump is not valid TOML" in str(excinfo.value)
    with pytest.raises(toml_codec.TomlError):
        toml_codec.dumps(["not a table"])
    with pytest.raises(toml_codec.TomlError):
        toml_codec.dumps({"x": object()})

"""_parse_gathered.py: a dump the node sent is summarized or refused with DumpError, never another
exception; a refused config has no load warnings."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from tests.lib.containerd_stderr import ignored
from tests.lib.dumps import dump_text

V2 = shapes.CRI_PLUGIN_V2


@pytest.mark.parametrize("text, message", [
    ("", "is empty"),
    ("   \n", "is empty"),
    ("garbage [[[", "not valid TOML"),
    ("version = 2\n[plugins\n", "not valid TOML"),
    ('version = "two"\n', "'version' must be an integer"),
    ("version = 2\nplugins = 3\n", "'plugins' must be a table"),
    ('version = 2\nimports = "x"\n', "'imports' must be a list"),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\nruntimes = 1\n', "must be a table"),
    (b"version = 2\nroot = '\xff\xfe'\n", "not UTF-8"),
])
def test_bad_dumps_raise_dump_error(text, message):
    with pytest.raises(parse_gathered.DumpError) as excinfo:
        parse_gathered.summarize_dump(text)
    assert message in str(excinfo.value)


def test_truncated_dump_is_an_error():
    text = dump_text("containerd-2.1-v3-nvidia.toml")
    cut = text.index("runtimes.nvidia]") + 5
    with pytest.raises(parse_gathered.DumpError):
        parse_gathered.summarize_dump(text[:cut])


def test_a_refused_config_has_no_load_warnings():
    result = parse_gathered.parse_gathered(
        {"dump": None, "refused": {"cause": "x"}, "files": [], "dump_warnings": [ignored("x", V2)]}
    )
    assert result["load_warnings"] == []


def _gathered_result():
    """A gather result as the action plugin returns it after a failed_when: false (the audit's gather)."""
    main = dump_text("containerd-2.1-v3-nvidia.toml")
    result = {"changed": False, "failed": False, "failed_when_result": False, "warnings": ["w"],
              "dump": main, "refused": None, "dump_warnings": [ignored("x", V2)],
              "files": [{"path": "/etc/containerd/config.toml", "role": "main", "content": main, "error": None}],
              "_ansible_no_log": False}
    return parse_gathered.drop_texts(parse_gathered.parse_gathered(result))


def test_packed_keeps_ansibles_keys_beside_one_text_and_unpacks_to_the_same_result():
    result = _gathered_result()
    packed = parse_gathered.pack(dict(result))
    assert sorted(packed) == ["_ansible_no_log", "changed", "failed", "failed_when_result", "packed", "warnings"]
    assert isinstance(packed["packed"], str)
    assert parse_gathered.unpack(packed) == result
    assert "nvidia" in parse_gathered.unpack(packed)["loaded"]["runtime_names"]


def test_what_has_nothing_packed_is_returned_as_it_is():
    for value in (None, "text", {"unreachable": True, "msg": "m"}, {"skipped": True}):
        assert parse_gathered.unpack(value) is value


@pytest.mark.parametrize("text, message", [("{", "not JSON"), ("[1]", "not an object"), (None, "not JSON")])
def test_packed_facts_that_are_no_gather_raise_value_error(text, message):
    with pytest.raises(ValueError, match=message):
        parse_gathered.unpack({"packed": text})


def test_a_registered_copy_shares_the_packed_text_and_copies_a_tree():
    """Why the audit packs: ansible-core registers module_response_deepcopy() of the result it holds until the
    task ends on every host; a copy of the packed result costs a few dicts, of the tree all its containers."""
    import sys
    from ansible.vars.clean import module_response_deepcopy

    def containers(value, seen):
        if id(value) in seen or not isinstance(value, (dict, list)):
            return 0
        seen.add(id(value))
        items = value.values() if isinstance(value, dict) else value
        return sys.getsizeof(value) + sum(containers(item, seen) for item in items)

    tree = _gathered_result()
    packed = parse_gathered.pack(dict(tree))
    assert module_response_deepcopy(packed)["packed"] is packed["packed"]
    tree_copy = containers(module_response_deepcopy(tree), set())
    packed_copy = containers(module_response_deepcopy(packed), set())
    assert tree_copy > 10 * packed_copy


def test_a_value_json_has_no_type_for_is_packed_as_its_text():
    import datetime
    packed = parse_gathered.pack({"changed": False, "loaded": {"stamp": datetime.date(1979, 5, 27)}})
    assert parse_gathered.unpack(packed)["loaded"] == {"stamp": "1979-05-27"}

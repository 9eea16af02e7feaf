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

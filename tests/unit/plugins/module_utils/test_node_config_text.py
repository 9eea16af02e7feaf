"""module_utils/_node_config_text: what the node reads from a config text without a TOML parser, and the
imports array it cuts."""
import os

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_config_text as cc
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from tests.lib.dumps import DUMPS, dump_text


class TestHostSideTextReaders(object):
    def test_imports_single_line(self):
        assert cc.top_level_imports('version = 2\nimports = ["/a/*.toml", \'/b/x.toml\']\n') == ["/a/*.toml", "/b/x.toml"]

    def test_imports_multi_line_with_trailing_comma(self):
        text = 'imports = [\n  "/etc/containerd/conf.d/*.toml",\n  "/opt/x.toml",\n]\nversion = 3\n'
        assert cc.top_level_imports(text) == ["/etc/containerd/conf.d/*.toml", "/opt/x.toml"]

    def test_imports_inside_a_table_do_not_count(self):
        text = 'version = 2\n[plugins.x]\nimports = ["/nope/*.toml"]\n'
        assert cc.top_level_imports(text) == []

    def test_imports_absent_or_empty(self):
        assert cc.top_level_imports("version = 2\n") == []
        assert cc.top_level_imports("imports = []\n") == []

    def test_escaped_quotes(self):
        assert cc.top_level_imports(r'imports = ["/a \"b\"/*.toml"]') == ['/a "b"/*.toml']

    def test_version(self):
        assert cc.top_level_version("version = 3\n[x]\nversion = 2\n") == 3
        assert cc.top_level_version("[x]\nversion = 2\n") is None

    def test_binary_names_from_a_real_dump(self):
        assert cc.binary_names(dump_text("containerd-2.1-v3-nvidia.toml")) == [
            "/usr/bin/nvidia-container-runtime", "/usr/bin/nvidia-container-runtime.cdi"]

    def test_string_array_anywhere(self):
        assert cc.string_array(dump_text("containerd-2.1-v3-nvidia.toml"), "cdi_spec_dirs") == ["/etc/cdi", "/var/run/cdi"]
        assert cc.string_array("x = 1\n", "cdi_spec_dirs") is None

    def test_host_readers_agree_with_tomllib_on_real_dumps(self):
        for name in os.listdir(DUMPS):
            if not name.endswith(".toml"):
                continue
            text = dump_text(name)
            doc = toml_codec.loads(text)
            assert cc.top_level_imports(text) == doc.get("imports", []), name
            assert cc.top_level_version(text) == doc.get("version"), name


@pytest.mark.parametrize("text, expected", [
    ('version = 2\nimports = ["/a/*.toml"]\nroot = "/r"\n', 'version = 2\nroot = "/r"\n'),
    ("version = 4\nimports = ['/a/*.toml', '/b']\n[x]\n", "version = 4\n[x]\n"),
    ('imports = [\n  "/a/*.toml", # first\n  # a comment with ] in it\n  "/b",\n]  # trailing\nversion = 2\n', "version = 2\n"),
    ('version = 2\n[plugins.x]\nimports = ["kept"]\n', 'version = 2\n[plugins.x]\nimports = ["kept"]\n'),
    ("version = 2\n", "version = 2\n"),
])
def test_without_top_level_array_cuts_only_the_top_level_assignment(text, expected):
    assert cc.without_top_level_array(text, "imports") == expected


@pytest.mark.parametrize("text", ['imports = ["/a"\nversion = 2\n', 'imports = ["/a"] ; version = 2\n'])
def test_without_top_level_array_refuses_shapes_it_cannot_cut(text):
    assert cc.without_top_level_array(text, "imports") is None

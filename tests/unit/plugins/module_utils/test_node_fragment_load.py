"""The scratch config a fragment nothing imports is loaded with (issue 37): the node's own config, its imports
(resolved) and then the fragment. The loads themselves run the real containerd in
tests/integration/test_orphan_loader_evidence.py."""
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_fragment_load as fragment_load
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_fragment_scan as fragment_scan


def test_the_fragment_is_imported_last_after_the_node_s_own_imports():
    text = 'version = 2\nimports = [\n  "conf.d/*.toml", # relative\n]\nroot = "/var/lib/containerd"\n'
    out = fragment_load.scratch_main(text, ["/etc/containerd/conf.d/*.toml"], "/tmp/x/fragment.toml")
    assert out == ('imports = ["/etc/containerd/conf.d/*.toml", "/tmp/x/fragment.toml"]\n'
                   'version = 2\nroot = "/var/lib/containerd"\n')


def test_a_config_without_imports_gets_only_the_fragment():
    out = fragment_load.scratch_main("version = 3\n", [], "/tmp/x/fragment.toml")
    assert out == 'imports = ["/tmp/x/fragment.toml"]\nversion = 3\n'


def test_imports_it_cannot_cut_out_or_a_bom_give_none():
    assert fragment_load.scratch_main('imports = ["a",\nversion = 3\n', [], "/f") is None
    assert fragment_load.scratch_main('\ufeffversion = 3\n', [], "/f") is None


def test_the_cap_lists_what_it_left_out(monkeypatch):
    monkeypatch.setattr(fragment_load, "load_one", lambda *args: {"rc": 0, "dump": "", "cause": None, "warnings": []})
    monkeypatch.setattr(fragment_scan, "MAX_LOADS", 2)
    files = [{"path": "/c.toml", "role": "main", "content": ""}]
    files += [{"path": "/u%d.toml" % i, "role": "unreferenced", "content": "version = 3\n"} for i in range(4)]
    files.append({"path": "/unread.toml", "role": "unreferenced", "content": None})
    summary = fragment_scan.load_unreferenced("containerd", "/c.toml", "", [], files, {})
    assert summary == {"loaded": 2, "cap": 2, "left_out": ["/u2.toml", "/u3.toml"]}
    assert ["load" in f for f in files] == [False, True, True, False, False, False]

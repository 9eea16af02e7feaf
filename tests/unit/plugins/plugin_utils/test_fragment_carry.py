"""The pure side of orphan evidence (issue 37): what containerd's load of a fragment changes in the
loaded config, the verdict the check reads, and the evidence rules when containerd cannot load it.
The node's loads themselves are in tests/integration/test_orphan_loader_evidence.py."""
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _fragment_carry as fragment_carry
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from tests.lib.check_inputs import ctx, ids, loaded, run

V2, V3 = "io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"
LOADED = {"version": 3, "imports": ["/etc/cri/conf.d/cri.toml"], "plugins": {V3: {"containerd": {"runtimes": {
    "runc": {"runtime_type": "io.containerd.runc.v2"},
    "nvidia": {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": "/usr/bin/nv"}}}}},
    "io.containerd.cri.v1.images": {"snapshotter": "overlayfs"}}}


def parse(text):
    return toml_codec.loads(text, "dump")


def with_fragment(**changes):
    doc = parse(toml_codec.dumps(LOADED))
    doc["imports"] = ["/etc/cri/conf.d/cri.toml", "<scratch>/fragment.toml"]
    for dotted, value in changes.items():
        node = doc
        keys = dotted.split("/")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return doc


class TestLoadChanges(object):
    def test_the_same_load_changes_nothing_whatever_its_imports_say(self):
        assert fragment_carry.load_changes(with_fragment(), LOADED) == ([], [])

    def test_a_changed_value_a_new_key_and_a_lost_key_are_changes(self):
        doc = with_fragment(**{"plugins/%s/containerd/runtimes/nvidia/runtime_type" % V3: "io.containerd.kata.v2",
                               "plugins/%s/containerd/runtimes/x/runtime_type" % V3: "io.containerd.runc.v2"})
        del doc["plugins"]["io.containerd.cri.v1.images"]
        changed, substituted = fragment_carry.load_changes(doc, LOADED)
        assert changed == ['plugins."io.containerd.cri.v1.images".snapshotter',
                           'plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.runtime_type',
                           'plugins."io.containerd.cri.v1.runtime".containerd.runtimes.x.runtime_type']
        assert substituted == []

    def test_a_placeholder_the_loaded_value_fills_is_substituted(self):
        doc = with_fragment(**{"plugins/io.containerd.cri.v1.images/snapshotter": "${SNAPSHOTTER}",
                               "plugins/%s/containerd/runtimes/nvidia/options/BinaryName" % V3: "{{ .Bin }}"})
        changed, substituted = fragment_carry.load_changes(doc, LOADED)
        assert changed == [] and len(substituted) == 2
        # a placeholder whose fixed part differs is a change
        doc = with_fragment(**{"plugins/%s/containerd/runtimes/nvidia/options/BinaryName" % V3: "/opt/${X}/nv"})
        assert fragment_carry.load_changes(doc, LOADED)[0] == [
            'plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options.BinaryName']

    def test_placeholders_in_a_list_match_element_by_element(self):
        loaded_doc = {"plugins": {V3: {"cni": {"bin_dirs": ["/var/snap/microk8s/8147/opt/cni/bin"]}}}}
        doc = {"plugins": {V3: {"cni": {"bin_dirs": ["${SNAP_DATA}/opt/cni/bin"]}}}}
        bin_dirs = 'plugins."io.containerd.cri.v1.runtime".cni.bin_dirs'
        assert fragment_carry.load_changes(doc, loaded_doc) == ([], [bin_dirs])
        doc = {"plugins": {V3: {"cni": {"bin_dirs": ["${SNAP_DATA}/opt/cni/bin", "/x"]}}}}
        assert fragment_carry.load_changes(doc, loaded_doc)[0] == [bin_dirs]


class TestLoadVerdict(object):
    def test_states(self):
        assert fragment_carry.load_verdict(None, LOADED, parse)["state"] == "not_loaded"
        failed = fragment_carry.load_verdict({"error": "timed out"}, LOADED, parse)
        assert failed == {"state": "error", "why": "timed out"}
        refused = fragment_carry.load_verdict({"rc": 1, "cause": "drop-in config version 4 higher"}, LOADED, parse)
        assert refused["state"] == "refused" and "exit 1" in refused["why"] and "version 4" in refused["why"]
        bad = fragment_carry.load_verdict({"rc": 0, "dump": "= nope"}, LOADED, parse)
        assert bad["state"] == "error" and "its dump cannot be read" in bad["why"]
        same = fragment_carry.load_verdict({"rc": 0, "dump": toml_codec.dumps(LOADED)}, LOADED, parse)
        assert same == {"state": "loaded", "changed": [], "changed_count": 0, "substituted": [], "why": None}

    def test_at_most_ten_changes_are_listed_and_all_counted(self):
        doc = with_fragment(**dict(("plugins/p%02d/k" % i, i) for i in range(12)))
        verdict = fragment_carry.load_verdict({"rc": 0, "dump": toml_codec.dumps(doc)}, LOADED, parse)
        assert verdict["changed_count"] == 12 and len(verdict["changed"]) == 10


def unreferenced(path, text, load, loaded_doc=None):
    loaded_doc = LOADED if loaded_doc is None else loaded_doc
    entry = {"path": path, "role": "unreferenced", "content": text, "error": None, "load": load}
    entry["parsed"] = parse_gathered.summarize_file(entry, loaded_doc)
    return entry


PART_V2 = ('version = 2\n[plugins."%s".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
           '  runtime_engine = ""\n  runtime_root = ""\n' % V2)


def gathered(*files, **extra):
    out = {"loaded": loaded(), "imports": [], "config_path": "/etc/cri/containerd.toml",
           "files": [{"path": "/etc/cri/containerd.toml", "role": "main", "parsed": {"version": 3}}] + list(files)}
    out.update(extra)
    return out


class TestJudgment(object):
    def test_keys_a_migration_drops_are_no_orphan_when_the_load_changes_nothing(self):
        part = unreferenced("/etc/cri/conf.d/10-nvidia.part", PART_V2, {"rc": 0, "dump": toml_codec.dumps(LOADED)})
        assert part["parsed"]["not_carried_count"] == 2  # runtime_engine, runtime_root: never in a 2.x dump
        out = run("orphan_dropin", ctx(gathered(part)))
        assert ids(out) == [("orphan_dropin", "info", "/etc/cri/conf.d/10-nvidia.part")]
        assert "changes nothing this node loads" in out[0]["message"] and "runtime_engine" in out[0]["message"]
        assert out[0]["evidence"]["load"] == "loaded" and out[0]["evidence"]["would_change"] == []

    def test_a_load_that_changes_the_config_is_an_orphan_naming_the_change(self):
        doc = with_fragment(**{"plugins/%s/containerd/runtimes/nvidia-x/runtime_type" % V3: "io.containerd.runc.v2"})
        part = unreferenced("/etc/containerd/conf.d/99-nvidia.conf", PART_V2.replace("nvidia]", "nvidia-x]"),
                            {"rc": 0, "dump": toml_codec.dumps(doc)})
        out = run("orphan_dropin", ctx(gathered(part)))
        assert ids(out) == [("orphan_dropin", "error", "/etc/containerd/conf.d/99-nvidia.conf")]
        assert "importing it would change 1 key(s)" in out[0]["message"] and "nvidia-x" in out[0]["message"]
        assert out[0]["evidence"]["would_change_count"] == 1

    def test_no_load_falls_back_to_the_settings_and_says_so(self):
        part = unreferenced("/etc/cri/conf.d/10-nvidia.part", PART_V2, None)
        out = run("orphan_dropin", ctx(gathered(part)))
        assert ids(out) == [("orphan_dropin", "error", "/etc/cri/conf.d/10-nvidia.part")]
        assert "judged without containerd's load: not loaded by containerd" in out[0]["message"]

    def test_a_loaded_file_naming_it_as_its_input_decides_where_containerd_cannot_load_it(self):
        main = {"path": "/k3s/config.toml", "role": "main", "error": None,
                "content": "# File generated by k3s. DO NOT EDIT. Use config-v3.toml.tmpl instead.\nversion = 3\n"}
        tmpl = {"path": "/k3s/config-v3.toml.tmpl", "role": "unreferenced", "error": None, "content": PART_V2,
                "load": {"rc": 1, "cause": "level=error msg=\"failed to load\""}}
        other = dict(tmpl, path="/k3s/other.toml")
        result = {"dump": toml_codec.dumps(LOADED), "files": [main, tmpl, other]}
        parse_gathered.parse_gathered(result)
        assert main["parsed"]["generated"].startswith("# File generated by k3s")
        assert tmpl["parsed"]["named_by"].startswith("/k3s/config.toml: '# File generated by k3s")
        assert "named_by" not in other["parsed"]
        out = dict((f["subject"], f) for f in run("orphan_dropin", ctx(result)))
        assert out["/k3s/config-v3.toml.tmpl"]["severity"] == "info"
        assert "it is a generator's input: /k3s/config.toml" in out["/k3s/config-v3.toml.tmpl"]["message"]
        assert "containerd refuses the config with it imported" in out["/k3s/config-v3.toml.tmpl"]["message"]
        assert out["/k3s/other.toml"]["severity"] == "error"
        parse_gathered.drop_texts(result)
        assert "load" not in tmpl and tmpl["parsed"]["load"]["state"] == "refused"

    def test_a_fragment_the_settings_test_finds_carried_is_not_loaded_for_nothing(self):
        part = unreferenced("/etc/cri/conf.d/00.part", 'version = 3\n[plugins."%s".containerd.runtimes.runc]\n'
                            '  runtime_type = "io.containerd.runc.v2"\n' % V3, {"rc": 0, "dump": "garbage ="})
        assert part["parsed"]["not_carried_count"] == 0 and "load" not in part["parsed"]
        assert run("orphan_dropin", ctx(gathered(part))) == []


class TestGeneratedSlot(object):
    def entry(self, generated):
        main = {"path": "/k3s/config.toml", "role": "main", "parsed": {"version": 3}}
        if generated:
            main["parsed"]["generated"] = "# File generated by k3s. DO NOT EDIT."
        return {"loaded": loaded(), "config_path": "/k3s/config.toml", "files": [main], "imports": [
            {"pattern": "/k3s/config-v3.toml.d/*.toml", "resolved": "/k3s/config-v3.toml.d/*.toml", "matches": [],
             "declared_in": "/k3s/config.toml", "dir": "/k3s/config-v3.toml.d", "dir_exists": False}]}

    def test_a_generated_config_s_slot_is_info_until_used(self):
        out = run("dead_imports_glob", ctx(self.entry(True)))
        assert ids(out) == [("dead_imports_glob", "info", "/k3s/config-v3.toml.d/*.toml")]
        assert "is generated (# File generated by k3s. DO NOT EDIT.)" in out[0]["message"]

    def test_a_hand_written_config_s_missing_dir_stays_a_warning(self):
        out = run("dead_imports_glob", ctx(self.entry(False)))
        assert ids(out) == [("dead_imports_glob", "warning", "/k3s/config-v3.toml.d/*.toml")]

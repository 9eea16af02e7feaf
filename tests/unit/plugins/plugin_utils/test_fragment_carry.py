"""_fragment_carry.py, the pure side of orphan evidence (issue 37): what containerd's load of a fragment
changes in the loaded config, and the verdict the check reads. The check's evidence rules (orphan_dropin) are
in test_checks_files.py; the node's loads themselves in tests/integration/test_orphan_loader_evidence.py."""
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _fragment_carry as fragment_carry
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from tests.lib.fragment_loads import LOADED, V3, parse, with_fragment


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

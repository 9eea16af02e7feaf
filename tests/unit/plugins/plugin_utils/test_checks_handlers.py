"""_checks/handlers.py: a RuntimeClass handler that can land on the node against its loaded runtimes
(missing_handler), its suggestions and typo hints."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from tests.lib.check_inputs import ids, missing, rc


# --- missing_handler ------------------------------------------------------------------------

class TestMissingHandler(object):
    def test_handler_present_is_not_reported(self):
        assert missing(["runc", "nvidia"], [rc("nvidia")]) == []

    def test_missing_handler_without_selector(self):
        out = missing(["runc"], [rc("kata")])
        assert ids(out) == [("missing_handler", "error", "kata")]
        item = out[0]
        assert item["node"] == "n1"
        assert item["evidence"]["runtimeclass"] == "kata"
        assert item["evidence"]["loaded_runtimes"] == ["runc"]
        assert item["evidence"]["scheduling"] == "no nodeSelector"
        assert item["evidence"]["suggestion"] is None
        assert "did you mean" not in item["message"]
        assert "register runtime 'kata'" in item["fix"]

    def test_selector_matching(self):
        out = missing(["runc"], [rc("nvidia", selector={"gpu": "true"})], {"gpu": "true", "zone": "a"})
        assert ids(out) == [("missing_handler", "error", "nvidia")]
        assert out[0]["evidence"]["scheduling"] == "nodeSelector matches"

    def test_selector_not_matching(self):
        assert missing(["runc"], [rc("nvidia", selector={"gpu": "true"})], {"gpu": "false"}) == []
        # a label the node lacks does not match either
        assert missing(["runc"], [rc("nvidia", selector={"gpu": "true"})], {}) == []

    def test_selector_needs_every_key(self):
        selector = {"gpu": "true", "vendor": "nvidia"}
        assert missing(["runc"], [rc("nvidia", selector=selector)], {"gpu": "true"}) == []

    def test_unknown_labels_mean_it_applies(self):
        out = missing(["runc"], [rc("nvidia", selector={"gpu": "true"})], None)
        assert ids(out) == [("missing_handler", "error", "nvidia")]
        assert "labels unknown" in out[0]["evidence"]["scheduling"]

    def test_did_you_mean(self):
        out = missing(["runc", "nvidia"], [rc("gpu", handler="nvidai")])
        assert out[0]["subject"] == "nvidai"
        assert out[0]["evidence"]["suggestion"] == "nvidia"
        assert "did you mean 'nvidia'?" in out[0]["message"]
        assert "fix the RuntimeClass handler to 'nvidia'" in out[0]["fix"]

    def test_no_suggestion_for_unrelated_name(self):
        out = missing(["runc", "nvidia"], [rc("wasm", handler="spin")])
        assert out[0]["evidence"]["suggestion"] is None

    def test_default_entry_is_never_suggested(self):
        # cluster mode: status.runtimeHandlers has "" for the default runtime
        out = missing(["", "runc"], [rc("x", handler="r")])
        assert out[0]["evidence"]["suggestion"] is None

    @pytest.mark.parametrize("handler, loaded_names, rcs", [
        # NVIDIA's real nvidia-cdi handler on a node lacking it: nvidia is a RuntimeClass's own handler
        ("nvidia-cdi", ["runc", "nvidia"], [rc("nvidia")]),
        # the name of a real runtime is missing, not misspelt
        ("crun", ["runc", "nvidia"], []),
        ("runsc", ["runc"], []),
        ("nvidia-cdi", ["runc", "nvidia"], []),
        ("kata-qemu", ["runc", "kata-clh"], []),
        # not close: more than two edits
        ("nvidia-typo", ["runc", "nvidia"], []),
    ])
    def test_no_false_suggestion(self, handler, loaded_names, rcs):
        out = missing(loaded_names, rcs + [rc("x", handler=handler)])
        item = [f for f in out if f["subject"] == handler][0]
        assert item["evidence"]["suggestion"] is None
        assert "did you mean" not in item["message"]

    def test_a_runtimeclass_that_cannot_land_here_does_not_block_the_suggestion(self):
        rcs = [rc("nvidia", selector={"pool": "gpu"}), rc("legacy", handler="nvidai", selector={"pool": "legacy"})]
        out = missing(["runc", "nvidia"], rcs, {"pool": "legacy"})
        assert out[0]["evidence"]["suggestion"] == "nvidia"
        # where both can land, nvidia is a handler in its own right: no suggestion
        out = missing(["runc"], rcs, None)
        assert [f["evidence"]["suggestion"] for f in out] == [None, None]

    def test_transposition_is_one_edit(self):
        assert checks.suggestion("nvdiia", {"nvidia", "runc"}) == "nvidia"
        assert checks.suggestion("nvidia-legcy", {"nvidia-legacy", "runc"}) == "nvidia-legacy"

    def test_missing_lines_sorted_and_unique(self):
        rcs = [rc("b", handler="zeta"), rc("a", handler="alpha"), rc("c", handler="zeta")]
        out = missing(["runc"], rcs)
        assert len(out) == 3
        other = checks.finding("n1", "cdi_disabled", "error", "nvidia-cdi", "m", "f")
        assert checks.missing_lines(out + [other]) == ["MISSING=alpha", "MISSING=zeta"]
        assert checks.missing_lines([]) == []


def test_missing_handler_lists_the_loaded_runtimes_and_a_typo_in_either_direction():
    # the class misspells: the loaded name is suggested
    out = missing(["runc", "nvidia"], [rc("gpu", "nvida")])
    assert "did you mean 'nvidia'?" in out[0]["message"] and "loaded runtimes: nvidia, runc" in out[0]["message"]
    # the node misspells: the class asks for the real name, the node loads a close name that is no runtime's
    out = missing(["runc", "nvida"], [rc("gpu", "nvidia")])
    assert "loaded runtimes: nvida, runc" in out[0]["message"]
    assert "the node loads 'nvida', likely a misspelt 'nvidia'" in out[0]["message"]
    assert out[0]["fix"].startswith("rename runtime 'nvida' to 'nvidia'")
    assert out[0]["evidence"]["misspelt_runtime"] == "nvida"
    # two real runtimes: no hint either way
    out = missing(["runc", "nvidia"], [rc("cdi", "nvidia-cdi")])
    assert "likely" not in out[0]["message"] and "did you mean" not in out[0]["message"]

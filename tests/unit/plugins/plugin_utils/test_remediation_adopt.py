"""No needless change (_remediation/adopt): effective options judged against the defaults of each real
containerd release's own `config default` (no hand list), and what the precedence notes say."""
import subprocess

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import adopt
from tests.lib import containerd_bins

V2 = "io.containerd.grpc.v1.cri"
V3 = "io.containerd.cri.v1.runtime"


def default_doc(version):
    try:
        binary = containerd_bins.binary(version)
    except containerd_bins.NotBuilt as exc:
        pytest.skip(str(exc))
    out = subprocess.run([binary, "config", "default"], check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=60).stdout
    return toml_codec.loads(out, "config default")


def plugin(version):
    return V2 if version.startswith("1.") else V3


def loaded(version, runtimes):
    return {"plugins": {plugin(version): {"containerd": {"runtimes": runtimes}}}}


def spec(name, table):
    return {"name": name, "table": table, "cdi": False}


NVIDIA = {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": "/usr/bin/nvidia-container-runtime"}}


@pytest.mark.parametrize("version", containerd_bins.ALL_VERSIONS)
def test_an_unset_runc_option_is_containerds_default_on_every_release(version):
    defaults = default_doc(version)
    doc = loaded(version, {"nvidia": NVIDIA})
    wanted = {"runtime_type": "io.containerd.runc.v2",
              "options": dict(NVIDIA["options"], SystemdCgroup=False)}
    assert adopt.effective_mismatches(doc, defaults, plugin(version), spec("nvidia", wanted)) == []
    note = adopt.adopted_note(spec("nvidia", wanted), doc, defaults, plugin(version))
    assert "options.SystemdCgroup unset, which is containerd's default false" in note
    # true is a real difference: the shim would use cgroupfs
    wanted["options"]["SystemdCgroup"] = True
    [(path, have, want)] = adopt.effective_mismatches(doc, defaults, plugin(version), spec("nvidia", wanted))
    assert path[-1] == "SystemdCgroup" and want is True


@pytest.mark.parametrize("version", ["1.7", "2.1"])
def test_only_the_defaults_the_release_has_count(version):
    """NoPivotRoot is a runc option of 1.x's config default only: unset on 2.x it is no known default."""
    defaults = default_doc(version)
    doc = loaded(version, {"nvidia": NVIDIA})
    wanted = {"runtime_type": "io.containerd.runc.v2", "options": dict(NVIDIA["options"], NoPivotRoot=False)}
    got = adopt.effective_mismatches(doc, defaults, plugin(version), spec("nvidia", wanted))
    assert (got == []) is version.startswith("1.")


def test_another_shims_options_have_no_default_containerd_knows():
    defaults = default_doc("2.1")
    kata = {"runtime_type": "io.containerd.kata-qemu.v2", "options": {"ConfigPath": "/opt/kata/configuration.toml"}}
    doc = loaded("2.1", {"kata-qemu": kata})
    wanted = {"runtime_type": "io.containerd.kata-qemu.v2", "options": dict(kata["options"], SystemdCgroup=False)}
    assert len(adopt.effective_mismatches(doc, defaults, V3, spec("kata-qemu", wanted))) == 1


def test_a_default_of_another_type_is_a_difference():
    """0 is not false: a bool option asked as a number is not taken for its default."""
    defaults = default_doc("2.1")
    doc = loaded("2.1", {"nvidia": NVIDIA})
    wanted = {"runtime_type": "io.containerd.runc.v2", "options": dict(NVIDIA["options"], SystemdCgroup=0)}
    assert len(adopt.effective_mismatches(doc, defaults, V3, spec("nvidia", wanted))) == 1


@pytest.mark.parametrize("version, always_on", [("1.7", False), ("2.1", False), ("2.3", False), ("2.4", True)])
def test_cdi_is_always_on_where_the_release_has_no_enable_cdi(version, always_on):
    assert adopt.cdi_always_on(default_doc(version), plugin(version)) is always_on


def _texts(plugin_name, **files):
    return dict((path, toml_codec.dumps({"version": 3, "plugins": {plugin_name: {"containerd": {"runtimes": rt}}}}))
                for path, rt in files.items())


def test_on_2x_the_later_drop_in_takes_precedence_per_key_over_another_tools():
    main, theirs, mine = "/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml", \
        "/etc/containerd/conf.d/zz-gpurt-nvidia.toml"
    texts = _texts(V3, **{theirs: {"nvidia": {"options": {"BinaryName": "/a"}}},
                          mine: {"nvidia": {"options": {"BinaryName": "/b"}}}})
    texts[main] = 'version = 3\n'
    [note] = adopt.precedence_notes(2, [main, theirs, mine], [mine], texts, main)
    assert note.startswith("precedence: containerd 2.x merges the drop-ins in lexical order")
    assert "%s sorts after %s" % (mine, theirs) in note and "containerd.runtimes.nvidia.options.BinaryName" in note


def test_on_1x_the_role_takes_the_whole_cri_section():
    main, theirs, mine = "/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml", \
        "/etc/containerd/conf.d/zz-gpurt_cri.toml"
    texts = _texts(V2, **{main: {"runc": {}}, theirs: {"nvidia": {}}, mine: {"nvidia": {}, "runc": {}}})
    [note] = adopt.precedence_notes(1, [main, theirs, mine], [mine], texts, main)
    assert "whole CRI section" in note and theirs in note and "run the role again" in note


def test_a_file_merged_after_the_roles_wins_and_is_said_so():
    mine, theirs = "/etc/containerd/conf.d/zz-gpurt-nvidia.toml", "/opt/kata/containerd/config.d/kata-deploy.toml"
    texts = _texts(V3, **{mine: {"nvidia": {}}, theirs: {"kata-qemu": {}}})
    [note] = adopt.precedence_notes(2, [mine, theirs], [mine], texts, "/etc/containerd/config.toml")
    assert note == "precedence: containerd merges %s after the role's %s, so %s wins per key" % (theirs, mine, theirs)


def test_no_note_without_another_file_or_with_a_main_config_that_sets_none_of_the_roles_keys():
    main, mine = "/etc/containerd/config.toml", "/etc/containerd/conf.d/zz-gpurt-nvidia.toml"
    texts = _texts(V3, **{main: {"runc": {}}, mine: {"nvidia": {}}})
    assert adopt.precedence_notes(2, [main, mine], [mine], texts, main) == []


@pytest.mark.parametrize("version, key", [("1.7", "sandbox_mode"), ("2.1", "sandboxer"), ("2.4", "sandboxer")])
def test_an_empty_sandboxer_is_the_podsandbox_the_cri_plugin_fills_in(version, key):
    """A declared runtime dumps "" where containerd's own runc dumps "podsandbox": the same at CRI start."""
    defaults = default_doc(version)
    doc = loaded(version, {"nvidia": dict(NVIDIA, **{key: ""})})
    wanted = dict(NVIDIA, **{key: "podsandbox"})
    assert adopt.effective_mismatches(doc, defaults, plugin(version), spec("nvidia", wanted)) == []
    wanted[key] = "shim"  # another sandboxer is a real difference
    assert len(adopt.effective_mismatches(doc, defaults, plugin(version), spec("nvidia", wanted))) == 1

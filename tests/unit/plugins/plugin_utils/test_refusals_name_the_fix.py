"""A refusal names the option or input that changes it (issue 35): in the module's words (set runtimes[].binary_name),
which the role's action turns into the role's variables (set containerd_runtime_runtimes[].binary_name)."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.action import register_runtimes as action
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _remediation as r
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _user_words as user_words
from tests.unit.plugins.plugin_utils.test_remediation import NVIDIA, RUNC, dump, gathered, opts

ROLE_WORDS = dict((option, user_words.ROLE_PREFIX + option) for option in action.ARGUMENT_SPEC)
LACKING = dump(2, {"runc": RUNC})  # loaded without nvidia: the plan has something to write


def _refusal(gather, options):
    with pytest.raises(r.Refusal) as caught:
        r.plan(gather, options)
    return "; ".join(caught.value.reasons)


def test_a_missing_runtime_binary_names_binary_name_and_require_binaries():
    why = _refusal(gathered(2, "version = 3\n", LACKING), opts(require_binaries=True))
    assert why.startswith("runtime nvidia: BinaryName /usr/bin/nvidia-container-runtime is not an executable on the "
                          "node: set runtimes[].binary_name to the runtime's path on the node"), why
    role = user_words.in_user_words(why, ROLE_WORDS)
    assert "set containerd_runtime_runtimes[].binary_name to " in role, role
    assert "set containerd_runtime_require_binaries to false" in role, role


def test_cdi_on_containerd_16_names_the_runtime_key_and_the_roles_switch():
    cdi = [{"name": "nvidia-cdi", "binary_name": "/usr/bin/nvidia-container-runtime.cdi", "cdi": True}]
    why = _refusal(gathered(1, "version = 2\n", dump(1, {"runc": RUNC}), minor=6), opts(runtimes=cdi))
    assert "set runtimes[].cdi to false" in why and "containerd_runtime_enable_nvidia_cdi=false" in why, why
    assert "set containerd_runtime_runtimes[].cdi" in user_words.in_user_words(why, ROLE_WORDS)


def test_a_default_runtime_nothing_loads_names_default_runtime_name():
    why = _refusal(gathered(2, "version = 3\n", dump(2, {"runc": RUNC, "nvidia": NVIDIA})),
                   opts(default_runtime_name="kata", allow_non_runc_default=True))
    assert "set containerd_runtime_default_runtime_name to a loaded runtime, or register it (set " \
           "containerd_runtime_runtimes[].name)" in user_words.in_user_words(why, ROLE_WORDS), why


def test_containerd_under_both_plugin_names_says_which_to_keep():
    main = ('version = 3\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
            '[plugins."io.containerd.cri.v1.runtime".containerd]\n  default_runtime_name = "runc"\n')
    why = _refusal(gathered(2, main, LACKING), opts())
    assert "keep containerd under io.containerd.cri.v1.runtime only, where this containerd reads it" in why, why


@pytest.mark.parametrize("runtimes, words", [
    ([{"binary_name": "/x"}], "set runtimes[].name"),
    ([{"name": "Nvidia"}], "set runtimes[].name to one"),
    ([{"name": "nvidia"}, {"name": "nvidia"}], "set runtimes with each name once"),
    ([{"name": "runc"}], "set runtimes without it"),
])
def test_a_bad_runtimes_list_names_it(runtimes, words):
    with pytest.raises(r.Refusal) as caught:
        r.normalize_runtimes(runtimes, None)
    assert words in str(caught.value), caught.value

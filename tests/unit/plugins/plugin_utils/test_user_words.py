from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _user_words as user_words


def test_options_after_set_become_the_variables_the_user_sets():
    names = user_words.k8s_playbook_names()
    assert names["kubeconfig"] == "gpurt_kubeconfig" and names["host"] == "gpurt_k8s_host"
    text = ("no kubeconfig found and no host given (set kubeconfig or host, or K8S_AUTH_KUBECONFIG, "
            "or run in a pod)")
    assert user_words.in_user_words(text, names) == (
        "no kubeconfig found and no host given (set gpurt_kubeconfig or gpurt_k8s_host, or K8S_AUTH_KUBECONFIG, "
        "or run in a pod)")


def test_only_the_advice_is_renamed():
    names = {"containerd_bin": "gpurt_containerd_bin"}
    text = "containerd binary 'containerd' not found in PATH (set containerd_bin)"
    assert user_words.in_user_words(text, names) == (
        "containerd binary 'containerd' not found in PATH (set gpurt_containerd_bin)")
    assert user_words.in_user_words("the containerd_bin is fine", names) == "the containerd_bin is fine"
    assert user_words.in_user_words(text, {}) == text


def test_the_role_names_its_variables():
    class Role(object):
        @staticmethod
        def get_name():
            return "gpurt.runtime_gate.containerd_runtime"

    class Task(object):
        _role = Role()

    assert user_words.role_names(Task(), ["containerd_bin"]) == {"containerd_bin": "containerd_runtime_containerd_bin"}
    assert user_words.role_names(object(), ["containerd_bin"]) == {}
    assert user_words.k8s_names({}) == {} and user_words.k8s_names({"_gpurt_k8s_auth": {}})["context"] == "gpurt_context"

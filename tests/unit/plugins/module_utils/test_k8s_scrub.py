"""_k8s/scrub.py: secrets never shown: a token the apiserver echoes back is masked in every form a message
can carry it. Tokens from every source: test_k8s_client.py."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from tests.lib.fake_apiserver import status_body, write_kubeconfig
from tests.lib.kube_session import TOKEN, lister


def test_token_echoed_by_the_server_is_masked(fake):
    leak = status_body(500, "upstream said: Authorization: Bearer %s" % TOKEN)
    fake.respond_always("runtimeclasses", {"status": 500, "body": leak})
    with lister(fake, retries=0) as client, pytest.raises(kube.KubeError) as err:
        client.list_all("runtimeclasses")
    assert TOKEN not in str(err.value)
    assert "Bearer ********" in str(err.value)


def test_kubeconfig_token_echoed_by_the_server_is_masked(fake, tmp_path):
    path = write_kubeconfig(str(tmp_path / "config"), fake.url, token=TOKEN)
    fake.respond_always("runtimeclasses", {"status": 500, "body": status_body(500, "token=%s" % TOKEN)})
    client = kube.session_from_params(dict(kubeconfig=path, retries=0), environ={})
    with client, pytest.raises(kube.KubeError) as err:
        client.list_all("runtimeclasses")
    assert TOKEN not in str(err.value)


def test_secrets_mask_every_form_and_the_longest_first():
    secrets = kube.Secrets(["abcd-token\n", None, "ab"])
    text = "raw abcd-token\n, repr 'abcd-token\\n', bytes b'abcd-token\\n', json \"abcd-token\\n\", ab"
    assert secrets.scrub(text) == "raw ********, repr '********', bytes b'********', json \"********\", ab"

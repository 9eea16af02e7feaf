"""_k8s/proxy.py: the proxy option (or K8S_AUTH_PROXY): CONNECT for https, forwarding for http, no_proxy,
its password kept out of messages."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from tests.lib.fake_apiserver import FakeApiServer
from tests.lib.kube_session import TOKEN, lister, make_runtimeclasses, needs_openssl


# ----- proxy --------------------------------------------------------------------------

@needs_openssl
def test_proxy_tunnels_https_with_connect(tmp_path):
    from tests.lib.connect_proxy import ConnectProxy
    with FakeApiServer(runtimeclasses=make_runtimeclasses(1), token=TOKEN, tls=True) as server, \
            ConnectProxy() as proxy:
        with lister(server, ca_cert=server.ca_file, proxy=proxy.url) as client:
            assert len(client.list_all("runtimeclasses")) == 1
        assert proxy.requests[0]["method"] == "CONNECT"
        assert proxy.requests[0]["target"] == "127.0.0.1:%d" % server.port


def test_proxy_forwards_plain_http_and_sends_its_credentials(fake):
    from tests.lib.connect_proxy import ConnectProxy
    with ConnectProxy(credentials="proxyuser:pr0xy-pass") as proxy:
        url = "http://proxyuser:pr0xy-pass@127.0.0.1:%d" % proxy.port
        with lister(fake, proxy=url) as client:
            assert len(client.list_all("nodes")) == 2
        assert proxy.requests[0]["method"] == "GET"
        assert proxy.requests[0]["target"].startswith(fake.url + "/api/v1/nodes?")
        assert proxy.requests[0]["proxy_authorization"].startswith("Basic ")


def test_proxy_password_is_masked(fake):
    url = "http://proxyuser:pr0xy-pass@127.0.0.1:1"
    with lister(fake, proxy=url, retries=0) as client, pytest.raises(kube.KubeError) as err:
        client.list_all("nodes")
    assert "cannot go through proxy http://127.0.0.1:1" in str(err.value)
    assert "pr0xy-pass" not in str(err.value)


def test_proxy_from_environment_and_no_proxy(fake):
    from tests.lib.connect_proxy import ConnectProxy
    with ConnectProxy() as proxy:
        environ = {"K8S_AUTH_PROXY": proxy.url}
        with kube.session_from_params(dict(host=fake.url, api_key=TOKEN), environ=environ) as client:
            client.list_all("nodes")
        assert len(proxy.requests) == 1
        environ["K8S_AUTH_NO_PROXY"] = "example.com,127.0.0.0/8"
        with kube.session_from_params(dict(host=fake.url, api_key=TOKEN), environ=environ) as client:
            client.list_all("nodes")
        assert len(proxy.requests) == 1  # bypassed
    assert len(fake.list_requests("nodes")) == 2


@pytest.mark.parametrize("url, no_proxy, bypass", [
    ("https://10.0.0.1:6443", "10.0.0.0/8", True),
    ("https://10.0.0.1:6443", "10.0.0.2", False),
    ("https://api.k8s.example.com:6443", ".example.com", True),
    ("https://api.k8s.example.com:6443", "example.com", True),
    ("https://notexample.com:6443", "example.com", False),
    ("https://api.example.com:6443", "api.example.com:6443", True),
    ("https://api.example.com:6443", "api.example.com:443", False),
    ("https://[fd00::1]:6443", "fd00::/8", True),
    ("https://anything:6443", " * ", True),
    ("https://anything:6443", "", False),
])
def test_no_proxy_matching(url, no_proxy, bypass):
    assert kube.bypasses_proxy(url, no_proxy) is bypass


def test_a_proxy_that_is_not_a_url_is_refused():
    with pytest.raises(kube.KubeError, match="proxy must be an http:// or https:// URL"):
        kube.build_connection(dict(host="https://127.0.0.1:6443", proxy="socks5://127.0.0.1:1080"), environ={})

import shutil

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import kube
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import runtimeclasses
from tests.lib.fake_apiserver import FakeApiServer, status_body, write_kubeconfig

TOKEN = "s3cr3t-audit-token-7f9a"
DELAY = 0.01


def make_runtimeclasses(count):
    return [{"metadata": {"name": "rc-%02d" % index}, "handler": "handler-%02d" % index} for index in range(count)]


@pytest.fixture
def fake():
    with FakeApiServer(runtimeclasses=make_runtimeclasses(7), token=TOKEN, nodes=[
        {"metadata": {"name": "gpu-1", "labels": {"gpu": "true"}},
         "status": {"runtimeHandlers": [{"name": ""}, {"name": "nvidia"}]}},
        {"metadata": {"name": "cpu-1", "labels": {"gpu": "false"}}, "status": {}},
    ]) as server:
        yield server


class Sleeps(list):
    """Records backoff delays instead of sleeping."""

    def __call__(self, seconds):
        self.append(seconds)


def lister(server, token=TOKEN, sleeps=None, **options):
    params = dict(host=server.url, api_key=token, retry_delay=DELAY)
    params.update(options)
    return kube.lister_from_params(params, environ={}, sleep=sleeps if sleeps is not None else Sleeps())


# ----- pagination ---------------------------------------------------------------------

def test_three_pages_make_three_requests_and_one_list_call(fake):
    with lister(fake, page_size=3) as client:
        items = client.list_all("runtimeclasses")
        assert client.counts() == {"api_requests": 3, "api_list_calls": 1}
    assert [item["metadata"]["name"] for item in items] == ["rc-%02d" % i for i in range(7)]
    requests = fake.list_requests("runtimeclasses")
    assert [r["query"].get("limit") for r in requests] == ["3", "3", "3"]
    assert "continue" not in requests[0]["query"]
    assert all("continue" in r["query"] for r in requests[1:])
    assert all(r["auth"] == "ok" for r in requests)


def test_one_page_when_everything_fits(fake):
    with lister(fake) as client:
        assert len(client.list_all("runtimeclasses")) == 7
        assert client.counts() == {"api_requests": 1, "api_list_calls": 1}
    assert fake.list_requests("runtimeclasses")[0]["query"]["limit"] == "500"


def test_counts_add_up_over_several_lists(fake):
    with lister(fake, page_size=5) as client:
        client.list_all("runtimeclasses")
        client.list_all("nodes")
        assert client.counts() == {"api_requests": 3, "api_list_calls": 2}


def test_node_label_and_field_selectors_reach_the_apiserver(fake):
    with lister(fake) as client:
        gpu = client.list_all("nodes", label_selector="gpu=true")
        by_name = client.list_all("nodes", field_selector="metadata.name=cpu-1")
    assert [item["metadata"]["name"] for item in gpu] == ["gpu-1"]
    assert [item["metadata"]["name"] for item in by_name] == ["cpu-1"]
    assert fake.list_requests("nodes")[0]["query"]["labelSelector"] == "gpu=true"


def test_items_with_missing_fields_are_returned_raw_not_deserialized(fake):
    fake.set_objects("runtimeclasses", [
        {"metadata": {"name": "no-handler"}},
        {"handler": "no-metadata"},
        {"metadata": {"name": "good"}, "handler": "nvidia", "overhead": {"podFixed": {"cpu": "250m"}}},
    ])
    with lister(fake) as client:
        items = client.list_all("runtimeclasses")
    assert len(items) == 3
    normalized, errors = runtimeclasses.normalize_objects([(item, "cluster") for item in items], "RuntimeClass")
    assert [item["name"] for item in normalized] == ["good"]
    assert errors == [
        "RuntimeClass without metadata.name (from cluster) has no metadata.name",
        "RuntimeClass 'no-handler' (from cluster) has no handler",
    ]


def test_expired_continue_token_is_a_clear_error_without_retry(fake):
    fake.script("runtimeclasses", [200, 410])
    with lister(fake, page_size=3) as client, pytest.raises(kube.KubeError) as err:
        client.list_all("runtimeclasses")
    assert err.value.status == 410
    assert "410 Gone from %s listing runtimeclasses: the continue token expired" % fake.url in str(err.value)
    assert len(fake.list_requests("runtimeclasses")) == 2


def test_fake_apiserver_answers_410_for_a_token_of_older_data(fake):
    # The lister relies on this apiserver behaviour; check the stand-in has it.
    with lister(fake, page_size=3) as client:
        client.list_all("runtimeclasses")
    old_token = fake.list_requests("runtimeclasses")[1]["query"]["continue"]
    fake.set_objects("runtimeclasses", make_runtimeclasses(7))
    assert fake.list_page("runtimeclasses", {"limit": "3", "continue": old_token})[0] == 410
    assert fake.list_page("runtimeclasses", {"limit": "3", "continue": "garbage"})[0] == 410


# ----- retries ------------------------------------------------------------------------

def test_retry_then_success_on_500_500_200(fake):
    sleeps = Sleeps()
    fake.script("runtimeclasses", [500, 500, 200])
    with lister(fake, sleeps=sleeps) as client:
        items = client.list_all("runtimeclasses")
        assert client.counts() == {"api_requests": 3, "api_list_calls": 1}
    assert len(items) == 7
    assert sleeps == [DELAY, DELAY * 2]
    assert [r["status"] for r in fake.list_requests("runtimeclasses")] == [500, 500, 200]


def test_retry_resends_the_same_page_mid_list(fake):
    fake.script("runtimeclasses", [200, 503, 200, 200])
    with lister(fake, page_size=3) as client:
        assert len(client.list_all("runtimeclasses")) == 7
        assert client.counts()["api_requests"] == 4
    queries = [r["query"].get("continue") for r in fake.list_requests("runtimeclasses")]
    assert queries[1] is not None
    assert queries[1] == queries[2]


def test_429_is_retried(fake):
    fake.script("nodes", [429, 200])
    with lister(fake) as client:
        assert len(client.list_all("nodes")) == 2
        assert client.counts()["api_requests"] == 2


def test_gives_up_after_retries_with_exponential_backoff(fake):
    sleeps = Sleeps()
    fake.respond_always("runtimeclasses", 500)
    with lister(fake, sleeps=sleeps, retries=3) as client, pytest.raises(kube.KubeError) as err:
        client.list_all("runtimeclasses")
    assert str(err.value) == ("gave up after 4 attempts listing runtimeclasses: 500 Internal Server Error from %s "
                              "(scripted 500 from the fake apiserver)" % fake.url)
    assert err.value.attempts == 4
    assert sleeps == [DELAY, DELAY * 2, DELAY * 4]
    assert len(fake.list_requests("runtimeclasses")) == 4


def test_retries_zero_means_one_attempt(fake):
    fake.respond_always("nodes", 503)
    with lister(fake, retries=0) as client, pytest.raises(kube.KubeError, match="gave up after 1 attempts"):
        client.list_all("nodes")
    assert len(fake.list_requests("nodes")) == 1


def test_timeout_is_retried_then_succeeds(fake):
    fake.script("nodes", [{"status": 200, "sleep": 1.0}])
    with lister(fake, request_timeout=0.2) as client:
        assert len(client.list_all("nodes")) == 2
        assert client.counts()["api_requests"] == 2


def test_timeout_every_time_is_a_clear_failure(fake):
    fake.respond_always("nodes", {"status": 200, "sleep": 1.0})
    with lister(fake, request_timeout=0.2, retries=1) as client, pytest.raises(kube.KubeError) as err:
        client.list_all("nodes")
    assert str(err.value) == ("gave up after 2 attempts listing nodes: no answer from %s within 0.2 s "
                              "(request_timeout)" % fake.url)


def test_connection_refused_is_retried_then_a_clear_failure(fake):
    url = fake.url
    fake.stop()
    params = dict(host=url, api_key=TOKEN, retry_delay=DELAY, retries=2)
    with kube.lister_from_params(params, environ={}, sleep=Sleeps()) as client, pytest.raises(kube.KubeError) as err:
        client.list_all("runtimeclasses")
    assert str(err.value) == "gave up after 3 attempts listing runtimeclasses: cannot connect to %s " \
                             "(Connection refused)" % url
    assert client.api_requests == 3


# ----- errors that are not retried ----------------------------------------------------

def test_401_is_clear_not_retried_and_hides_the_token(fake):
    wrong = "wrong-token-d41d8cd98f"
    with lister(fake, token=wrong) as client, pytest.raises(kube.KubeError) as err:
        client.list_all("runtimeclasses")
    assert str(err.value) == ("401 Unauthorized from %s listing runtimeclasses: the bearer token or client "
                              "certificate was rejected" % fake.url)
    assert err.value.status == 401
    assert wrong not in str(err.value) and wrong not in repr(err.value)
    assert [r["auth"] for r in fake.list_requests("runtimeclasses")] == ["wrong"]


def test_no_token_is_401(fake):
    with lister(fake, token=None) as client, pytest.raises(kube.KubeError, match="401 Unauthorized"):
        client.list_all("nodes")
    assert [r["auth"] for r in fake.list_requests("nodes")] == ["missing"]


def test_403_names_the_rbac_file_and_is_not_retried(fake):
    fake.respond_always("nodes", 403)
    with lister(fake) as client, pytest.raises(kube.KubeError) as err:
        client.list_all("nodes")
    message = str(err.value)
    assert message.startswith("403 Forbidden from %s listing nodes: the identity may not list nodes; "
                              "apply rbac/runtime-gate-audit.yaml" % fake.url)
    assert 'cannot list resource "nodes"' in message
    assert len(fake.list_requests("nodes")) == 1


def test_404_is_not_retried(fake):
    fake.respond_always("runtimeclasses", 404)
    with lister(fake) as client, pytest.raises(kube.KubeError) as err:
        client.list_all("runtimeclasses")
    assert "/apis/node.k8s.io/v1/runtimeclasses is not served" in str(err.value)
    assert len(fake.list_requests("runtimeclasses")) == 1


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
    client = kube.lister_from_params(dict(kubeconfig=path, retries=0), environ={})
    with client, pytest.raises(kube.KubeError) as err:
        client.list_all("runtimeclasses")
    assert TOKEN not in str(err.value)


def test_answer_that_is_not_json_is_a_clear_error(fake):
    fake.respond_always("nodes", {"status": 200, "body": b"<html>a web server, not an apiserver</html>"})
    with lister(fake) as client, pytest.raises(kube.KubeError) as err:
        client.list_all("nodes")
    assert str(err.value) == "%s answered listing nodes with a body that is not JSON" % fake.url


# ----- configuration: kubeconfig, env, host -------------------------------------------

def test_kubeconfig_current_context(fake, tmp_path):
    path = write_kubeconfig(str(tmp_path / "config"), fake.url, token=TOKEN)
    with kube.lister_from_params(dict(kubeconfig=path), environ={}) as client:
        assert len(client.list_all("runtimeclasses")) == 7
        assert client.server == fake.url


def test_kubeconfig_context_picks_its_user(fake, tmp_path):
    path = write_kubeconfig(str(tmp_path / "config"), fake.url, contexts={"bad": "nope-nope", "good": TOKEN})
    with kube.lister_from_params(dict(kubeconfig=path, context="good"), environ={}) as client:
        assert len(client.list_all("nodes")) == 2
    with kube.lister_from_params(dict(kubeconfig=path), environ={}) as client:  # current-context: bad
        with pytest.raises(kube.KubeError, match="401 Unauthorized"):
            client.list_all("nodes")


def test_kubeconfig_with_missing_context_lists_the_contexts(fake, tmp_path):
    path = write_kubeconfig(str(tmp_path / "config"), fake.url, contexts={"a": TOKEN, "b": TOKEN})
    with pytest.raises(kube.KubeError) as err:
        kube.lister_from_params(dict(kubeconfig=path, context="foo"), environ={})
    assert str(err.value) == "kubeconfig %s has no context 'foo' (contexts: a, b)" % path
    assert not fake.requests


def test_kubeconfig_without_current_context(fake, tmp_path):
    path = write_kubeconfig(str(tmp_path / "config"), fake.url, contexts={"a": TOKEN}, current_context="")
    with pytest.raises(kube.KubeError, match=r"sets no current-context; set context \(contexts: a\)"):
        kube.lister_from_params(dict(kubeconfig=path), environ={})


def test_kubeconfig_that_does_not_exist(tmp_path):
    missing = str(tmp_path / "missing")
    with pytest.raises(kube.KubeError, match="kubeconfig %s does not exist" % missing):
        kube.lister_from_params(dict(kubeconfig=missing), environ={})


def test_kubeconfig_that_is_not_yaml(tmp_path):
    path = tmp_path / "config"
    path.write_text("clusters: [\n")
    with pytest.raises(kube.KubeError, match="is not valid YAML"):
        kube.lister_from_params(dict(kubeconfig=str(path)), environ={})


def test_no_kubeconfig_and_no_host(tmp_path):
    with pytest.raises(kube.KubeError) as err:
        kube.lister_from_params({}, environ={"HOME": str(tmp_path)})
    assert str(err.value).startswith("no kubeconfig found and no host given")


def test_kubeconfig_discovery_order(fake, tmp_path):
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    write_kubeconfig(str(home / ".kube" / "config"), fake.url, token="home-token")
    env_path = write_kubeconfig(str(tmp_path / "env"), fake.url, token="kubeconfig-env-token")
    k8s_path = write_kubeconfig(str(tmp_path / "k8s"), fake.url, token="k8s-auth-token")

    def token_used(environ):
        configuration, _unused = kube.build_configuration({}, environ)
        return configuration.get_api_key_with_prefix("BearerToken")

    environ = {"HOME": str(home)}
    assert token_used(environ) == "Bearer home-token"
    environ["KUBECONFIG"] = env_path
    assert token_used(environ) == "Bearer kubeconfig-env-token"
    environ["K8S_AUTH_KUBECONFIG"] = k8s_path
    assert token_used(environ) == "Bearer k8s-auth-token"


def test_host_and_token_from_environment(fake, tmp_path):
    environ = {"HOME": str(tmp_path), "K8S_AUTH_HOST": fake.url, "K8S_AUTH_API_KEY": TOKEN}
    with kube.lister_from_params({}, environ=environ) as client:
        assert len(client.list_all("nodes")) == 2


def test_api_key_overrides_the_kubeconfig_token(fake, tmp_path):
    path = write_kubeconfig(str(tmp_path / "config"), fake.url, token="stale-token")
    with kube.lister_from_params(dict(kubeconfig=path, api_key=TOKEN), environ={}) as client:
        assert len(client.list_all("nodes")) == 2
    assert [r["auth"] for r in fake.list_requests("nodes")] == ["ok"]


def test_host_must_be_a_url():
    with pytest.raises(kube.KubeError, match="host '10.0.0.1:6443' must be a URL"):
        kube.build_configuration(dict(host="10.0.0.1:6443"), environ={})


def test_verify_ssl_from_environment():
    assert kube.resolve_auth({}, {"K8S_AUTH_VERIFY_SSL": "no"})["validate_certs"] is False
    assert kube.resolve_auth({"validate_certs": True}, {"K8S_AUTH_VERIFY_SSL": "no"})["validate_certs"] is True
    with pytest.raises(kube.KubeError, match="K8S_AUTH_VERIFY_SSL='maybe' is not a boolean"):
        kube.resolve_auth({}, {"K8S_AUTH_VERIFY_SSL": "maybe"})


def test_missing_ca_cert_file_is_named(tmp_path):
    missing = str(tmp_path / "ca.crt")
    with pytest.raises(kube.KubeError, match="ca_cert %s does not exist" % missing):
        kube.build_configuration(dict(host="https://127.0.0.1:6443", ca_cert=missing), environ={})


@pytest.mark.parametrize("option, value", [("page_size", 0), ("retries", -1), ("request_timeout", 0),
                                           ("retry_delay", -1)])
def test_bad_list_options_are_refused(fake, option, value):
    with pytest.raises(kube.KubeError, match=option):
        lister(fake, **{option: value})


def test_arg_spec_hides_the_token():
    assert kube.AUTH_ARG_SPEC["api_key"]["no_log"] is True


# ----- TLS ----------------------------------------------------------------------------

needs_openssl = pytest.mark.skipif(not shutil.which("openssl"), reason="openssl CLI not installed")


@needs_openssl
def test_tls_with_ca_cert_and_without():
    with FakeApiServer(runtimeclasses=make_runtimeclasses(1), token=TOKEN, tls=True) as server:
        with lister(server, ca_cert=server.ca_file) as client:
            assert len(client.list_all("runtimeclasses")) == 1
        with lister(server, validate_certs=False) as client:
            assert len(client.list_all("runtimeclasses")) == 1
        with lister(server) as client, pytest.raises(kube.KubeError) as err:
            client.list_all("runtimeclasses")
        assert str(err.value) == ("TLS error from %s listing runtimeclasses: certificate verify failed; set "
                                  "ca_cert to the cluster CA, or validate_certs=false" % server.url)
        assert client.api_requests == 1

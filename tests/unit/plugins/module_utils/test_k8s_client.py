import json
import shutil

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import objects as k8s_objects
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
    return kube.session_from_params(params, environ={}, sleep=sleeps if sleeps is not None else Sleeps())


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
    normalized, errors = k8s_objects.normalize_objects([(item, "cluster") for item in items], "RuntimeClass")
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
    with lister(fake, retries=0) as client, pytest.raises(kube.KubeError, match="gave up after 1 attempt listing"):
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


# How late past its deadline a session may raise: the request's worker is joined for at most the time left,
# so what remains is a thread's wake-up and the raise, never a read or a retry.
WAKE_UP = 0.1


@pytest.mark.parametrize("trickle, request_timeout, deadline, message, min_requests", [
    # One byte every 2 s: each read comes well within request_timeout, so only the deadline
    # can stop it (issue 10).
    (2.0, 5, 3, "gave up after 1 attempt listing nodes: no complete answer from {url} before the deadline "
                "of 3 s", 1),
    # Slow, within the deadline: request_timeout ends the attempt, it is retried, then the deadline stops it.
    (0.3, 1, 2.5, "no complete answer from {url} within 1 s (request_timeout)", 2),
])
def test_a_slow_answer_cannot_stretch_the_deadline(fake, trickle, request_timeout, deadline, message, min_requests):
    fake.respond_always("nodes", {"status": 200, "trickle": trickle})
    with lister(fake, request_timeout=request_timeout, deadline=deadline, retries=5) as client, \
            pytest.raises(kube.KubeError) as err:
        client.list_all("nodes")
    past = -client.remaining()  # seconds past the session's deadline when it raised (negative: before it)
    assert past < WAKE_UP, "raised %.3f s past the deadline of %s s" % (past, deadline)
    assert message.format(url=fake.url) in str(err.value)
    assert client.api_requests >= min_requests


def test_the_deadline_stops_a_backoff_that_would_pass_it(fake):
    sleeps = Sleeps()
    fake.respond_always("nodes", 503)
    with lister(fake, sleeps=sleeps, retry_delay=5, deadline=2, retries=3) as client, \
            pytest.raises(kube.KubeError, match="the deadline of 2 s leaves no time to retry"):
        client.list_all("nodes")
    assert sleeps == []
    assert client.api_requests == 1


def test_the_deadline_counts_from_the_start_of_the_task(fake):
    now = [100.0]
    params = dict(host=fake.url, api_key=TOKEN, deadline=10)
    with kube.session_from_params(params, environ={}, clock=lambda: now[0]) as client:
        assert len(client.list_all("nodes")) == 2
        now[0] += 11
        with pytest.raises(kube.KubeError) as err:
            client.list_all("nodes")
    assert str(err.value) == "stopped listing nodes: the deadline of 10 s for this task's API calls has passed"


def test_connection_refused_is_retried_then_a_clear_failure(fake):
    url = fake.url
    fake.stop()
    params = dict(host=url, api_key=TOKEN, retry_delay=DELAY, retries=2)
    with kube.session_from_params(params, environ={}, sleep=Sleeps()) as client, pytest.raises(kube.KubeError) as err:
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


def test_404_on_a_namespaced_path_prints_no_placeholder(fake):
    """Issue 35 item 3: a namespaced collection that is not served is named without its {namespace}."""
    fake.respond_always("configmaps", 404)
    with lister(fake) as client, pytest.raises(kube.KubeError) as err:
        client.get("configmaps", "params", namespace="gate")
    message = str(err.value)
    assert "/api/v1/configmaps is not served" in message and "{" not in message, message


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


def test_answer_that_is_not_json_is_a_clear_error(fake):
    fake.respond_always("nodes", {"status": 200, "body": b"<html>a web server, not an apiserver</html>"})
    with lister(fake) as client, pytest.raises(kube.KubeError) as err:
        client.list_all("nodes")
    assert str(err.value) == "%s answered listing nodes with a body that is not JSON" % fake.url


# ----- configuration: kubeconfig, env, host -------------------------------------------

def test_kubeconfig_current_context(fake, tmp_path):
    path = write_kubeconfig(str(tmp_path / "config"), fake.url, token=TOKEN)
    with kube.session_from_params(dict(kubeconfig=path), environ={}) as client:
        assert len(client.list_all("runtimeclasses")) == 7
        assert client.server == fake.url


def test_kubeconfig_context_picks_its_user(fake, tmp_path):
    path = write_kubeconfig(str(tmp_path / "config"), fake.url, contexts={"bad": "nope-nope", "good": TOKEN})
    with kube.session_from_params(dict(kubeconfig=path, context="good"), environ={}) as client:
        assert len(client.list_all("nodes")) == 2
    with kube.session_from_params(dict(kubeconfig=path), environ={}) as client:  # current-context: bad
        with pytest.raises(kube.KubeError, match="401 Unauthorized"):
            client.list_all("nodes")


def test_kubeconfig_with_missing_context_lists_the_contexts(fake, tmp_path):
    path = write_kubeconfig(str(tmp_path / "config"), fake.url, contexts={"a": TOKEN, "b": TOKEN})
    with pytest.raises(kube.KubeError) as err:
        kube.session_from_params(dict(kubeconfig=path, context="foo"), environ={})
    assert str(err.value) == "kubeconfig %s has no context 'foo' (contexts: a, b)" % path
    assert not fake.requests


def test_kubeconfig_without_current_context(fake, tmp_path):
    path = write_kubeconfig(str(tmp_path / "config"), fake.url, contexts={"a": TOKEN}, current_context="")
    with pytest.raises(kube.KubeError, match=r"sets no current-context; set context \(contexts: a\)"):
        kube.session_from_params(dict(kubeconfig=path), environ={})


def test_kubeconfig_that_does_not_exist(tmp_path):
    missing = str(tmp_path / "missing")
    with pytest.raises(kube.KubeError, match="kubeconfig %s does not exist" % missing):
        kube.session_from_params(dict(kubeconfig=missing), environ={})


def test_kubeconfig_that_is_not_yaml(tmp_path):
    path = tmp_path / "config"
    path.write_text("clusters: [\n")
    with pytest.raises(kube.KubeError, match="is not valid YAML"):
        kube.session_from_params(dict(kubeconfig=str(path)), environ={})


def test_no_kubeconfig_and_no_host(tmp_path):
    with pytest.raises(kube.KubeError) as err:
        kube.session_from_params({}, environ={"HOME": str(tmp_path)})
    assert str(err.value).startswith("no kubeconfig found and no host given")


def test_kubeconfig_discovery_order(fake, tmp_path):
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    write_kubeconfig(str(home / ".kube" / "config"), fake.url, token="home-token")
    env_path = write_kubeconfig(str(tmp_path / "env"), fake.url, token="kubeconfig-env-token")
    k8s_path = write_kubeconfig(str(tmp_path / "k8s"), fake.url, token="k8s-auth-token")

    def token_used(environ):
        with kube.session_from_params({}, environ) as session:
            return session._authorization()

    environ = {"HOME": str(home)}
    assert token_used(environ) == "Bearer home-token"
    environ["KUBECONFIG"] = env_path
    assert token_used(environ) == "Bearer kubeconfig-env-token"
    environ["K8S_AUTH_KUBECONFIG"] = k8s_path
    assert token_used(environ) == "Bearer k8s-auth-token"


def test_host_and_token_from_environment(fake, tmp_path):
    environ = {"HOME": str(tmp_path), "K8S_AUTH_HOST": fake.url, "K8S_AUTH_API_KEY": TOKEN}
    with kube.session_from_params({}, environ=environ) as client:
        assert len(client.list_all("nodes")) == 2


def test_api_key_overrides_the_kubeconfig_token(fake, tmp_path):
    path = write_kubeconfig(str(tmp_path / "config"), fake.url, token="stale-token")
    with kube.session_from_params(dict(kubeconfig=path, api_key=TOKEN), environ={}) as client:
        assert len(client.list_all("nodes")) == 2
    assert [r["auth"] for r in fake.list_requests("nodes")] == ["ok"]


def test_host_must_be_a_url():
    with pytest.raises(kube.KubeError, match="host '10.0.0.1:6443' must be a URL"):
        kube.build_connection(dict(host="10.0.0.1:6443"), environ={})


def test_verify_ssl_from_environment():
    assert kube.resolve_auth({}, {"K8S_AUTH_VERIFY_SSL": "no"})["validate_certs"] is False
    assert kube.resolve_auth({"validate_certs": True}, {"K8S_AUTH_VERIFY_SSL": "no"})["validate_certs"] is True
    with pytest.raises(kube.KubeError, match="K8S_AUTH_VERIFY_SSL='maybe' is not a boolean"):
        kube.resolve_auth({}, {"K8S_AUTH_VERIFY_SSL": "maybe"})


def test_missing_ca_cert_file_is_named(tmp_path):
    missing = str(tmp_path / "ca.crt")
    with pytest.raises(kube.KubeError, match="ca_cert %s does not exist" % missing):
        kube.build_connection(dict(host="https://127.0.0.1:6443", ca_cert=missing), environ={})


@pytest.mark.parametrize("option, value", [("page_size", 0), ("retries", -1), ("request_timeout", 0),
                                           ("retry_delay", -1), ("deadline", 0)])
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


# ----- tokens: whitespace stripped, never in a message --------------------------------

def write_user_kubeconfig(path, server, user):
    """A kubeconfig whose one user entry is `user` (token, tokenFile, ...), as YAML text."""
    import yaml
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "k", "cluster": {"server": server}}],
              "users": [{"name": "u", "user": user}],
              "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}
    with open(path, "w") as handle:
        handle.write(yaml.safe_dump(config))
    return path


def token_sources(fake, tmp_path, token):
    """(name, params, environ) for every way a token can come in."""
    token_file = tmp_path / "token"
    token_file.write_text(token)
    block = tmp_path / "block.yaml"
    block.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                     "clusters: [{name: k, cluster: {server: '%s'}}]\n"
                     "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
                     "users:\n- name: u\n  user:\n    token: |\n      %s\n" % (fake.url, token.strip()))
    return [
        ("api_key", dict(host=fake.url, api_key=token), {}),
        ("K8S_AUTH_API_KEY", dict(host=fake.url), {"K8S_AUTH_API_KEY": token}),
        ("kubeconfig token", dict(kubeconfig=write_user_kubeconfig(str(tmp_path / "kc-token"), fake.url,
                                                                   {"token": token})), {}),
        ("kubeconfig token: | block", dict(kubeconfig=str(block)), {}),
        ("kubeconfig tokenFile", dict(kubeconfig=write_user_kubeconfig(str(tmp_path / "kc-file"), fake.url,
                                                                       {"tokenFile": str(token_file)})), {}),
    ]


@pytest.mark.parametrize("index", range(5))
def test_a_token_ending_in_a_newline_works_from_every_source(fake, tmp_path, index):
    name, params, environ = token_sources(fake, tmp_path, TOKEN + "\n")[index]
    with kube.session_from_params(params, environ=environ, sleep=Sleeps()) as client:
        assert len(client.list_all("nodes")) == 2, name
    assert [r["auth"] for r in fake.list_requests("nodes")] == ["ok"], name


@pytest.mark.parametrize("index", range(5))
def test_a_token_echoed_back_in_any_form_is_masked_from_every_source(fake, tmp_path, index):
    token = TOKEN + "\n"
    name, params, environ = token_sources(fake, tmp_path, token)[index]
    # A server (or a proxy) that echoes what it got, raw, repr-escaped and JSON-escaped.
    echo = "got %s, %r, %s, %r" % (token, token, json.dumps(token), token.encode())
    fake.respond_always("nodes", {"status": 500, "body": status_body(500, echo)})
    params = dict(params, retries=0)
    with kube.session_from_params(params, environ=environ, sleep=Sleeps()) as client, \
            pytest.raises(kube.KubeError) as err:
        client.list_all("nodes")
    assert TOKEN not in str(err.value), name
    assert "s3cr3t" not in str(err.value), name
    assert str(err.value).count("********") == 4, (name, str(err.value))


def test_a_token_with_a_line_break_inside_is_refused_without_showing_it(fake):
    with lister(fake, token="s3cr3t-part-one\ns3cr3t-part-two") as client, pytest.raises(kube.KubeError) as err:
        client.list_all("nodes")
    assert "line break or control character" in str(err.value)
    assert "s3cr3t" not in str(err.value)
    assert fake.requests == []


def test_secrets_mask_every_form_and_the_longest_first():
    secrets = kube.Secrets(["abcd-token\n", None, "ab"])
    text = "raw abcd-token\n, repr 'abcd-token\\n', bytes b'abcd-token\\n', json \"abcd-token\\n\", ab"
    assert secrets.scrub(text) == "raw ********, repr '********', bytes b'********', json \"********\", ab"


def test_exec_plugin_token_is_used_stripped_and_masked(fake, tmp_path):
    plugin = tmp_path / "cred.py"
    plugin.write_text("import json\nprint(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', "
                      "'kind': 'ExecCredential', 'status': {'token': %r}}))\n" % (TOKEN + "\n"))
    import sys
    path = write_user_kubeconfig(str(tmp_path / "kc"), fake.url, {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "args": [str(plugin)],
        "interactiveMode": "Never"}})
    with kube.session_from_params(dict(kubeconfig=path, retries=0), environ={}) as client:
        assert len(client.list_all("nodes")) == 2
        fake.respond_always("nodes", {"status": 500, "body": status_body(500, "echo %r" % (TOKEN + "\n"))})
        with pytest.raises(kube.KubeError) as err:
            client.list_all("nodes")
    assert TOKEN not in str(err.value)


# ----- in-cluster service account -----------------------------------------------------

def service_account(tmp_path, token, ca_file=None):
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text(token)
    (directory / "namespace").write_text("gpurt-runtime-gate\n")
    if ca_file:
        shutil.copy(ca_file, str(directory / "ca.crt"))
    return str(directory)


@needs_openssl
def test_in_cluster_service_account_when_no_kubeconfig_is_found(tmp_path):
    with FakeApiServer(runtimeclasses=make_runtimeclasses(2), token=TOKEN, tls=True) as server:
        directory = service_account(tmp_path, TOKEN + "\n", server.ca_file)
        environ = {"HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": "127.0.0.1",
                   "KUBERNETES_SERVICE_PORT": str(server.port)}
        with kube.session_from_params({}, environ=environ, service_account_dir=directory) as client:
            assert client.server == "https://127.0.0.1:%d" % server.port
            assert len(client.list_all("runtimeclasses")) == 2
        assert [r["auth"] for r in server.list_requests("runtimeclasses")] == ["ok"]
        server.respond_always("runtimeclasses", {"status": 500, "body": status_body(500, "echo " + TOKEN)})
        with kube.session_from_params(dict(retries=0), environ=environ, service_account_dir=directory) as client, \
                pytest.raises(kube.KubeError) as err:
            client.list_all("runtimeclasses")
        assert TOKEN not in str(err.value)


def test_a_kubeconfig_wins_over_the_service_account(fake, tmp_path):
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    write_kubeconfig(str(home / ".kube" / "config"), fake.url, token=TOKEN)
    directory = service_account(tmp_path, "service-account-token")
    environ = {"HOME": str(home), "KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with kube.session_from_params({}, environ=environ, service_account_dir=directory) as client:
        assert client.server == fake.url


def test_no_kubeconfig_and_no_service_account_says_both(tmp_path):
    environ = {"HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": "10.0.0.1"}  # no port, no token
    with pytest.raises(kube.KubeError) as err:
        kube.session_from_params({}, environ=environ, service_account_dir=str(tmp_path / "none"))
    assert "this is not a pod with a service account" in str(err.value)


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


# ----- impersonation ------------------------------------------------------------------

def test_impersonation_headers(fake):
    with lister(fake, impersonate_user="alice", impersonate_groups=["gpu-admins", "system:authenticated"]) as client:
        client.list_all("nodes")
    request = fake.list_requests("nodes")[0]
    assert request["impersonate_user"] == "alice"
    assert request["impersonate_groups"] == ["gpu-admins", "system:authenticated"]


def test_several_groups_through_a_proxy_to_plain_http_are_refused():
    # Through the proxy urllib3 would fold the Impersonate-Group lines into one "a, b" group.
    auth = dict(host="http://127.0.0.1:6443", proxy="http://127.0.0.1:3128", impersonate_groups=["a", "b"])
    with pytest.raises(kube.KubeError, match="2 groups cannot go through a proxy to a plain http:// apiserver"):
        kube.build_connection(auth, environ={})
    kube.build_connection(dict(auth, impersonate_groups=["a"]), environ={})
    kube.build_connection(dict(auth, host="https://127.0.0.1:6443"), environ={})
    kube.build_connection(dict(auth, no_proxy="127.0.0.1"), environ={})


def test_impersonation_from_environment(fake):
    environ = {"K8S_AUTH_IMPERSONATE_USER": "bob", "K8S_AUTH_IMPERSONATE_GROUPS": "a, b"}
    with kube.session_from_params(dict(host=fake.url, api_key=TOKEN), environ=environ) as client:
        client.list_all("nodes")
    request = fake.list_requests("nodes")[0]
    assert (request["impersonate_user"], request["impersonate_groups"]) == ("bob", ["a", "b"])


# ----- single objects and writes share the loop ---------------------------------------

APPLIED = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"},
           "handler": "nvidia", "overhead": {"podFixed": {"cpu": "250m"}}}


def test_get_missing_is_none_and_a_missing_collection_is_not_served(fake):
    with lister(fake) as client:
        assert client.get("runtimeclasses", "nope") is None
        assert client.get("runtimeclasses", "rc-01")["handler"] == "handler-01"
        fake.respond_always("runtimeclasses", 404)  # a 404 that is not about the object
        with pytest.raises(kube.KubeError, match="/apis/node.k8s.io/v1/runtimeclasses is not served"):
            client.get("runtimeclasses", "rc-01")


def test_apply_creates_with_the_field_manager_and_a_dry_run_stores_nothing(fake):
    with lister(fake) as client:
        answer = client.apply("runtimeclasses", "nvidia", APPLIED, "gpurt", dry_run=True)
        assert answer["overhead"] == {"podFixed": {"cpu": "250m"}}
        assert fake.get_object("runtimeclasses", "nvidia") is None
        answer = client.apply("runtimeclasses", "nvidia", APPLIED, "gpurt")
    assert [entry["manager"] for entry in answer["metadata"]["managedFields"]] == ["gpurt"]
    patches = fake.object_requests("runtimeclasses", method="PATCH")
    assert [(r["query"], r["content_type"]) for r in patches] == [
        ({"fieldManager": "gpurt", "dryRun": "All"}, "application/apply-patch+yaml"),
        ({"fieldManager": "gpurt"}, "application/apply-patch+yaml")]


def test_apply_conflict_carries_the_causes_and_is_not_retried(fake):
    fake.set_objects("runtimeclasses", [{"metadata": {"name": "nvidia"}, "handler": "nvidia",
                                         "overhead": {"podFixed": {"cpu": "100m"}}}])
    with lister(fake) as client:
        with pytest.raises(kube.KubeError) as err:
            client.apply("runtimeclasses", "nvidia", APPLIED, "gpurt")
        assert (err.value.status, err.value.reason) == (409, "Conflict")
        assert [cause["field"] for cause in err.value.causes] == [".overhead.podFixed.cpu"]
        assert 'conflict with "before-first-apply"' in str(err.value)
        forced = client.apply("runtimeclasses", "nvidia", APPLIED, "gpurt", force=True)
    assert forced["overhead"] == {"podFixed": {"cpu": "250m"}}
    assert len(fake.object_requests("runtimeclasses", method="PATCH")) == 2


def test_a_write_is_retried_after_a_5xx_like_a_list(fake):
    sleeps = Sleeps()
    fake.script("runtimeclasses", [503, 200])
    with lister(fake, sleeps=sleeps) as client:
        client.apply("runtimeclasses", "nvidia", APPLIED, "gpurt")
        assert client.api_requests == 2
    assert sleeps == [DELAY]


def test_403_on_a_write_names_the_write_rbac(fake):
    fake.respond_always("runtimeclasses", 403)
    with lister(fake) as client, pytest.raises(kube.KubeError) as err:
        client.apply("runtimeclasses", "nvidia", APPLIED, "gpurt")
    assert str(err.value).startswith("403 Forbidden from %s applying runtimeclass nvidia: the identity may not "
                                     "patch runtimeclasses.node.k8s.io; rbac/runtime-gate-remediate.yaml grants"
                                     % fake.url)


def test_delete_is_conditional_and_a_retried_delete_that_finds_nothing_succeeded(fake):
    with lister(fake) as client:
        rv = client.get("runtimeclasses", "rc-01")["metadata"]["resourceVersion"]
        assert client.delete("runtimeclasses", "rc-01", resource_version=rv, dry_run=True) is True
        assert fake.get_object("runtimeclasses", "rc-01") is not None
        with pytest.raises(kube.KubeError, match="409 Conflict"):
            client.delete("runtimeclasses", "rc-01", resource_version="1")
        assert client.delete("runtimeclasses", "rc-01", resource_version=rv) is True
        assert client.delete("runtimeclasses", "rc-01") is False  # nothing there, first attempt

        # The first DELETE goes through but its answer is lost (503); the retry meets 404.
        calls = []
        original = fake.delete

        def delete_then_lose_the_first_answer(resource, name, body, query=None):
            calls.append(name)
            answer = original(resource, name, body, query)
            return (503, status_body(503, "lost")) if len(calls) == 1 else answer
        fake.delete = delete_then_lose_the_first_answer
        assert client.delete("runtimeclasses", "rc-02") is True
    assert [r["status"] for r in fake.object_requests("runtimeclasses", method="DELETE", name="rc-02")] == [503, 404]

"""_k8s/client.py: the connection to a cluster from kubernetes.core-style options: kubeconfig (context,
discovery order), host and token from the environment, certificates and TLS, tokens from every source
(stripped, refused with a line break inside, masked), the in-cluster service account, impersonation."""
import json
import shutil

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from tests.lib.fake_apiserver import FakeApiServer, status_body, write_kubeconfig
from tests.lib.kube_session import TOKEN, Sleeps, lister, make_runtimeclasses, needs_openssl


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


def test_arg_spec_hides_the_token():
    assert kube.AUTH_ARG_SPEC["api_key"]["no_log"] is True


# ----- TLS ----------------------------------------------------------------------------

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

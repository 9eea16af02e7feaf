"""Hostile-input suite, class "no secret on any output": the real cluster_audit.yml through the
real ansible-playbook, at default verbosity and at -vvv, with every way a credential reaches the
collection; stdout and stderr together must not carry it in any form (as is, stripped, escaped).
The real kube-apiserver of the shared cluster (tests/lib/real_cluster.py), over TLS with its CA, rejects the
secret tokens (401) so that every failure path runs too; an accepted token is one of an identity with no RBAC
grant (403), so no run reads the shared cluster's objects."""
import json
import os
import subprocess
import sys

import pytest

from tests.lib.real_cluster import write_kubeconfig

pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
PLAYBOOK = os.path.join(REPO, "playbooks", "cluster_audit.yml")
SECRET = "s3cr3t-refresh-7f3a9c0e5b1d4e2a"  # never accepted, never to be printed
VERBOSITY = ("", "-vvv")


def forms(secret):
    return set([secret, secret.strip(), json.dumps(secret)[1:-1], repr(secret)[1:-1]])


def exec_user(tmp_path, stderr_line, exit_code, token=None):
    plugin = tmp_path / "cred-plugin.py"
    status = {"token": token} if token else {}
    plugin.write_text(
        "import json, sys\n"
        "sys.stderr.write(%r)\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential', "
        "'status': %r}))\n"
        "sys.exit(%d)\n" % (stderr_line, status, exit_code))
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                     "args": [str(plugin)], "interactiveMode": "Never"}}


def kubeconfig_with_user(path, cluster, user):
    import yaml
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "clusters": [{"name": "k", "cluster": {"server": cluster.server, "certificate-authority": cluster.ca}}],
           "users": [{"name": "u", "user": user}],
           "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}
    with open(path, "w") as handle:
        yaml.safe_dump(doc, handle)
    return path


def run_cluster_audit(tmp_path, extra_vars, verbosity):
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("K8S_AUTH_", "ANSIBLE_")) and k != "KUBECONFIG")
    env.update(ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_NOCOLOR="1", HOME=str(tmp_path),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"), PATH=BIN + os.pathsep + env.get("PATH", ""))
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", PLAYBOOK, "-e", json.dumps(extra_vars)]
    if verbosity:
        argv.append(verbosity)
    proc = subprocess.run(argv, cwd=REPO, env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def assert_no_secret(output, secret):
    leaked = [form for form in forms(secret) if form in output]
    assert not leaked, "secret leaked (%s):\n%s" % (leaked, output[-4000:])
    assert "Traceback" not in output, output[-4000:]


@pytest.fixture
def cluster(real_cluster):
    return real_cluster


def good_token(cluster):
    """A token the apiserver accepts, of an identity that may read nothing (403)."""
    return cluster.token("gpurt-nobody")


@pytest.mark.parametrize("verbosity", VERBOSITY)
def test_a_failing_exec_plugin_that_prints_the_token_leaks_nothing(cluster, tmp_path, verbosity):
    user = exec_user(tmp_path, "refresh failed for token %s\n" % SECRET, 1)
    path = kubeconfig_with_user(str(tmp_path / "kc"), cluster, user)
    rc, output = run_cluster_audit(tmp_path, {"gpurt_kubeconfig": path}, verbosity)
    assert rc != 0, output
    assert_no_secret(output, SECRET)
    assert "exec credential plugin failed with exit code 1" in output, output[-3000:]
    assert "errantly sent data directly to stderr" not in output


@pytest.mark.parametrize("verbosity", VERBOSITY)
def test_an_exec_plugin_that_succeeds_and_chatters_on_stderr_leaks_nothing(cluster, tmp_path, verbosity):
    good = good_token(cluster)
    user = exec_user(tmp_path, "got token %s for you\n" % good, 0, token=good)
    path = kubeconfig_with_user(str(tmp_path / "kc"), cluster, user)
    rc, output = run_cluster_audit(tmp_path, {"gpurt_kubeconfig": path}, verbosity)
    assert_no_secret(output, good)
    assert "401" not in output and "403 Forbidden" in output, output[-3000:]  # the token was used


@pytest.mark.parametrize("verbosity", VERBOSITY)
def test_a_token_file_ending_in_a_newline_leaks_nothing(cluster, tmp_path, verbosity):
    token_file = tmp_path / "token"
    token_file.write_text(SECRET + "\n")
    path = kubeconfig_with_user(str(tmp_path / "kc"), cluster, {"tokenFile": str(token_file)})
    rc, output = run_cluster_audit(tmp_path, {"gpurt_kubeconfig": path}, verbosity)
    assert rc != 0 and "401 Unauthorized" in output, output[-3000:]
    assert_no_secret(output, SECRET + "\n")


@pytest.mark.parametrize("verbosity", VERBOSITY)
def test_a_bearer_token_in_the_kubeconfig_leaks_nothing(cluster, tmp_path, verbosity):
    path = write_kubeconfig(str(tmp_path / "kc"), cluster.server, cluster.ca, "u", token=SECRET)
    rc, output = run_cluster_audit(tmp_path, {"gpurt_kubeconfig": path}, verbosity)
    assert rc != 0 and "401 Unauthorized" in output, output[-3000:]
    assert_no_secret(output, SECRET)


@pytest.mark.parametrize("verbosity", VERBOSITY)
def test_a_bearer_token_in_a_variable_leaks_nothing(cluster, tmp_path, verbosity):
    rc, output = run_cluster_audit(tmp_path, {"gpurt_k8s_host": cluster.server, "gpurt_k8s_ca_cert": cluster.ca,
                                              "gpurt_k8s_api_key": SECRET + "\n"}, verbosity)
    assert rc != 0 and "401 Unauthorized" in output, output[-3000:]
    assert_no_secret(output, SECRET + "\n")

"""The cluster modules through the real ansible / ansible-playbook CLIs, against the shared real
control plane (tests/lib/real_cluster.py): kubeconfig (token, tokenFile, client certificate), host
with api_key or client_cert, the in-cluster service-account files, impersonation, RBAC refusals by the
real authorizer. This module's objects are named cmod-* and carry the label gpurt.test/cmod, so the
shared cluster's other objects are left out of every comparison. The stand-in apiserver serves only
the tests marked so, for a fault a real apiserver cannot be made to produce."""
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest
from kubernetes import utils

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.fake_apiserver import FakeApiServer, status_body, write_kubeconfig
from tests.lib.real_cluster import write_kubeconfig as real_kubeconfig

pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The controller's bin directory (make test-oldest: ansible-core 2.16), and its Python, which the
# implicit localhost would use.
BIN = ansible_run.BIN
PYTHON = os.path.join(BIN, "python")
TOKEN = "integration-token-9c1e2f"
WRONG = "wrong-token-5b7d33a0"
LABEL = "gpurt.test/cmod"
AUDIT_SA = "system:serviceaccount:gpurt-runtime-gate:runtime-gate-audit"

RUNTIMECLASSES = [
    {"metadata": {"name": "nvidia"}, "handler": "nvidia",
     "scheduling": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}},
    {"metadata": {"name": "kata"}, "handler": "kata-qemu", "overhead": {"podFixed": {"cpu": "250m"}}},
    {"metadata": {"name": "nvidia-cdi"}, "handler": "nvidia-cdi"},
]
NODES = [
    {"metadata": {"name": "gpu-%d" % index, "labels": {"nvidia.com/gpu.present": "true"}},
     "status": {"runtimeHandlers": [{"name": ""}, {"name": "nvidia"}, {"name": "runc"}],
                "nodeInfo": {"containerRuntimeVersion": "containerd://2.1.9"}}}
    for index in (1, 2)
] + [{"metadata": {"name": "cpu-1", "labels": {}}, "status": {"nodeInfo": {"kubeletVersion": "v1.29.4"}}}]


@pytest.fixture(scope="module")
def cluster(real_cluster, tmp_path_factory):
    """cmod-* RuntimeClasses (each selects the label gpurt.test/cmod, so no other test's Node can
    take them) and Nodes on the shared real cluster; the audit identity (rbac/), a group bound to
    it for client certificates, and an identity that may list RuntimeClasses but not Nodes."""
    api = Api(real_cluster.kubeconfig)
    api.runtimeclass("cmod-kata", "kata-qemu", overhead={"cpu": "250m"}, selector={LABEL: "kata"})
    api.runtimeclass("cmod-nvidia", "nvidia", selector={LABEL: "gpu"})
    api.runtimeclass("cmod-nvidia-cdi", "nvidia-cdi", selector={LABEL: "cdi"})
    for name in ("cmod-gpu-1", "cmod-gpu-2"):
        api.node(name, labels={LABEL: "gpu"}, handlers=["nvidia", "runc"])
    api.node("cmod-cpu-1", labels={LABEL: "cpu"})  # reports no runtimeHandlers
    utils.create_from_yaml(api.api_client, os.path.join(REPO, "rbac", "runtime-gate-audit.yaml"), apply=True,
                           namespace="gpurt-runtime-gate")
    rbac = "rbac.authorization.k8s.io"
    for body in (
            {"kind": "ClusterRoleBinding", "metadata": {"name": "cmod-auditors"},
             "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "gpurt-runtime-gate-audit"},
             "subjects": [{"apiGroup": rbac, "kind": "Group", "name": "cmod-auditors"}]},
            {"kind": "ClusterRole", "metadata": {"name": "cmod-runtimeclasses-only"},
             "rules": [{"apiGroups": ["node.k8s.io"], "resources": ["runtimeclasses"], "verbs": ["get", "list"]}]},
            {"kind": "ClusterRoleBinding", "metadata": {"name": "cmod-runtimeclasses-only"},
             "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "cmod-runtimeclasses-only"},
             "subjects": [{"apiGroup": rbac, "kind": "Group", "name": "cmod-runtimeclasses-only"}]}):
        utils.create_from_dict(api.api_client, dict(body, apiVersion=rbac + "/v1"), apply=True)
    base = tmp_path_factory.mktemp("cmod")
    # the admin's kubeconfig, and an audit ServiceAccount token as `kubectl create token` prints it
    token = api.core.create_namespaced_service_account_token(
        "runtime-gate-audit", "gpurt-runtime-gate", {"spec": {"expirationSeconds": 3600}}).status.token
    yield {"api": api, "cluster": real_cluster, "kubeconfig": real_cluster.kubeconfig, "server": real_cluster.server,
           "ca": real_cluster.ca, "audit_token": token, "base": base}
    api.close()


def ours(items):
    return [unlisted(item) for item in items if item["name"].startswith("cmod-")]


def unlisted(item):
    """An object without the time its listing finished (a Node's listed_at differs from one listing to the next)."""
    if "listed_at" not in item:
        return item
    assert isinstance(item["listed_at"], float) and abs(item["listed_at"] - time.time()) < 600, item
    return dict((key, value) for key, value in item.items() if key != "listed_at")


def identity(cluster, user, group):
    """A kubeconfig with a client certificate for USER in GROUP (per process: xdist workers sign apart)."""
    user = "%s-%d" % (user, os.getpid())
    cert, key = cluster["cluster"].user_cert(user, [group])
    path = str(cluster["base"] / ("kubeconfig-" + user))
    return real_kubeconfig(path, cluster["server"], cluster["ca"], user, cert=cert, key=key), user, cert, key


@pytest.fixture
def kubeconfig(cluster):
    return cluster["kubeconfig"]


@pytest.fixture
def ansible_env(tmp_path):
    env = dict((key, value) for key, value in os.environ.items()
               if not key.startswith(("K8S_AUTH_", "ANSIBLE_")) and key != "KUBECONFIG")
    env.update(
        ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"),
        ANSIBLE_CALLBACK_RESULT_FORMAT="json",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"),
        ANSIBLE_REMOTE_TEMP=str(tmp_path / "ansible-remote"),
        HOME=str(tmp_path),  # no ~/.kube/config from the machine running the tests
    )
    return env


def run(env, program, *args):
    proc = subprocess.run([os.path.join(BIN, program)] + list(args), cwd=REPO, env=env,
                          check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
    return proc.returncode, proc.stdout


def adhoc(env, module, module_args, *extra, **kwargs):
    """Run one module on localhost; (rc, result dict, full output)."""
    interpreter = kwargs.get("interpreter", PYTHON)
    rc, output = run(env, "ansible", "localhost", "-i", "localhost,", "-c", "local",
                     "-e", "ansible_python_interpreter=%s" % interpreter,
                     "-m", "gpurt.runtime_gate." + module, "-a", module_args, *extra)
    match = re.search(r"^localhost \| [A-Z!]+ => ", output, re.MULTILINE)
    assert match, output
    result, _unused = json.JSONDecoder().raw_decode(output[match.end():].lstrip())
    return rc, result, output


def test_runtimeclass_info_with_kubeconfig_pages_through_the_list(cluster, ansible_env):
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "kubeconfig=%s page_size=2" % cluster["kubeconfig"])
    assert rc == 0, output
    mine = ours(result["runtimeclasses"])
    assert [item["name"] for item in mine] == ["cmod-kata", "cmod-nvidia", "cmod-nvidia-cdi"]
    assert mine[0]["overhead"] == {"podFixed": {"cpu": "250m"}}
    assert mine[1]["node_selector"] == {LABEL: "gpu"}
    assert result["source"] == "cluster"
    assert result["server"] == cluster["server"]
    # pages of 2 through the real continue tokens, one list call
    names = [item["name"] for item in result["runtimeclasses"]]
    assert len(names) == len(set(names))
    assert (result["api_requests"], result["api_list_calls"]) == (math.ceil(len(names) / 2.0), 1)
    assert result["changed"] is False


def test_runtimeclass_info_lists_the_nodes_too_in_one_session(cluster, ansible_env):
    kubeconfig = cluster["kubeconfig"]
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "kubeconfig=%s list_nodes=true page_size=200" % kubeconfig)
    assert rc == 0, output
    assert [item["name"] for item in ours(result["runtimeclasses"])] == ["cmod-kata", "cmod-nvidia", "cmod-nvidia-cdi"]
    # the same normalized Nodes node_info returns
    _rc, by_node_info, _output = adhoc(ansible_env, "node_info", "kubeconfig=%s" % kubeconfig)
    assert ours(result["nodes"]) == ours(by_node_info["nodes"])
    assert [node["name"] for node in ours(result["nodes"])] == ["cmod-cpu-1", "cmod-gpu-1", "cmod-gpu-2"]
    # one list per resource, each paged
    pages = sum(math.ceil(len(result[key]) / 200.0) for key in ("runtimeclasses", "nodes"))
    assert (result["api_requests"], result["api_list_calls"]) == (pages, 2)
    assert result["source"] == "cluster" and result["server"] == cluster["server"]


def test_runtimeclass_info_without_list_nodes_returns_no_nodes(cluster, ansible_env):
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "kubeconfig=%s" % cluster["kubeconfig"])
    assert rc == 0, output
    assert "nodes" not in result and result["api_list_calls"] == 1


def test_runtimeclass_info_manifests_with_nodes_from_the_cluster(cluster, ansible_env, tmp_path):
    manifest = tmp_path / "rc.yaml"
    manifest.write_text("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n")
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "src=%s kubeconfig=%s list_nodes=true"
                               % (manifest, cluster["kubeconfig"]))
    assert rc == 0, output
    assert [item["source"] for item in result["runtimeclasses"]] == [str(manifest)]
    assert [node["source"] for node in ours(result["nodes"])] == ["cluster"] * 3
    assert (result["source"], result["api_list_calls"]) == (str(manifest), 1)


def test_runtimeclass_info_fails_when_the_nodes_may_not_be_listed(cluster, ansible_env):
    """The real authorizer: an identity that may list RuntimeClasses and not Nodes."""
    kubeconfig, user, _cert, _key = identity(cluster, "cmod-rc-only", "cmod-runtimeclasses-only")
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "kubeconfig=%s list_nodes=true" % kubeconfig)
    assert rc == 2 and "localhost | FAILED! =>" in output, output
    assert "403 Forbidden" in result["msg"] and "listing nodes" in result["msg"], result["msg"]
    assert "may not list nodes" in result["msg"], result["msg"]
    assert 'User "%s" cannot list resource "nodes"' % user in result["msg"], result["msg"]
    assert result["api_list_calls"] == 2 and result["api_requests"] >= 2  # RuntimeClasses listed, Nodes once, no retry
    assert "Traceback" not in output


def test_node_info_with_host_and_api_key_in_check_mode(cluster, ansible_env):
    # The token comes in through a variable: ansible-core echoes literal ad-hoc -a text on failure.
    rc, result, output = adhoc(
        ansible_env, "node_info",
        "host=%s ca_cert=%s api_key={{ audit_token }} label_selector=%s=gpu" % (cluster["server"], cluster["ca"], LABEL),
        "-e", "audit_token=%s" % cluster["audit_token"], "--check")
    assert rc == 0, output
    assert [node["name"] for node in result["nodes"]] == ["cmod-gpu-1", "cmod-gpu-2"]
    assert result["nodes"][0]["runtime_handlers"] == ["nvidia", "runc"]
    assert result["nodes"][0]["container_runtime_version"] == "containerd://2.3.7"
    assert cluster["audit_token"] not in output


def test_node_info_names_filter_and_not_found(cluster, ansible_env):
    rc, result, output = adhoc(ansible_env, "node_info", "kubeconfig=%s names=cmod-cpu-1,cmod-gpu-9"
                               % cluster["kubeconfig"])
    assert rc == 0, output
    assert [node["name"] for node in result["nodes"]] == ["cmod-cpu-1"]
    assert result["nodes"][0]["runtime_handlers"] is None  # its status has no runtimeHandlers
    assert result["names_not_found"] == ["cmod-gpu-9"]
    assert "no Node named cmod-gpu-9" in output


def test_src_manifests_contact_no_cluster(cluster, ansible_env, tmp_path):
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "10-gpu.yaml").write_text(textwrap.dedent("""\
        apiVersion: node.k8s.io/v1
        kind: RuntimeClass
        metadata: {name: nvidia}
        handler: nvidia
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: unrelated}
        """))
    (manifests / "20-list.json").write_text(json.dumps({
        "kind": "RuntimeClassList", "items": [{"metadata": {"name": "kata"}, "handler": "kata-qemu"}]}))
    ansible_env["K8S_AUTH_KUBECONFIG"] = cluster["kubeconfig"]  # reachable, yet must not be used
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "src=%s" % manifests)
    assert rc == 0, output
    assert [(item["name"], item["handler"]) for item in result["runtimeclasses"]] == [
        ("kata", "kata-qemu"), ("nvidia", "nvidia")]
    assert result["source"] == str(manifests)
    assert (result["api_requests"], result["api_list_calls"]) == (0, 0)


def test_invalid_runtimeclasses_fail_listing_each(ansible_env, tmp_path):
    """Stand-in: RuntimeClasses without a name or handler, which a real apiserver refuses to store."""
    with FakeApiServer(runtimeclasses=RUNTIMECLASSES + [{"metadata": {"name": "typo"}}, {"handler": "x"}],
                       token=TOKEN) as fake:
        kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), fake.url, token=TOKEN)
        rc, result, output = adhoc(ansible_env, "runtimeclass_info", "kubeconfig=%s" % kubeconfig)
        assert rc == 2, output
        assert result["msg"] == ("2 invalid RuntimeClass object(s) from cluster: RuntimeClass without metadata.name "
                                 "(from cluster) has no metadata.name; RuntimeClass 'typo' (from cluster) has no handler")
        assert "Traceback" not in output

        rc, result, output = adhoc(ansible_env, "runtimeclass_info", "kubeconfig=%s on_invalid=warn" % kubeconfig)
    assert rc == 0, output
    assert len(result["runtimeclasses"]) == 3
    assert len(result["invalid"]) == 2
    assert "left out: RuntimeClass 'typo' (from cluster) has no handler" in output


@pytest.mark.parametrize("how", ["kubeconfig", "api_key"])
def test_401_fails_clearly_without_traceback_or_token_even_with_vvv(cluster, ansible_env, tmp_path, how):
    server = cluster["server"]
    if how == "kubeconfig":
        path = real_kubeconfig(str(tmp_path / "wrong"), server, cluster["ca"], "wrong", token=WRONG)
        args, extra = "kubeconfig=%s" % path, []
    else:
        args, extra = "host=%s ca_cert=%s api_key={{ audit_token }}" % (server, cluster["ca"]), \
            ["-e", "audit_token=%s" % WRONG]
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", args, "-vvv", *extra)
    assert rc == 2, output
    assert "localhost | FAILED! =>" in output
    assert result["msg"] == ("401 Unauthorized from %s listing runtimeclasses: the bearer token or client "
                             "certificate was rejected" % server)
    assert "Traceback" not in output
    assert WRONG not in output
    assert result["api_requests"] == 1  # not retried


def test_unreachable_apiserver_fails_after_retries(ansible_env):
    rc, result, output = adhoc(ansible_env, "node_info", "host=http://127.0.0.1:1 retries=1 retry_delay=0.01")
    assert rc == 2, output
    assert result["msg"] == ("gave up after 2 attempts listing nodes: cannot connect to http://127.0.0.1:1 "
                             "(Connection refused)")
    assert result["api_requests"] == 2
    assert "Traceback" not in output


def test_missing_kubernetes_library_is_a_clear_failure(kubeconfig, ansible_env, tmp_path):
    # A bare venv of the same Python: stdlib only, no kubernetes client.
    bare = tmp_path / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = str(bare / "bin" / "python")
    probe = subprocess.run([python, "-c", "import kubernetes"], check=False, stderr=subprocess.DEVNULL)
    assert probe.returncode != 0
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "kubeconfig=%s" % kubeconfig, interpreter=python)
    assert rc == 2, output
    assert "Failed to import the required Python library (kubernetes)" in result["msg"]
    assert "Traceback" not in output


def test_play_over_four_hosts_lists_the_cluster_once(kubeconfig, ansible_env, tmp_path):
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[gpu]\n" + "".join(
        "node%d ansible_connection=local ansible_python_interpreter=%s\n" % (index, PYTHON)
        for index in range(1, 5)))
    report = tmp_path / "report.json"
    playbook = tmp_path / "audit.yml"
    playbook.write_text(textwrap.dedent("""\
        - hosts: gpu
          gather_facts: false
          tasks:
            - name: List RuntimeClasses once for the play
              gpurt.runtime_gate.runtimeclass_info:
                kubeconfig: {kubeconfig}
                page_size: 5000
              run_once: true
              delegate_to: localhost
              register: gpurt_runtimeclasses

            - name: Every host sees the result
              ansible.builtin.assert:
                that:
                  - gpurt_runtimeclasses.runtimeclasses | selectattr('name', 'match', 'cmod-')
                    | map(attribute='handler') | list == ['kata-qemu', 'nvidia', 'nvidia-cdi']

            - name: Keep the registered result for the test
              ansible.builtin.copy:
                content: "{{{{ gpurt_runtimeclasses | to_json }}}}"
                dest: {report}
              run_once: true
              delegate_to: localhost
        """).format(kubeconfig=kubeconfig, report=report))
    rc, output = run(ansible_env, "ansible-playbook", "-i", str(inventory), str(playbook))
    assert rc == 0, output
    for index in range(1, 5):
        assert re.search(r"node%d\s*: ok=\d+ .*failed=0" % index, output), output
    assert output.count("TASK [List RuntimeClasses once for the play]") == 1
    result = json.loads(report.read_text())
    assert (result["api_requests"], result["api_list_calls"]) == (1, 1)


# ----- every way to authenticate, judged by the real apiserver ------------------------------

def test_client_certificate_in_a_kubeconfig_and_as_options(cluster, ansible_env):
    kubeconfig, _user, cert, key = identity(cluster, "cmod-cert", "cmod-auditors")
    rc, by_kubeconfig, output = adhoc(ansible_env, "node_info", "kubeconfig=%s label_selector=%s=gpu" % (kubeconfig, LABEL))
    assert rc == 0, output
    assert [node["name"] for node in by_kubeconfig["nodes"]] == ["cmod-gpu-1", "cmod-gpu-2"]
    rc, by_options, output = adhoc(ansible_env, "node_info", "host=%s ca_cert=%s client_cert=%s client_key=%s "
                                   "label_selector=%s=gpu" % (cluster["server"], cluster["ca"], cert, key, LABEL))
    assert rc == 0, output
    assert ours(by_options["nodes"]) == ours(by_kubeconfig["nodes"])


def test_in_cluster_service_account_files(cluster, tmp_path):
    """A pod's view: KUBERNETES_SERVICE_HOST/PORT, and the token (ending in a newline, as the kubelet
    projects it) and ca.crt in the service-account directory; no kubeconfig anywhere."""
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text(cluster["audit_token"] + "\n")
    (directory / "ca.crt").write_text(open(cluster["ca"]).read())
    port = cluster["server"].rsplit(":", 1)[1]
    environ = {"HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}
    with kube.session_from_params({}, environ=environ, service_account_dir=str(directory)) as client:
        nodes = client.list_all("nodes", label_selector="%s=gpu" % LABEL)
    assert [node["metadata"]["name"] for node in nodes] == ["cmod-gpu-1", "cmod-gpu-2"]
    # the audit identity's rights, by the real authorizer: read, and no write (a dry run is authorized too)
    with kube.session_from_params(dict(retries=0), environ=environ, service_account_dir=str(directory)) as client:
        assert client.get("runtimeclasses", "cmod-kata")["handler"] == "kata-qemu"
        with pytest.raises(kube.KubeError) as err:
            client.delete("runtimeclasses", "cmod-kata", dry_run=True)
    assert "403 Forbidden" in str(err.value), str(err.value)
    assert 'User "%s" cannot delete resource "runtimeclasses"' % AUDIT_SA in str(err.value)
    assert cluster["audit_token"] not in str(err.value)


@pytest.mark.parametrize("user, groups, wanted", [
    (AUDIT_SA, [], "ok"),
    ("gpurt-nobody", [], 'User "gpurt-nobody" cannot list resource "runtimeclasses"'),
    ("cmod-someone", ["cmod-auditors"], "ok"),
])
def test_impersonation_is_judged_by_the_real_authorizer(cluster, ansible_env, user, groups, wanted):
    args = "kubeconfig=%s impersonate_user=%s" % (cluster["kubeconfig"], user)
    if groups:
        args += " impersonate_groups=%s" % ",".join(groups)
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", args)
    if wanted == "ok":
        assert rc == 0, output
        assert [item["name"] for item in ours(result["runtimeclasses"])] == [
            "cmod-kata", "cmod-nvidia", "cmod-nvidia-cdi"]
    else:
        assert rc == 2, output
        assert "403 Forbidden" in result["msg"] and wanted in result["msg"], result["msg"]
        assert "Traceback" not in output


def test_an_identity_that_may_not_impersonate_is_refused(cluster, ansible_env, tmp_path):
    kubeconfig = real_kubeconfig(str(tmp_path / "audit"), cluster["server"], cluster["ca"], "audit",
                                 token=cluster["audit_token"])
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "kubeconfig=%s impersonate_user=gpurt-admin" % kubeconfig)
    assert rc == 2, output
    assert "403 Forbidden" in result["msg"], result["msg"]
    assert "the identity may not impersonate user gpurt-admin (impersonate_user, impersonate_groups)" in result["msg"]
    assert 'User "%s" cannot impersonate' % AUDIT_SA in result["msg"], result["msg"]  # the authorizer's words
    assert "apply rbac/" not in result["msg"]
    assert cluster["audit_token"] not in output


# ----- a token ending in a newline, from every source, never printed ----------------------

NEWLINE_TOKEN = "s3cr3t-nl-token-4d2c9e"


def vaulted_vars(tmp_path, name, value):
    """A vars file holding value encrypted with ansible-vault, and its password file."""
    password = tmp_path / "vault-pass"
    password.write_text("vault-test-password\n")
    proc = subprocess.run([os.path.join(BIN, "ansible-vault"), "encrypt_string", "--vault-password-file",
                           str(password), "--stdin-name", name], input=value, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=True)
    path = tmp_path / "vault-vars.yml"
    path.write_text(proc.stdout)
    return str(path), str(password)


def token_source(ansible_env, tmp_path, source, server, token, ca=None):
    """(module args, extra CLI args) that give TOKEN by SOURCE."""
    ca_arg = " ca_cert=%s" % ca if ca else ""
    if source == "vaulted gpurt_k8s_api_key":
        path, password = vaulted_vars(tmp_path, "gpurt_k8s_api_key", token)
        return "host=%s%s api_key={{ gpurt_k8s_api_key }}" % (server, ca_arg), \
            ["-e", "@" + path, "--vault-password-file", password]
    if source == "K8S_AUTH_API_KEY":
        ansible_env.update(K8S_AUTH_HOST=server, K8S_AUTH_API_KEY=token)
        if ca:
            ansible_env["K8S_AUTH_SSL_CA_CERT"] = ca
        return "", []
    kubeconfig = tmp_path / "kubeconfig"
    ca_line = ", certificate-authority: '%s'" % ca if ca else ""
    if source == "kubeconfig token: |":
        user = "token: |\n          %s" % token.strip()
    else:
        (tmp_path / "token").write_text(token)  # kubectl create token ... > token
        user = "tokenFile: %s" % (tmp_path / "token")
    kubeconfig.write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: Config
        current-context: c
        clusters: [{name: k, cluster: {server: '%s'%s}}]
        contexts: [{name: c, context: {cluster: k, user: u}}]
        users:
        - name: u
          user:
            %s
        """) % (server, ca_line, user))
    return "kubeconfig=%s" % kubeconfig, []


SOURCES = ["vaulted gpurt_k8s_api_key", "K8S_AUTH_API_KEY", "kubeconfig token: |", "kubeconfig tokenFile"]


@pytest.mark.parametrize("source", SOURCES)
def test_a_token_ending_in_a_newline_works_and_is_never_printed(cluster, ansible_env, tmp_path, source):
    """The audit ServiceAccount's real token, as `kubectl create token` prints it (a newline at the end)."""
    token = cluster["audit_token"] + "\n"
    args, extra = token_source(ansible_env, tmp_path, source, cluster["server"], token, ca=cluster["ca"])
    rc, result, output = adhoc(ansible_env, "node_info", (args + " label_selector=%s=gpu" % LABEL).strip(),
                               "-vvv", *extra)
    assert rc == 0, output
    assert [node["name"] for node in result["nodes"]] == ["cmod-gpu-1", "cmod-gpu-2"]
    assert cluster["audit_token"] not in output


@pytest.mark.parametrize("source", SOURCES)
def test_a_token_echoed_in_a_5xx_is_never_printed(ansible_env, tmp_path, source):
    """Stand-in: a 500 whose body echoes the Authorization header, raw and escaped."""
    token = NEWLINE_TOKEN + "\n"
    with FakeApiServer(runtimeclasses=RUNTIMECLASSES, nodes=NODES, token=NEWLINE_TOKEN) as fake:
        args, extra = token_source(ansible_env, tmp_path, source, fake.url, token)
        echo = "got Authorization: Bearer %s / %r / %s" % (token, "Bearer " + token, json.dumps(token))
        fake.respond_always("nodes", {"status": 500, "body": status_body(500, echo)})
        rc, result, output = adhoc(ansible_env, "node_info", (args + " retries=0").strip(), "-vvv", *extra)
        assert [r["auth"] for r in fake.list_requests("nodes")] == ["ok"]
    assert rc == 2, output
    assert "500 Internal Server Error" in result["msg"]
    assert NEWLINE_TOKEN not in output
    assert "s3cr3t" not in output


# ----- in the controller process or as a module: the same result --------------------------

IN_PROCESS = "listing in the controller process, no module started"


def other_interpreter(tmp_path):
    """A path that runs this same Python but is not the controller's own interpreter (a wrapper
    script in another directory), so the list modules' action plugin must start the module."""
    wrapper = tmp_path / "other-bin" / "python"
    wrapper.parent.mkdir()
    wrapper.write_text('#!/bin/sh\nexec "%s" "$@"\n' % PYTHON)
    wrapper.chmod(0o755)
    return str(wrapper)


def comparable(result, everything=False):
    """The result without what may differ between two runs on the shared cluster: other tests' objects
    (made meanwhile by another xdist worker) and so the page count."""
    result = dict((key, value) for key, value in result.items()
                  if key not in ("invocation", "_ansible_no_log", "api_requests"))
    for key in ("runtimeclasses", "nodes"):
        if key in result:
            result[key] = [unlisted(item) for item in result[key]] if everything else ours(result[key])
    return result


@pytest.fixture
def fake():
    with FakeApiServer(runtimeclasses=RUNTIMECLASSES + [{"metadata": {"name": "typo"}}], nodes=NODES,
                       token=TOKEN) as server:
        yield server


def same_both_ways(ansible_env, tmp_path, module, args, rc_wanted, secret, everything=False):
    extra = ["-vvv", "-e", "audit_token=%s" % WRONG]
    rc, in_process, output = adhoc(ansible_env, module, args, *extra)
    assert IN_PROCESS in output and "Using module file" not in output, output
    rc_module, by_module, module_output = adhoc(ansible_env, module, args, *extra,
                                                interpreter=other_interpreter(tmp_path))
    assert re.search(r"running the module \(ansible_python_interpreter \S+/other-bin/python is not the "
                     r"controller's", module_output), module_output
    assert "Using module file" in module_output and IN_PROCESS not in module_output
    assert (rc, rc_module) == (rc_wanted, rc_wanted), output + module_output
    assert comparable(in_process, everything) == comparable(by_module, everything)
    warned = sorted(re.findall(r"\[WARNING\]: (.*)", output))
    assert warned == sorted(re.findall(r"\[WARNING\]: (.*)", module_output))
    assert secret not in output and secret not in module_output
    assert "Traceback" not in output + module_output


@pytest.mark.parametrize("module, args, rc_wanted", [
    ("runtimeclass_info", "kubeconfig={kubeconfig} list_nodes=true page_size=200", 0),
    ("node_info", "kubeconfig={kubeconfig} names=cmod-cpu-1,cmod-gpu-9 label_selector=", 0),
    ("runtimeclass_info", "kubeconfig={rc_only} list_nodes=true retries=0", 2),
    ("node_info", "host={url} ca_cert={ca} api_key={{{{ audit_token }}}}", 2),
])
def test_the_controller_process_and_the_module_return_the_same(cluster, ansible_env, tmp_path, module, args,
                                                               rc_wanted):
    rc_only = identity(cluster, "cmod-rc-only", "cmod-runtimeclasses-only")[0] if "rc_only" in args else None
    args = args.format(kubeconfig=cluster["kubeconfig"], url=cluster["server"], ca=cluster["ca"], rc_only=rc_only)
    same_both_ways(ansible_env, tmp_path, module, args, rc_wanted, WRONG)


def test_the_controller_process_and_the_module_warn_the_same_of_invalid_objects(fake, ansible_env, tmp_path):
    """Stand-in: a RuntimeClass without a handler, which a real apiserver refuses to store."""
    kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), fake.url, token=TOKEN)
    same_both_ways(ansible_env, tmp_path, "runtimeclass_info", "kubeconfig=%s on_invalid=warn" % kubeconfig, 0, TOKEN,
                   everything=True)


def test_become_environment_and_async_start_the_module(kubeconfig, ansible_env, tmp_path):
    report = tmp_path / "results.json"
    playbook = tmp_path / "ways.yml"
    playbook.write_text(textwrap.dedent("""\
        - hosts: localhost
          gather_facts: false
          module_defaults:
            gpurt.runtime_gate.runtimeclass_info: {{kubeconfig: {kubeconfig}, list_nodes: true}}
          tasks:
            - name: In the controller process
              gpurt.runtime_gate.runtimeclass_info:
              register: in_process
            - name: With an environment
              gpurt.runtime_gate.runtimeclass_info:
              environment: {{GPURT_TEST_MARK: "1"}}
              register: with_environment
            - name: With become
              gpurt.runtime_gate.runtimeclass_info:
              become: true
              become_method: ansible.builtin.su
              register: with_become
            - name: In the background
              gpurt.runtime_gate.runtimeclass_info:
              async: 60
              poll: 1
              register: with_async
            - name: Keep the results for the test
              ansible.builtin.copy:
                content: "{{{{ dict(in_process=in_process, with_environment=with_environment, with_become=with_become,
                  with_async=with_async) | to_json }}}}"
                dest: {report}
        """).format(kubeconfig=kubeconfig, report=report))
    # HOME is tmp_path: an absolute async dir, so that the job and async_status agree on where it is.
    ansible_env["ANSIBLE_ASYNC_DIR"] = str(tmp_path / "async")
    rc, output = run(ansible_env, "ansible-playbook", "-i", "localhost,", "-c", "local", "-vvv",
                     "-e", "ansible_python_interpreter=%s" % PYTHON, str(playbook))
    assert rc == 0, output
    assert output.count(IN_PROCESS) == 1, output
    for why in ("the task sets environment", "become", "async"):
        assert "gpurt.runtime_gate.runtimeclass_info: running the module (%s)" % why in output, output
    results = json.loads(report.read_text())
    # cmod-* only: another xdist worker may add objects to the shared cluster between the tasks
    listed = dict((way, (ours(result["runtimeclasses"]), ours(result["nodes"]), result["api_list_calls"]))
                  for way, result in results.items())
    assert listed["in_process"][0] and listed["in_process"][1]
    assert listed["with_environment"] == listed["in_process"]
    assert listed["with_become"] == listed["in_process"]
    assert listed["with_async"] == listed["in_process"]

"""The cluster modules through the real ansible / ansible-playbook CLIs, against the fake apiserver."""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from tests.lib import ansible_run
from tests.lib.fake_apiserver import FakeApiServer, status_body, write_kubeconfig

pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The controller's bin directory (make test-oldest: ansible-core 2.16), and its Python, which the
# implicit localhost would use.
BIN = ansible_run.BIN
PYTHON = os.path.join(BIN, "python")
TOKEN = "integration-token-9c1e2f"
WRONG = "wrong-token-5b7d33a0"

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


@pytest.fixture
def fake():
    with FakeApiServer(runtimeclasses=RUNTIMECLASSES, nodes=NODES, token=TOKEN) as server:
        yield server


@pytest.fixture
def kubeconfig(fake, tmp_path):
    return write_kubeconfig(str(tmp_path / "kubeconfig"), fake.url, token=TOKEN)


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


def test_runtimeclass_info_with_kubeconfig_pages_through_the_list(fake, kubeconfig, ansible_env):
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "kubeconfig=%s page_size=2" % kubeconfig)
    assert rc == 0, output
    assert [item["name"] for item in result["runtimeclasses"]] == ["kata", "nvidia", "nvidia-cdi"]
    assert result["runtimeclasses"][0]["overhead"] == {"podFixed": {"cpu": "250m"}}
    assert result["runtimeclasses"][1]["node_selector"] == {"nvidia.com/gpu.present": "true"}
    assert result["source"] == "cluster"
    assert result["server"] == fake.url
    assert (result["api_requests"], result["api_list_calls"]) == (2, 1)
    assert result["changed"] is False
    requests = fake.list_requests("runtimeclasses")
    assert [r["auth"] for r in requests] == ["ok", "ok"]
    assert "continue" in requests[1]["query"]


def test_runtimeclass_info_lists_the_nodes_too_in_one_session(fake, kubeconfig, ansible_env):
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "kubeconfig=%s list_nodes=true page_size=2" % kubeconfig)
    assert rc == 0, output
    assert [item["name"] for item in result["runtimeclasses"]] == ["kata", "nvidia", "nvidia-cdi"]
    # the same normalized Nodes node_info returns
    _rc, by_node_info, _output = adhoc(ansible_env, "node_info", "kubeconfig=%s" % kubeconfig)
    assert result["nodes"] == by_node_info["nodes"]
    assert [node["name"] for node in result["nodes"]] == ["cpu-1", "gpu-1", "gpu-2"]
    # one list per resource, each paged (3 objects, pages of 2)
    assert (result["api_requests"], result["api_list_calls"]) == (4, 2)
    assert [len(fake.list_requests(res)) for res in ("runtimeclasses", "nodes")] == [2, 2 + 1]  # + node_info's
    assert result["source"] == "cluster" and result["server"] == fake.url


def test_runtimeclass_info_without_list_nodes_returns_no_nodes(fake, kubeconfig, ansible_env):
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "kubeconfig=%s" % kubeconfig)
    assert rc == 0, output
    assert "nodes" not in result and fake.list_requests("nodes") == []


def test_runtimeclass_info_manifests_with_nodes_from_the_cluster(fake, kubeconfig, ansible_env, tmp_path):
    manifest = tmp_path / "rc.yaml"
    manifest.write_text("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n")
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "src=%s kubeconfig=%s list_nodes=true"
                               % (manifest, kubeconfig))
    assert rc == 0, output
    assert [item["source"] for item in result["runtimeclasses"]] == [str(manifest)]
    assert [node["source"] for node in result["nodes"]] == ["cluster"] * 3
    assert fake.list_requests("runtimeclasses") == [] and len(fake.list_requests("nodes")) == 1
    assert (result["source"], result["api_list_calls"]) == (str(manifest), 1)


def test_runtimeclass_info_fails_when_the_nodes_may_not_be_listed(fake, kubeconfig, ansible_env):
    fake.respond_always("nodes", 403)
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "kubeconfig=%s list_nodes=true retries=0" % kubeconfig)
    assert rc == 2 and "localhost | FAILED! =>" in output, output
    assert "listing nodes" in result["msg"] and "may not list nodes" in result["msg"], result["msg"]
    assert len(fake.list_requests("runtimeclasses")) == 1
    assert "Traceback" not in output


def test_node_info_with_host_and_api_key_in_check_mode(fake, ansible_env):
    # The token comes in through a variable: ansible-core echoes literal ad-hoc -a text on failure.
    rc, result, output = adhoc(
        ansible_env, "node_info",
        "host=%s api_key={{ audit_token }} label_selector=nvidia.com/gpu.present=true" % fake.url,
        "-e", "audit_token=%s" % TOKEN, "--check")
    assert rc == 0, output
    assert [node["name"] for node in result["nodes"]] == ["gpu-1", "gpu-2"]
    assert result["nodes"][0]["runtime_handlers"] == ["nvidia", "runc"]
    assert result["nodes"][0]["container_runtime_version"] == "containerd://2.1.9"
    assert fake.list_requests("nodes")[0]["query"]["labelSelector"] == "nvidia.com/gpu.present=true"
    assert TOKEN not in output


def test_node_info_names_filter_and_not_found(fake, kubeconfig, ansible_env):
    rc, result, output = adhoc(ansible_env, "node_info", "kubeconfig=%s names=cpu-1,gpu-9" % kubeconfig)
    assert rc == 0, output
    assert [node["name"] for node in result["nodes"]] == ["cpu-1"]
    assert result["nodes"][0]["runtime_handlers"] is None  # 1.29 node: not reported
    assert result["names_not_found"] == ["gpu-9"]
    assert "no Node named gpu-9" in output


def test_src_manifests_contact_no_cluster(fake, kubeconfig, ansible_env, tmp_path):
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
    ansible_env["K8S_AUTH_KUBECONFIG"] = kubeconfig  # reachable, yet must not be used
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", "src=%s" % manifests)
    assert rc == 0, output
    assert [(item["name"], item["handler"]) for item in result["runtimeclasses"]] == [
        ("kata", "kata-qemu"), ("nvidia", "nvidia")]
    assert result["source"] == str(manifests)
    assert (result["api_requests"], result["api_list_calls"]) == (0, 0)
    assert fake.requests == []


def test_invalid_runtimeclasses_fail_listing_each(fake, kubeconfig, ansible_env):
    fake.set_objects("runtimeclasses", RUNTIMECLASSES + [{"metadata": {"name": "typo"}}, {"handler": "x"}])
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
def test_401_fails_clearly_without_traceback_or_token_even_with_vvv(fake, ansible_env, tmp_path, how):
    if how == "kubeconfig":
        path = write_kubeconfig(str(tmp_path / "wrong"), fake.url, token=WRONG)
        args, extra = "kubeconfig=%s" % path, []
    else:
        args, extra = "host=%s api_key={{ audit_token }}" % fake.url, ["-e", "audit_token=%s" % WRONG]
    rc, result, output = adhoc(ansible_env, "runtimeclass_info", args, "-vvv", *extra)
    assert rc == 2, output
    assert "localhost | FAILED! =>" in output
    assert result["msg"] == ("401 Unauthorized from %s listing runtimeclasses: the bearer token or client "
                             "certificate was rejected" % fake.url)
    assert "Traceback" not in output
    assert WRONG not in output
    assert len(fake.list_requests("runtimeclasses")) == 1  # not retried


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


def test_play_over_four_hosts_lists_the_cluster_once(fake, kubeconfig, ansible_env, tmp_path):
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
              run_once: true
              delegate_to: localhost
              register: gpurt_runtimeclasses

            - name: Every host sees the result
              ansible.builtin.assert:
                that:
                  - gpurt_runtimeclasses.runtimeclasses | map(attribute='handler') | list
                    == ['kata-qemu', 'nvidia', 'nvidia-cdi']

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
    assert len(fake.list_requests("runtimeclasses")) == 1
    result = json.loads(report.read_text())
    assert (result["api_requests"], result["api_list_calls"]) == (1, 1)


def test_fake_apiserver_runs_as_a_process(tmp_path):
    # The benchmark and the demo start it this way.
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils import kube

    data = tmp_path / "data.json"
    data.write_text(json.dumps({"runtimeclasses": RUNTIMECLASSES, "nodes": NODES}))
    port_file, kubeconfig = tmp_path / "port", tmp_path / "kubeconfig"
    proc = subprocess.Popen([sys.executable, os.path.join(REPO, "tests", "lib", "fake_apiserver.py"),
                             "--data", str(data), "--token", TOKEN, "--port-file", str(port_file),
                             "--kubeconfig", str(kubeconfig)], stdout=subprocess.PIPE, universal_newlines=True)
    try:
        line = proc.stdout.readline()
        port = int(port_file.read_text())
        assert line.strip() == "FAKE_APISERVER_URL=http://127.0.0.1:%d" % port
        with kube.session_from_params(dict(kubeconfig=str(kubeconfig)), environ={}) as client:
            assert len(client.list_all("nodes")) == len(NODES)
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


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


@pytest.mark.parametrize("source", ["vaulted gpurt_k8s_api_key", "K8S_AUTH_API_KEY", "kubeconfig token: |",
                                    "kubeconfig tokenFile"])
def test_a_token_ending_in_a_newline_works_and_is_never_printed(ansible_env, tmp_path, source):
    token = NEWLINE_TOKEN + "\n"
    with FakeApiServer(runtimeclasses=RUNTIMECLASSES, nodes=NODES, token=NEWLINE_TOKEN) as fake:
        extra = []
        if source == "vaulted gpurt_k8s_api_key":
            path, password = vaulted_vars(tmp_path, "gpurt_k8s_api_key", token)
            args = "host=%s api_key={{ gpurt_k8s_api_key }}" % fake.url
            extra = ["-e", "@" + path, "--vault-password-file", password]
        elif source == "K8S_AUTH_API_KEY":
            ansible_env.update(K8S_AUTH_HOST=fake.url, K8S_AUTH_API_KEY=token)
            args = ""
        elif source == "kubeconfig token: |":
            kubeconfig = tmp_path / "kubeconfig"
            kubeconfig.write_text(textwrap.dedent("""\
                apiVersion: v1
                kind: Config
                current-context: c
                clusters: [{name: k, cluster: {server: '%s'}}]
                contexts: [{name: c, context: {cluster: k, user: u}}]
                users:
                - name: u
                  user:
                    token: |
                      %s
                """) % (fake.url, NEWLINE_TOKEN))
            args = "kubeconfig=%s" % kubeconfig
        else:
            (tmp_path / "token").write_text(token)  # kubectl create token ... > token
            kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), fake.url)
            text = (tmp_path / "kubeconfig").read_text().replace("user: {}", "user: {tokenFile: %s}"
                                                                 % (tmp_path / "token"))
            (tmp_path / "kubeconfig").write_text(text)
            args = "kubeconfig=%s" % kubeconfig
        rc, result, output = adhoc(ansible_env, "node_info", args, "-vvv", *extra)
        assert rc == 0, output
        assert len(result["nodes"]) == 3
        assert [r["auth"] for r in fake.list_requests("nodes")] == ["ok"]
        assert NEWLINE_TOKEN not in output

        # A server that echoes the header it got, raw and escaped, in its error.
        echo = "got Authorization: Bearer %s / %r / %s" % (token, "Bearer " + token, json.dumps(token))
        fake.respond_always("nodes", {"status": 500, "body": status_body(500, echo)})
        rc, result, output = adhoc(ansible_env, "node_info", (args + " retries=0").strip(), "-vvv", *extra)
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


def comparable(result):
    return dict((key, value) for key, value in result.items() if key not in ("invocation", "_ansible_no_log"))


@pytest.mark.parametrize("module, args, rc_wanted", [
    ("runtimeclass_info", "kubeconfig={kubeconfig} list_nodes=true page_size=2", 0),
    ("node_info", "kubeconfig={kubeconfig} names=cpu-1,gpu-9 label_selector=", 0),
    ("runtimeclass_info", "kubeconfig={kubeconfig} on_invalid=warn", 0),
    ("runtimeclass_info", "kubeconfig={kubeconfig} list_nodes=true retries=0", 2),
    ("node_info", "host={url} api_key={{{{ audit_token }}}}", 2),
])
def test_the_controller_process_and_the_module_return_the_same(fake, kubeconfig, ansible_env, tmp_path, module, args,
                                                               rc_wanted):
    if "on_invalid=warn" in args:
        fake.set_objects("runtimeclasses", RUNTIMECLASSES + [{"metadata": {"name": "typo"}}])
    if "retries=0" in args:
        fake.respond_always("nodes", 403)
    args = args.format(kubeconfig=kubeconfig, url=fake.url)
    extra = ["-vvv", "-e", "audit_token=%s" % WRONG]
    rc, in_process, output = adhoc(ansible_env, module, args, *extra)
    assert IN_PROCESS in output and "Using module file" not in output, output
    rc_module, by_module, module_output = adhoc(ansible_env, module, args, *extra,
                                                interpreter=other_interpreter(tmp_path))
    assert re.search(r"running the module \(ansible_python_interpreter \S+/other-bin/python is not the "
                     r"controller's", module_output), module_output
    assert "Using module file" in module_output and IN_PROCESS not in module_output
    assert (rc, rc_module) == (rc_wanted, rc_wanted), output + module_output
    assert comparable(in_process) == comparable(by_module)
    warned = sorted(re.findall(r"\[WARNING\]: (.*)", output))
    assert warned == sorted(re.findall(r"\[WARNING\]: (.*)", module_output))
    assert WRONG not in output and WRONG not in module_output
    assert "Traceback" not in output + module_output


def test_become_environment_and_async_start_the_module(fake, kubeconfig, ansible_env, tmp_path):
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
    listed = dict((way, (result["runtimeclasses"], result["nodes"], result["api_requests"], result["api_list_calls"]))
                  for way, result in results.items())
    assert listed["in_process"][0] and listed["in_process"][1]
    assert listed["with_environment"] == listed["in_process"]
    assert listed["with_become"] == listed["in_process"]
    assert listed["with_async"] == listed["in_process"]

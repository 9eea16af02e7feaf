"""gpurt.runtime_gate.runtimeclass and the gated RuntimeClass play of playbooks/remediate.yml,
through the real ansible-playbook CLI, against the fake apiserver.

The module tests run a one-task playbook on localhost and read the registered result back
from a file; the gate tests remediate fake nodes loaded by the real containerd binaries.
"""
import json
import os
import re
import sys
import urllib.error
import urllib.request

import pytest

from tests.lib import ansible_run
from tests.lib.fake_apiserver import FakeApiServer, status_body, write_kubeconfig
from tests.lib.nodes import Node

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered

pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REMEDIATE = os.path.join(REPO, "playbooks", "remediate.yml")
TOKEN = "rc-write-token-7f3a9c2e"
RC_PATH = "/apis/node.k8s.io/v1/runtimeclasses"
GPU = {"nvidia.com/gpu.present": "true"}
CPU = {"nvidia.com/gpu.present": "false"}


@pytest.fixture
def fake():
    with FakeApiServer(token=TOKEN) as server:
        yield server


@pytest.fixture
def kubeconfig(fake, tmp_path):
    return write_kubeconfig(str(tmp_path / "kubeconfig"), fake.url, token=TOKEN)


@pytest.fixture
def env(tmp_path):
    # No K8S_AUTH_*, KUBECONFIG or ~/.kube/config of the machine running the tests.
    environ = dict((key, value) for key, value in os.environ.items()
                   if not key.startswith(("K8S_AUTH_", "ANSIBLE_")) and key != "KUBECONFIG")
    environ.update(HOME=str(tmp_path), ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"))
    return environ


def writes(fake):
    return [(r["method"], r["status"]) for r in fake.requests if r["method"] != "GET"]


class ModuleRunner(object):
    """Runs gpurt.runtime_gate.runtimeclass once per call; returns (result, Run)."""

    def __init__(self, tmp_path, env, kubeconfig):
        self.tmp_path = tmp_path
        self.env = env
        self.kubeconfig = kubeconfig
        self.count = 0

    def __call__(self, check=False, diff=False, auth=None, extra_vars=None, **args):
        results, run = self.steps([args], check=check, diff=diff, auth=auth, extra_vars=extra_vars)
        return results[0], run

    def steps(self, steps, check=False, diff=False, auth=None, extra_vars=None):
        """One playbook run with one module task per args dict (the runs are slow)."""
        self.count += 1
        tasks = []
        for index, args in enumerate(steps):
            module_args = dict(auth if auth is not None else {"kubeconfig": self.kubeconfig})
            module_args.update(args)
            result_file = str(self.tmp_path / ("result-%d-%d.json" % (self.count, index)))
            tasks += [
                {"name": "The module under test", "gpurt.runtime_gate.runtimeclass": module_args,
                 "register": "out", "ignore_errors": True},
                {"name": "Keep the result",
                 "ansible.builtin.copy": {"content": "{{ out | to_json }}", "dest": result_file},
                 "check_mode": False, "diff": False},
            ]
        playbook = str(self.tmp_path / ("play-%d.json" % self.count))
        with open(playbook, "w") as handle:
            json.dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}], handle)
        run = ansible_run.playbook(playbook, "localhost,", check=check, diff=diff, extra_vars=extra_vars,
                                   args=["-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable],
                                   extra_env=self.env, timeout=180)
        assert run.rc == 0, run
        results = []
        for index in range(len(steps)):
            with open(str(self.tmp_path / ("result-%d-%d.json" % (self.count, index)))) as handle:
                results.append(json.load(handle))
        return results, run


@pytest.fixture
def module(tmp_path, env, kubeconfig):
    return ModuleRunner(tmp_path, env, kubeconfig)


NVIDIA = dict(name="nvidia", handler="nvidia", overhead={"cpu": "250m", "memory": "120Mi"}, node_selector=GPU,
              tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])


# ----- the module ---------------------------------------------------------------------

def view(obj):
    """What the module's diff shows of an object."""
    out = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
           "metadata": dict((k, v) for k, v in obj["metadata"].items() if k in ("name", "labels", "annotations"))}
    out.update((k, obj[k]) for k in ("handler", "overhead", "scheduling") if k in obj)
    return out


def managers(obj):
    return sorted((e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields") or [])


def test_create_with_apply_then_a_second_run_sends_no_write(fake, module):
    result, run = module(**NVIDIA)
    assert not result.get("failed"), run
    assert (result["changed"], result["action"]) == (True, "created")
    assert writes(fake) == [("PATCH", 201)]
    patch = fake.object_requests("runtimeclasses", method="PATCH")[0]
    assert patch["content_type"] == "application/apply-patch+yaml"
    assert patch["query"] == {"fieldManager": "gpurt"}
    stored = fake.get_object("runtimeclasses", "nvidia")
    assert stored["handler"] == "nvidia"
    assert stored["overhead"] == {"podFixed": {"cpu": "250m", "memory": "120Mi"}}
    assert stored["scheduling"] == {"nodeSelector": GPU, "tolerations": NVIDIA["tolerations"]}
    assert managers(stored) == [("gpurt", "Apply")]
    assert result["runtimeclass"]["resource_version"] == stored["metadata"]["resourceVersion"]

    fake.reset_requests()
    # Same values, another spelling: quantities are compared by value.
    again = dict(NVIDIA, overhead={"cpu": "0.25", "memory": "120Mi"})
    result, run = module(**again)
    assert (result["changed"], result["action"]) == (False, "none"), run
    assert [(r["method"], r["name"]) for r in fake.requests] == [("GET", "nvidia")]


def test_check_mode_is_a_dry_run_apply_with_the_object_diff(fake, module):
    result, run = module(check=True, diff=True, **NVIDIA)
    assert (result["changed"], result["action"]) == (True, "created"), run
    assert writes(fake) == [("PATCH", 201)]
    assert fake.object_requests("runtimeclasses", method="PATCH")[0]["query"]["dryRun"] == "All"
    assert fake.get_object("runtimeclasses", "nvidia") is None
    assert result["diff"]["before"] == {}
    assert result["diff"]["after"] == {
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia",
        "overhead": {"podFixed": NVIDIA["overhead"]},
        "scheduling": {"nodeSelector": GPU, "tolerations": NVIDIA["tolerations"]}}
    assert "+++ after: runtimeclass nvidia" in run.out


LIVE = {"metadata": {"name": "nvidia", "labels": {"team": "ml"}, "annotations": {"note": "keep"}},
        "handler": "nvidia", "overhead": {"podFixed": {"cpu": "100m"}},
        "scheduling": {"nodeSelector": GPU, "tolerations": [{"key": "gpu", "operator": "Exists"}]}}


def test_an_existing_runtimeclass_keeps_every_field_the_task_does_not_give(fake, module):
    fake.set_objects("runtimeclasses", [LIVE])
    before = fake.get_object("runtimeclasses", "nvidia")

    result, run = module(check=True, diff=True, name="nvidia", handler="nvidia", labels={"owner": "gpurt"})
    assert (result["changed"], result["action"]) == (True, "updated"), run
    assert result["diff"]["before"] == view(before)
    assert result["diff"]["after"] == dict(view(before), metadata=dict(
        view(before)["metadata"], labels={"team": "ml", "owner": "gpurt"}))
    assert fake.get_object("runtimeclasses", "nvidia") == before  # a dry run

    result, run = module(name="nvidia", handler="nvidia", labels={"owner": "gpurt"})
    assert (result["changed"], result["action"]) == (True, "updated"), run
    stored = fake.get_object("runtimeclasses", "nvidia")
    assert stored["overhead"] == LIVE["overhead"] and stored["scheduling"] == LIVE["scheduling"]
    assert stored["metadata"]["labels"] == {"team": "ml", "owner": "gpurt"}
    assert stored["metadata"]["annotations"] == {"note": "keep"}
    assert managers(stored) == [("before-first-apply", "Update"), ("gpurt", "Apply")]

    result, run = module(name="nvidia", handler="nvidia", labels={"owner": "gpurt"})
    assert result["changed"] is False, run


def test_a_field_another_manager_owns_is_a_reported_conflict_unless_force(fake, module):
    fake.set_objects("runtimeclasses", [LIVE])
    before = fake.get_object("runtimeclasses", "nvidia")
    args = dict(name="nvidia", handler="nvidia", overhead={"cpu": "250m"})
    results, run = module.steps([args, args], check=True)
    for result in results:  # check mode meets the same refusal: the dry run is refused too
        assert result["failed"] is True, run
        assert result["msg"].startswith("RuntimeClass nvidia: not written: other field managers own fields this "
                                        "task would change: .overhead.podFixed.cpu (conflict with "
                                        '"before-first-apply" using node.k8s.io/v1 at ')
        assert "set force=true to take the fields over" in result["msg"]
        assert [c["field"] for c in result["conflicts"]] == [".overhead.podFixed.cpu"]
    result, run = module(**args)
    assert result["failed"] is True, run
    assert fake.get_object("runtimeclasses", "nvidia") == before

    result, run = module(force=True, **args)
    assert (result["changed"], result["action"]) == (True, "updated"), run
    stored = fake.get_object("runtimeclasses", "nvidia")
    assert stored["overhead"] == {"podFixed": {"cpu": "250m"}}
    assert stored["scheduling"] == LIVE["scheduling"] and stored["metadata"]["labels"] == {"team": "ml"}
    assert fake.object_requests("runtimeclasses", method="PATCH")[-1]["query"]["force"] == "true"


def test_a_field_the_module_applied_before_and_no_longer_gives_is_removed_others_stay(fake, module):
    fake.set_objects("runtimeclasses", [{"metadata": {"name": "nvidia"}, "handler": "nvidia",
                                         "scheduling": {"nodeSelector": GPU}}])
    result, run = module(name="nvidia", handler="nvidia", overhead={"cpu": "250m"})
    assert result["action"] == "updated", run
    result, run = module(name="nvidia", handler="nvidia")
    assert result["action"] == "updated", run
    stored = fake.get_object("runtimeclasses", "nvidia")
    assert "overhead" not in stored
    assert stored["scheduling"] == {"nodeSelector": GPU}


def test_handler_change_fails_clearly_unless_recreate(fake, module):
    fake.set_objects("runtimeclasses", [dict(LIVE, handler="nvidai")])
    result, run = module(**NVIDIA)
    assert result["failed"] is True
    assert result["msg"].startswith(
        "RuntimeClass nvidia has handler 'nvidai', not 'nvidia', and Kubernetes does not allow changing the "
        "handler of an existing RuntimeClass (the field is immutable). Set recreate=true")
    assert writes(fake) == []
    assert "Traceback" not in run.text

    result, run = module(check=True, diff=True, recreate=True, name="nvidia", handler="nvidia",
                         overhead={"cpu": "250m"})
    assert (result["changed"], result["action"]) == (True, "recreated"), run
    assert writes(fake) == []
    assert result["diff"]["after"]["overhead"] == {"podFixed": {"cpu": "250m"}}
    assert result["diff"]["after"]["scheduling"] == LIVE["scheduling"]

    read_rv = fake.get_object("runtimeclasses", "nvidia")["metadata"]["resourceVersion"]
    result, run = module(recreate=True, name="nvidia", handler="nvidia", overhead={"cpu": "250m"})
    assert (result["changed"], result["action"]) == (True, "recreated"), run
    assert writes(fake) == [("DELETE", 200), ("POST", 201), ("PATCH", 200)]
    # The delete is conditional on the version that was compared.
    assert fake.object_requests("runtimeclasses", method="DELETE")[0]["body"]["preconditions"] == {
        "resourceVersion": read_rv}
    stored = fake.get_object("runtimeclasses", "nvidia")
    assert view(stored) == dict(view(dict(LIVE, handler="nvidia")), overhead={"podFixed": {"cpu": "250m"}})
    assert managers(stored) == [("gpurt", "Apply"), ("gpurt-recreate", "Update")]
    result, run = module(name="nvidia", handler="nvidia", overhead={"cpu": "250m"})
    assert result["changed"] is False, run


def test_the_fake_refuses_a_handler_change_like_the_apiserver(fake, kubeconfig):
    # What recreate=false protects from: a PUT or a forced apply that changes handler is 422.
    fake.set_objects("runtimeclasses", [{"metadata": {"name": "nvidia"}, "handler": "nvidia"}])
    current = fake.get_object("runtimeclasses", "nvidia")
    current["handler"] = "nvidia-cdi"
    code, body = http(fake, "PUT", RC_PATH + "/nvidia", current)
    assert (code, body["reason"]) == (422, "Invalid")
    # measured on kube-apiserver v1.37.2: the value is not quoted back
    assert body["message"] == 'RuntimeClass.node.k8s.io "nvidia" is invalid: handler: Invalid value: null: field is immutable'
    applied = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"},
               "handler": "nvidia-cdi"}
    code, body = http(fake, "PATCH", RC_PATH + "/nvidia?fieldManager=x&force=true", applied, APPLY)
    assert (code, body["reason"]) == (422, "Invalid")


def test_state_absent_is_a_dry_run_delete_in_check_mode_then_deletes(fake, module):
    fake.set_objects("runtimeclasses", [{"metadata": {"name": "kata"}, "handler": "kata-qemu"}])
    result, run = module(check=True, diff=True, name="kata", state="absent")
    assert (result["changed"], result["action"]) == (True, "deleted"), run
    assert result["diff"]["before"]["handler"] == "kata-qemu" and result["diff"]["after"] == {}
    assert [(r["method"], r["query"]) for r in fake.requests if r["method"] != "GET"] == [
        ("DELETE", {"dryRun": "All"})]
    assert fake.get_object("runtimeclasses", "kata") is not None

    result, run = module(name="kata", state="absent")
    assert (result["changed"], result["action"], result["runtimeclass"]) == (True, "deleted", None), run
    assert fake.get_object("runtimeclasses", "kata") is None

    fake.reset_requests()
    result, run = module(name="kata", state="absent")
    assert result["changed"] is False, run
    assert writes(fake) == []


def test_a_5xx_on_apply_is_retried(fake, module):
    fake.script("runtimeclasses", [200, 503, 200])
    result, run = module(retry_delay=0.01, **NVIDIA)
    assert result["action"] == "created", run
    assert writes(fake) == [("PATCH", 503), ("PATCH", 201)]
    assert result["api_requests"] == 3


def test_403_on_apply_names_the_rbac_without_the_token(fake, module):
    fake.script("runtimeclasses", [200, 403])
    result, run = module(auth={"host": fake.url, "api_key": "{{ write_token }}"},
                         extra_vars={"write_token": TOKEN}, **NVIDIA)
    assert result["failed"] is True
    assert result["msg"].startswith("403 Forbidden from %s applying runtimeclass nvidia: the identity may not "
                                    "patch runtimeclasses.node.k8s.io; rbac/runtime-gate-remediate.yaml grants"
                                    % fake.url)
    assert 'cannot patch resource "runtimeclasses"' in result["msg"]
    assert TOKEN not in run.text
    assert "Traceback" not in run.text


def test_a_wrong_token_is_a_clear_401(fake, module, tmp_path):
    wrong = write_kubeconfig(str(tmp_path / "wrong"), fake.url, token="wrong-token-0a1b2c3d")
    result, run = module(auth={"kubeconfig": wrong}, **NVIDIA)
    assert result["msg"] == ("401 Unauthorized from %s reading runtimeclass nvidia: the bearer token or client "
                             "certificate was rejected" % fake.url)
    assert "wrong-token-0a1b2c3d" not in run.text
    assert [r["auth"] for r in fake.requests] == ["wrong"]


def test_an_unreachable_apiserver_fails_after_retries(module):
    result, run = module(auth={"host": "http://127.0.0.1:1"}, retries=1, retry_delay=0.01, **NVIDIA)
    assert result["msg"] == ("gave up after 2 attempts reading runtimeclass nvidia: cannot connect to "
                             "http://127.0.0.1:1 (Connection refused)")
    assert result["api_requests"] == 2


BAD_OPTIONS = [
    (dict(name="nvidia"), "state is present but all of the following are missing: handler"),
    (dict(name="nvidia", handler="Nvidia_X"), "handler 'Nvidia_X' is not a valid handler"),
    (dict(name="Nvidia", handler="nvidia"), "name 'Nvidia' is not a valid RuntimeClass name"),
    (dict(name="nvidia", handler="nvidia", overhead={"cpu": "lots"}), "overhead.cpu=lots is not a Kubernetes quantity"),
    (dict(name="nvidia", handler="nvidia", tolerations=[{"operator": "Maybe"}]),
     "tolerations[0].operator must be Exists or Equal"),
    (dict(name="nvidia", handler="nvidia", tolerations=[{"key": "a", "seconds": 3}]),
     "tolerations[0] has unknown key(s) seconds"),
]


def test_bad_options_fail_before_any_request(fake, module):
    results, run = module.steps([args for args, _unused in BAD_OPTIONS])
    for result, (args, message) in zip(results, BAD_OPTIONS):
        assert result["failed"] is True and message in result["msg"], (args, result)
    assert fake.requests == []
    assert "Traceback" not in run.text


# ----- the fake apiserver's write side ------------------------------------------------

APPLY = "application/apply-patch+yaml"


def http(fake, method, path, body=None, content_type="application/json", token=TOKEN):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(fake.url + path, data=data, method=method,
                                     headers={"Authorization": "Bearer %s" % token, "Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_fake_object_endpoints_behave_like_the_apiserver(fake):
    code, body = http(fake, "GET", RC_PATH + "/nvidia")
    assert (code, body["reason"], body["details"]["name"]) == (404, "NotFound", "nvidia")
    new = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"}
    code, created = http(fake, "POST", RC_PATH, new)
    assert code == 201 and created["metadata"]["resourceVersion"]
    assert managers(created) == [("Python-urllib", "Update")]  # no fieldManager: the User-Agent's product
    code, body = http(fake, "POST", RC_PATH, new)
    assert (code, body["reason"]) == (409, "AlreadyExists")
    code, body = http(fake, "POST", RC_PATH, dict(new, metadata={"name": "x"}, handler=None))
    assert (code, body["message"]) == (422, 'RuntimeClass.node.k8s.io "x" is invalid: handler: Required value')
    code, body = http(fake, "POST", RC_PATH + "?dryRun=All", dict(new, metadata={"name": "dry"}))
    assert code == 201 and fake.get_object("runtimeclasses", "dry") is None

    rv = created["metadata"]["resourceVersion"]
    same = dict(created)
    code, body = http(fake, "PUT", RC_PATH + "/nvidia", same)
    assert code == 200 and body["metadata"]["resourceVersion"] == rv  # no-op update: no new version
    changed = dict(created, overhead={"podFixed": {"cpu": "250m"}})
    code, body = http(fake, "PUT", RC_PATH + "/nvidia", changed)
    assert code == 200 and int(body["metadata"]["resourceVersion"]) > int(rv)
    code, body = http(fake, "PUT", RC_PATH + "/nvidia", changed)  # rv is now stale
    assert (code, body["reason"]) == (409, "Conflict")
    # measured on kube-apiserver v1.37.2: a PUT without resourceVersion creates a missing RuntimeClass
    code, body = http(fake, "PUT", RC_PATH + "/other", dict(created, metadata={"name": "other"}))
    assert code == 201 and fake.get_object("runtimeclasses", "other")["handler"] == "nvidia"
    code, body = http(fake, "PUT", RC_PATH + "/nvidia", dict(created, metadata={"name": "other"}))
    assert code == 400

    code, body = http(fake, "DELETE", RC_PATH + "/nvidia", {"preconditions": {"resourceVersion": rv}})
    assert (code, body["reason"]) == (409, "Conflict")  # the precondition names an old version
    code, body = http(fake, "DELETE", RC_PATH + "/nvidia?dryRun=All")
    assert (code, body["status"]) == (200, "Success") and fake.get_object("runtimeclasses", "nvidia")
    code, body = http(fake, "DELETE", RC_PATH + "/nvidia")
    assert (code, body["status"]) == (200, "Success")
    assert http(fake, "DELETE", RC_PATH + "/nvidia")[0] == 404

    assert http(fake, "POST", RC_PATH, new, token="nope")[0] == 401
    assert fake.get_object("runtimeclasses", "nvidia") is None
    assert fake.list_requests("runtimeclasses") == []
    assert all(TOKEN not in json.dumps(r) for r in fake.requests)
    assert http(fake, "PUT", "/api/v1/nodes/gpu-1", {"metadata": {"name": "gpu-1"}}) == (
        405, status_body(405, "this fake apiserver only answers GET, and POST/PUT/PATCH/DELETE of runtimeclasses"))


def test_fake_serves_apply_with_field_ownership(fake):
    applied = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"},
               "handler": "nvidia", "overhead": {"podFixed": {"cpu": "0.25"}}}
    path = RC_PATH + "/nvidia?fieldManager=gpurt"
    assert http(fake, "PATCH", RC_PATH + "/nvidia", applied, APPLY)[0] == 422  # fieldManager is required
    assert http(fake, "PATCH", path, applied)[0] == 415  # only apply patches are served
    code, body = http(fake, "PATCH", path, applied, APPLY)
    assert code == 201 and body["overhead"] == {"podFixed": {"cpu": "250m"}}  # stored canonically
    assert body["metadata"]["managedFields"][0]["fieldsV1"] == {"f:handler": {}, "f:overhead": {
        "f:podFixed": {"f:cpu": {}}}}
    rv = body["metadata"]["resourceVersion"]
    code, body = http(fake, "PATCH", path, applied, APPLY)
    assert code == 200 and body["metadata"]["resourceVersion"] == rv  # a no-op apply writes nothing

    # kubectl (another manager) sets a label and the overhead's memory; gpurt's cpu is left as is.
    code, body = http(fake, "PATCH", RC_PATH + "/nvidia?fieldManager=kubectl", dict(
        applied, metadata={"name": "nvidia", "labels": {"team": "ml"}},
        overhead={"podFixed": {"cpu": "250m", "memory": "1Gi"}}), APPLY)
    assert code == 200  # the same cpu value: shared ownership, no conflict
    code, body = http(fake, "PATCH", RC_PATH + "/nvidia?fieldManager=kubectl", dict(
        applied, overhead={"podFixed": {"cpu": "500m"}}), APPLY)
    assert (code, body["reason"]) == (409, "Conflict")
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "gpurt": .overhead.podFixed.cpu'
    assert body["details"] == {"causes": [{"reason": "FieldManagerConflict", "message": 'conflict with "gpurt"',
                                           "field": ".overhead.podFixed.cpu"}]}

    # gpurt stops applying the overhead: its cpu goes only where nobody else owns it.
    code, body = http(fake, "PATCH", path, dict((k, v) for k, v in applied.items() if k != "overhead"), APPLY)
    assert code == 200
    assert body["overhead"] == {"podFixed": {"cpu": "250m", "memory": "1Gi"}}  # kubectl still owns both
    assert body["metadata"]["labels"] == {"team": "ml"}
    code, body = http(fake, "PATCH", path + "&dryRun=All", dict(applied, handler="other"), APPLY)
    assert code == 409  # kubectl owns handler too, with another value


# ----- the gated play of playbooks/remediate.yml --------------------------------------

def gate_node(tmp_path, name, version, labels=None, **extra):
    node = Node(tmp_path / "nodes", name, version)
    host = {
        "containerd_runtime_containerd_bin": node.binary,
        "containerd_runtime_config_path": node.config_path,
        "containerd_runtime_kubelet_config_path": node.kubelet_config_path,
        "containerd_runtime_restart_command": ["/bin/true"],
        "containerd_runtime_runtimes": [{"name": "nvidia", "binary_name": node.runtime_binary()}],
        "containerd_runtime_nvidia_cdi": {"name": "nvidia-cdi", "cdi": True,
                                          "binary_name": node.runtime_binary("usr/bin/nvidia-container-runtime.cdi")},
    }
    if labels is not None:
        host["gpurt_node_labels"] = labels
    host.update(extra)
    return node, host


def node_object(name, labels, handlers=None, taints=None):
    """A Node as the apiserver serves it; handlers None: no status.runtimeHandlers."""
    status = {"nodeInfo": {"containerRuntimeVersion": "containerd://2.1.9"}}
    if handlers is not None:
        status["runtimeHandlers"] = [{"name": ""}] + [{"name": handler} for handler in handlers]
    return {"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints or []}, "status": status}


def remediate(tmp_path, fake, hosts, desired=None, check=False, diff=False, **group_vars):
    all_vars = {"gpurt_kubeconfig": write_kubeconfig(str(tmp_path / "kubeconfig"), fake.url, token=TOKEN),
                "gpurt_manage_runtimeclasses": True}
    if desired is not None:
        all_vars["gpurt_runtimeclasses_desired"] = desired
    all_vars.update(group_vars)
    inventory = ansible_run.write_inventory(str(tmp_path / "hosts.json"), hosts, group_vars=all_vars)
    # One batch that goes on past a failed node, so the gate play sees every host: serial and
    # max_fail_percentage are play keywords and must come as extra vars.
    return ansible_run.playbook(REMEDIATE, inventory, check=check, diff=diff, timeout=300,
                                extra_vars={"gpurt_serial": "100%", "gpurt_max_fail_percentage": 100},
                                # JSON results: messages unwrapped, so they can be matched whole.
                                extra_env={"HOME": str(tmp_path), "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})


GPU_ONLY = [{"name": "nvidia", "handler": "nvidia", "node_selector": GPU, "overhead": {"cpu": "250m", "memory": "120Mi"}}]
HEAD = "RuntimeClass nvidia (handler nvidia, nodeSelector nvidia.com/gpu.present=true)"


def test_gate_writes_when_every_node_it_can_select_in_the_cluster_has_the_handler(tmp_path, fake):
    nodes = dict([gate_node(tmp_path, "gpu-1", "2.1"), gate_node(tmp_path, "gpu-2", "1.7"),
                  gate_node(tmp_path, "cpu-1", "1.6")])
    hosts = dict((node.name, host) for node, host in nodes.items())
    # Labels come from the Node objects; two more Nodes are not in the inventory: gpu-9 reports
    # the handler, cpu-9 does not but the class cannot select it.
    fake.set_objects("nodes", [node_object("gpu-1", GPU), node_object("gpu-2", GPU), node_object("cpu-1", CPU),
                               node_object("gpu-9", GPU, ["nvidia", "runc"]), node_object("cpu-9", CPU, ["runc"])])

    run = remediate(tmp_path, fake, hosts, GPU_ONLY, check=True, diff=True)
    assert run.rc == 0, run
    assert HEAD + ": safe to write: all 3 selectable Node(s) have the handler (gpu-1, gpu-2 by re-audit; gpu-9 " \
                  "by status.runtimeHandlers)" in run.out, run
    assert re.search(r"^changed: \[\S+ -> localhost\] => \(item=nvidia\)", run.out, re.MULTILINE), run
    assert [(r["method"], r["query"].get("dryRun")) for r in fake.requests if r["method"] != "GET"] == [
        ("PATCH", "All")]
    assert fake.get_object("runtimeclasses", "nvidia") is None
    assert all(not os.path.exists(node.config_path) for node in nodes)
    assert len(fake.list_requests("nodes")) == 1

    fake.reset_requests()
    run = remediate(tmp_path, fake, hosts, GPU_ONLY)
    assert run.rc == 0, run
    for node in nodes:  # the premise: each node's real containerd loads the handler
        assert "nvidia" in parse_gathered.summarize_dump(node.dump()[1])["runtime_names"], node.name
    assert writes(fake) == [("PATCH", 201)]
    assert len(fake.list_requests("nodes")) == 1
    stored = fake.get_object("runtimeclasses", "nvidia")
    assert stored["handler"] == "nvidia"
    assert stored["scheduling"] == {"nodeSelector": GPU}
    assert stored["overhead"] == {"podFixed": {"cpu": "250m", "memory": "120Mi"}}


def test_gate_refuses_for_nodes_outside_the_run_naming_them_and_force_overrides(tmp_path, fake):
    node, host = gate_node(tmp_path, "gpu-1", "2.1")
    fake.set_objects("nodes", [node_object("gpu-1", GPU),
                               node_object("gpu-7", GPU, ["runc"]),  # reports no nvidia
                               node_object("gpu-8", GPU),  # reports nothing: unknown
                               node_object("cp-1", {}, ["runc"], [{"key": "node-role.kubernetes.io/control-plane",
                                                                  "effect": "NoSchedule"}])])
    desired = [{"name": "nvidia", "handler": "nvidia", "node_selector": GPU},
               {"name": "nvidia-any", "handler": "nvidia"}]
    run = remediate(tmp_path, fake, {"gpu-1": host}, desired)
    assert run.rc == 2, run
    assert HEAD + ": not safe to write: of 3 selectable Node(s), lacking handler nvidia: gpu-7 " \
                  "(status.runtimeHandlers: runc); unknown: gpu-8 (not in this run and its kubelet reports no " \
                  "status.runtimeHandlers)" in run.out, run
    # The tainted control-plane Node cannot take pods of a class that does not tolerate it.
    assert "RuntimeClass nvidia-any (handler nvidia, nodeSelector none): not safe to write: of 3 selectable " \
           "Node(s)" in run.out, run
    assert "fix the Nodes, or set gpurt_runtimeclass_gate_force=true" in run.out, run
    assert writes(fake) == []

    run = remediate(tmp_path, fake, {"gpu-1": host}, desired[:1], gpurt_runtimeclass_gate_force=True)
    assert run.rc == 0, run
    assert HEAD + ": written despite the gate (force): of 3 selectable Node(s), lacking handler nvidia: gpu-7" \
        in run.out, run
    assert writes(fake) == [("PATCH", 201)]


def test_existing_runtimeclasses_keep_their_fields_and_the_default_list_leaves_them_alone(tmp_path, fake):
    # The issue: --limit to some hosts with the default list overwrote nvidia and nvidia-cdi,
    # dropping their nodeSelector and overhead.
    existing = [
        {"metadata": {"name": "nvidia", "labels": {"team": "ml"}}, "handler": "nvidia",
         "overhead": {"podFixed": {"cpu": "100m"}}, "scheduling": {"nodeSelector": GPU}},
        {"metadata": {"name": "gpu-cdi", "annotations": {"note": "by hand"}}, "handler": "nvidia-cdi"},
    ]
    fake.set_objects("runtimeclasses", existing)
    fake.set_objects("nodes", [node_object("gpu-1", GPU)])
    before = [fake.get_object("runtimeclasses", name) for name in ("nvidia", "gpu-cdi")]
    node, host = gate_node(tmp_path, "gpu-1", "2.1")
    run = remediate(tmp_path, fake, {"gpu-1": host}, containerd_runtime_enable_nvidia_cdi=True)
    assert run.rc == 0, run
    assert HEAD.replace("nodeSelector nvidia.com/gpu.present=true", "nodeSelector none") + \
        ": left alone: RuntimeClass nvidia exists (handler nvidia); the default list does not rewrite it" in run.out
    assert "RuntimeClass gpu-cdi already serves handler nvidia-cdi" in run.out, run
    assert writes(fake) == []
    assert [fake.get_object("runtimeclasses", name) for name in ("nvidia", "gpu-cdi")] == before

    # Named, with only its handler and a label: applied, and nothing else of it changes.
    run = remediate(tmp_path, fake, {"gpu-1": host}, [{"name": "nvidia", "handler": "nvidia",
                                                       "labels": {"owner": "gpurt"}}],
                    containerd_runtime_enable_nvidia_cdi=True)
    assert run.rc == 0, run
    assert writes(fake) == [("PATCH", 200)]
    stored = fake.get_object("runtimeclasses", "nvidia")
    assert stored["overhead"] == {"podFixed": {"cpu": "100m"}}
    assert stored["scheduling"] == {"nodeSelector": GPU}
    assert stored["metadata"]["labels"] == {"team": "ml", "owner": "gpurt"}


def test_gate_refuses_when_a_selected_node_cannot_be_remediated(tmp_path, fake):
    nodes = dict([gate_node(tmp_path, "gpu-1", "2.1", GPU),
                  gate_node(tmp_path, "gpu-2", "1.7", GPU, containerd_runtime_containerd_bin="/nonexistent/containerd"),
                  gate_node(tmp_path, "cpu-1", "1.6", CPU)])
    hosts = dict((node.name, host) for node, host in nodes.items())
    # gpu-2's kubelet reports the handler; a host of this run that failed is unknown all the same.
    fake.set_objects("nodes", [node_object("gpu-2", GPU, ["nvidia", "runc"])])
    run = remediate(tmp_path, fake, hosts, GPU_ONLY)
    assert run.rc == 2, run
    assert run.recap["gpu-2"]["failed"] == 1
    assert HEAD + ": not safe to write: of 2 selectable Node(s), unknown: gpu-2 (its remediation failed)" in run.out, run
    assert writes(fake) == []
    assert fake.get_object("runtimeclasses", "nvidia") is None


def test_gate_judges_each_runtimeclass_on_the_nodes_it_can_select(tmp_path, fake):
    # containerd 1.6 has no CDI, so cpu-1 fails when asked for nvidia-cdi: nvidia-cdi (GPU nodes
    # only) may still be created; nvidia (no nodeSelector: every node) may not.
    nodes = dict([gate_node(tmp_path, "gpu-1", "2.1", GPU), gate_node(tmp_path, "gpu-2", "1.7", GPU),
                  gate_node(tmp_path, "cpu-1", "1.6", CPU)])
    hosts = dict((node.name, host) for node, host in nodes.items())
    desired = [{"name": "nvidia", "handler": "nvidia"},
               {"name": "nvidia-cdi", "handler": "nvidia-cdi", "node_selector": GPU}]
    run = remediate(tmp_path, fake, hosts, desired, containerd_runtime_enable_nvidia_cdi=True)
    assert run.rc == 2, run
    assert "ask for containerd's enable_cdi, which containerd 1.6 does not have" in run.text, run
    assert "RuntimeClass nvidia (handler nvidia, nodeSelector none): not safe to write: of 3 selectable Node(s), " \
           "unknown: cpu-1 (its remediation was refused)" in run.out, run
    assert writes(fake) == [("PATCH", 201)]
    assert fake.get_object("runtimeclasses", "nvidia") is None
    assert fake.get_object("runtimeclasses", "nvidia-cdi")["handler"] == "nvidia-cdi"


def test_gate_is_off_by_default(tmp_path, fake):
    node, host = gate_node(tmp_path, "gpu-1", "2.1", GPU)
    run = remediate(tmp_path, fake, {"gpu-1": host}, gpurt_manage_runtimeclasses=False)
    assert run.rc == 0, run
    assert fake.object_requests("runtimeclasses") == []
    # The Nodes are listed once all the same: for the re-audit's labels and the hosts without a Node object.
    assert len(fake.list_requests("nodes")) == 1

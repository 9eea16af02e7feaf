"""gpurt.runtime_gate.runtimeclass and the gated RuntimeClass play of playbooks/remediate.yml,
through the real ansible-playbook CLI, against a real kube-apiserver.

The module tests run a one-task playbook on localhost and read the registered result back
from a file; they share the real cluster (real_cluster) and name every RuntimeClass rcc-*. The
gate tests remediate nodes loaded by the real containerd binaries and judge every Node and
RuntimeClass of the cluster, so they run on a cluster of this module alone (private_cluster).
What a real apiserver cannot be made to do (a 5xx, a 409 on the conditional delete of a re-create)
stays on the stand-in (tests/lib/fake_apiserver.py), as do the checks of the stand-in itself.
"""
import contextlib
import json
import os
import re
import ssl
import sys
import urllib.error
import urllib.request

import pytest
from kubernetes import utils
from kubernetes.client.rest import ApiException

from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.fake_apiserver import FakeApiServer, status_body, write_kubeconfig
from tests.lib.nodes import Node
from tests.lib.real_cluster import write_kubeconfig as real_kubeconfig

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered

pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REMEDIATE = os.path.join(REPO, "playbooks", "remediate.yml")
TOKEN = "rc-write-token-7f3a9c2e"
RC_PATH = "/apis/node.k8s.io/v1/runtimeclasses"
GPU = {"nvidia.com/gpu.present": "true"}
CPU = {"nvidia.com/gpu.present": "false"}
PREFIX = "rcc-"  # every RuntimeClass these tests make on the shared cluster
EARLIER = "before-first-apply"  # a field manager that wrote the object with a create (operation Update)


@pytest.fixture
def fake():
    with FakeApiServer(token=TOKEN) as server:
        yield server


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
def module(tmp_path, env, real_cluster):
    """The module on the shared real cluster, as its admin."""
    return ModuleRunner(tmp_path, env, real_cluster.kubeconfig)


@pytest.fixture
def fake_module(tmp_path, env, fake):
    return ModuleRunner(tmp_path, env, write_kubeconfig(str(tmp_path / "kubeconfig"), fake.url, token=TOKEN))


@pytest.fixture
def api(real_cluster):
    api = Api(real_cluster.kubeconfig)
    yield api
    api.close()


def live(api, name):
    """The RuntimeClass as the apiserver serves it (its JSON, managedFields included), or None."""
    try:
        return json.loads(api.node_k8s.read_runtime_class(name, _preload_content=False).data)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def delete(api, name):
    try:
        api.node_k8s.delete_runtime_class(name)
    except ApiException as exc:
        if exc.status != 404:
            raise


@pytest.fixture
def fresh(api):
    """fresh(name) -> rcc-NAME: no RuntimeClass of that name on the shared cluster before the test, none after."""
    names = []

    def factory(name):
        names.append(PREFIX + name)
        delete(api, names[-1])
        return names[-1]
    yield factory
    for name in names:
        delete(api, name)


def create_earlier(api, obj):
    """OBJ made with a create by another field manager (EARLIER, operation Update), as served."""
    api.node_k8s.create_runtime_class(dict(obj, apiVersion="node.k8s.io/v1", kind="RuntimeClass"),
                                      field_manager=EARLIER)
    return live(api, obj["metadata"]["name"])


NVIDIA = dict(handler="nvidia", overhead={"cpu": "250m", "memory": "120Mi"}, node_selector=GPU,
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


def unwritten(obj):
    """What a run that writes nothing leaves as it was: the version, and who applied what when."""
    return obj["metadata"]["resourceVersion"], obj["metadata"]["managedFields"]


def test_create_with_apply_then_a_second_run_sends_no_write(api, fresh, module):
    name = fresh("create")
    result, run = module(name=name, **NVIDIA)
    assert not result.get("failed"), run
    assert (result["changed"], result["action"]) == (True, "created")
    assert result["api_requests"] == 2  # the read that found nothing, then one write
    assert run.changed() == 2  # the module, and the copy of its result
    stored = live(api, name)
    assert stored["handler"] == "nvidia"
    assert stored["overhead"] == {"podFixed": {"cpu": "250m", "memory": "120Mi"}}
    assert stored["scheduling"] == {"nodeSelector": GPU, "tolerations": NVIDIA["tolerations"]}
    # A server-side apply as field manager gpurt (no create, no update), and nobody else wrote it.
    assert managers(stored) == [("gpurt", "Apply")]
    assert stored["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:handler": {}, "f:overhead": {"f:podFixed": {"f:cpu": {}, "f:memory": {}}},
        "f:scheduling": {"f:nodeSelector": {}, "f:tolerations": {}}}  # both atomic
    assert result["runtimeclass"]["resource_version"] == stored["metadata"]["resourceVersion"]

    # Same values, another spelling: quantities are compared by value.
    again = dict(NVIDIA, overhead={"cpu": "0.25", "memory": "120Mi"})
    result, run = module(name=name, **again)
    assert (result["changed"], result["action"]) == (False, "none"), run
    assert result["api_requests"] == 1  # the read alone
    assert run.changed() == 1  # the copy of its result alone
    assert unwritten(live(api, name)) == unwritten(stored)  # no write, not even a no-op apply


def test_check_mode_is_a_dry_run_apply_with_the_object_diff(api, fresh, module):
    name = fresh("check")
    result, run = module(check=True, diff=True, name=name, **NVIDIA)
    assert (result["changed"], result["action"]) == (True, "created"), run
    assert result["api_requests"] == 2  # the read, then the apply the apiserver ran as a dry run ...
    assert live(api, name) is None  # ... that stored nothing
    assert result["diff"]["before"] == {}
    # the object as the apiserver's dry run made it (tolerations in the stored form)
    assert result["diff"]["after"] == {
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": "nvidia",
        "overhead": {"podFixed": NVIDIA["overhead"]},
        "scheduling": {"nodeSelector": GPU, "tolerations": NVIDIA["tolerations"]}}
    assert "+++ after: runtimeclass %s" % name in run.out


def live_object(name):
    return {"metadata": {"name": name, "labels": {"team": "ml"}, "annotations": {"note": "keep"}},
            "handler": "nvidia", "overhead": {"podFixed": {"cpu": "100m"}},
            "scheduling": {"nodeSelector": GPU, "tolerations": [{"key": "gpu", "operator": "Exists"}]}}


def test_an_existing_runtimeclass_keeps_every_field_the_task_does_not_give(api, fresh, module):
    name = fresh("keep")
    before = create_earlier(api, live_object(name))

    result, run = module(check=True, diff=True, name=name, handler="nvidia", labels={"owner": "gpurt"})
    assert (result["changed"], result["action"]) == (True, "updated"), run
    assert result["diff"]["before"] == view(before)
    assert result["diff"]["after"] == dict(view(before), metadata=dict(
        view(before)["metadata"], labels={"team": "ml", "owner": "gpurt"}))
    assert live(api, name) == before  # a dry run

    result, run = module(name=name, handler="nvidia", labels={"owner": "gpurt"})
    assert (result["changed"], result["action"]) == (True, "updated"), run
    stored = live(api, name)
    assert stored["overhead"] == before["overhead"] and stored["scheduling"] == before["scheduling"]
    assert stored["metadata"]["labels"] == {"team": "ml", "owner": "gpurt"}
    assert stored["metadata"]["annotations"] == {"note": "keep"}
    assert managers(stored) == [(EARLIER, "Update"), ("gpurt", "Apply")]
    assert stored["metadata"]["uid"] == before["metadata"]["uid"]  # updated in place

    result, run = module(name=name, handler="nvidia", labels={"owner": "gpurt"})
    assert result["changed"] is False, run
    assert result["api_requests"] == 1
    assert unwritten(live(api, name)) == unwritten(stored)


def test_a_field_another_manager_owns_is_a_reported_conflict_unless_force(api, fresh, module):
    """An owner that wrote with a create (operation Update: the conflict names its time); an owner by
    apply: test_real_apply.py."""
    name = fresh("conflict")
    before = create_earlier(api, live_object(name))
    args = dict(name=name, handler="nvidia", overhead={"cpu": "250m"})
    results, run = module.steps([args, args], check=True)
    for result in results:  # check mode meets the same refusal: the dry run is refused too
        assert result["failed"] is True, run
        assert result["msg"].startswith("RuntimeClass %s: not written: other field managers own fields this "
                                        "task would change: .overhead.podFixed.cpu (conflict with "
                                        '"%s" using node.k8s.io/v1)' % (name, EARLIER)), result["msg"]
        assert "set force=true to take the fields over" in result["msg"]
        assert [c["field"] for c in result["conflicts"]] == [".overhead.podFixed.cpu"]
        assert result["api_requests"] == 2  # the read and the refused apply: not retried
    result, run = module(**args)
    assert result["failed"] is True, run
    assert live(api, name) == before

    result, run = module(force=True, **args)
    assert (result["changed"], result["action"]) == (True, "updated"), run
    stored = live(api, name)
    assert stored["overhead"] == {"podFixed": {"cpu": "250m"}}
    assert stored["scheduling"] == before["scheduling"] and stored["metadata"]["labels"] == {"team": "ml"}
    # forced: the field is gpurt's now, no longer the earlier manager's
    owned = dict((e["manager"], json.dumps(e["fieldsV1"])) for e in stored["metadata"]["managedFields"])
    assert '"f:cpu"' in owned["gpurt"] and '"f:cpu"' not in owned[EARLIER]
    assert '"f:nodeSelector"' in owned[EARLIER]


def test_a_field_the_module_applied_before_and_no_longer_gives_is_removed_others_stay(api, fresh, module):
    name = fresh("remove")
    create_earlier(api, {"metadata": {"name": name}, "handler": "nvidia", "scheduling": {"nodeSelector": GPU}})
    result, run = module(name=name, handler="nvidia", overhead={"cpu": "250m"})
    assert result["action"] == "updated", run
    assert live(api, name)["overhead"] == {"podFixed": {"cpu": "250m"}}
    result, run = module(name=name, handler="nvidia")
    assert result["action"] == "updated", run
    stored = live(api, name)
    assert "overhead" not in stored
    assert stored["scheduling"] == {"nodeSelector": GPU}


def test_handler_change_fails_clearly_unless_recreate(api, fresh, module):
    """The delete's precondition on the version compared: test_recreate_deletes_only_the_version_it_compared."""
    name = fresh("handler")
    before = create_earlier(api, dict(live_object(name), handler="nvidai"))
    result, run = module(name=name, **NVIDIA)
    assert result["failed"] is True
    assert result["msg"].startswith(
        "RuntimeClass %s has handler 'nvidai', not 'nvidia', and Kubernetes does not allow changing the "
        "handler of an existing RuntimeClass (the field is immutable). Set recreate=true" % name)
    assert result["api_requests"] == 1  # the read alone
    assert live(api, name) == before
    assert "Traceback" not in run.text

    result, run = module(check=True, diff=True, recreate=True, name=name, handler="nvidia",
                         overhead={"cpu": "250m"})
    assert (result["changed"], result["action"]) == (True, "recreated"), run
    assert result["api_requests"] == 1  # computed, not asked: no dry-run delete or create
    assert live(api, name) == before
    assert result["diff"]["after"]["overhead"] == {"podFixed": {"cpu": "250m"}}
    assert result["diff"]["after"]["scheduling"] == before["scheduling"]

    result, run = module(recreate=True, name=name, handler="nvidia", overhead={"cpu": "250m"})
    assert (result["changed"], result["action"]) == (True, "recreated"), run
    assert result["api_requests"] == 4  # the read, the delete, the create, the apply
    stored = live(api, name)
    assert stored["metadata"]["uid"] != before["metadata"]["uid"]  # deleted and created anew
    assert view(stored) == dict(view(dict(before, handler="nvidia")), overhead={"podFixed": {"cpu": "250m"}})
    assert managers(stored) == [("gpurt", "Apply"), ("gpurt-recreate", "Update")]
    result, run = module(name=name, handler="nvidia", overhead={"cpu": "250m"})
    assert result["changed"] is False, run
    assert unwritten(live(api, name)) == unwritten(stored)


def test_recreate_deletes_only_the_version_it_compared(fake, fake_module):
    """Needs the stand-in: a 409 on the conditional delete (the RuntimeClass changed between the
    module's read and its delete), a race a test cannot time on a real apiserver."""
    fake.set_objects("runtimeclasses", [{"metadata": {"name": "nvidia"}, "handler": "nvidai"}])
    read_rv = fake.get_object("runtimeclasses", "nvidia")["metadata"]["resourceVersion"]
    fake.script("runtimeclasses", [200, 409])
    result, run = fake_module(recreate=True, name="nvidia", handler="nvidia")
    assert result["failed"] is True, run
    assert result["msg"].startswith("409 "), result["msg"]
    assert writes(fake) == [("DELETE", 409)]  # nothing created after the refused delete
    assert fake.object_requests("runtimeclasses", method="DELETE")[0]["body"]["preconditions"] == {
        "resourceVersion": read_rv}
    assert fake.get_object("runtimeclasses", "nvidia")["handler"] == "nvidai"


def test_state_absent_is_a_dry_run_delete_in_check_mode_then_deletes(api, fresh, module):
    name = fresh("absent")
    before = create_earlier(api, {"metadata": {"name": name}, "handler": "kata-qemu"})
    result, run = module(check=True, diff=True, name=name, state="absent")
    assert (result["changed"], result["action"]) == (True, "deleted"), run
    assert result["diff"]["before"]["handler"] == "kata-qemu" and result["diff"]["after"] == {}
    assert result["api_requests"] == 2  # the read, then the delete the apiserver ran as a dry run ...
    assert live(api, name) == before  # ... that deleted nothing

    result, run = module(name=name, state="absent")
    assert (result["changed"], result["action"], result["runtimeclass"]) == (True, "deleted", None), run
    assert result["api_requests"] == 2
    assert live(api, name) is None

    result, run = module(name=name, state="absent")
    assert result["changed"] is False, run
    assert result["api_requests"] == 1  # the read that found nothing
    assert run.changed() == 1  # the copy of its result alone


def test_a_5xx_on_apply_is_retried(fake, fake_module):
    """Needs the stand-in: a 503 answer to the apply."""
    fake.script("runtimeclasses", [200, 503, 200])
    result, run = fake_module(retry_delay=0.01, name="nvidia", **NVIDIA)
    assert result["action"] == "created", run
    assert writes(fake) == [("PATCH", 503), ("PATCH", 201)]
    assert result["api_requests"] == 3


@pytest.fixture
def reader(real_cluster, api):
    """A ServiceAccount token that may get and list RuntimeClasses, not patch them."""
    rbac = "rbac.authorization.k8s.io"
    api.namespace("gpurt-rcc")
    for body in (
            {"kind": "ClusterRole", "metadata": {"name": "rcc-runtimeclass-reader"},
             "rules": [{"apiGroups": ["node.k8s.io"], "resources": ["runtimeclasses"], "verbs": ["get", "list"]}]},
            {"kind": "ClusterRoleBinding", "metadata": {"name": "rcc-runtimeclass-reader"},
             "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "rcc-runtimeclass-reader"},
             "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "gpurt-rcc"}]}):
        utils.create_from_dict(api.api_client, dict(body, apiVersion=rbac + "/v1"), apply=True)
    return api.core.create_namespaced_service_account_token(
        "default", "gpurt-rcc", {"spec": {"expirationSeconds": 3600}}).status.token


def test_403_on_apply_names_the_rbac_without_the_token(real_cluster, api, fresh, module, reader):
    name = fresh("forbidden")
    auth = {"host": real_cluster.server, "ca_cert": real_cluster.ca, "api_key": "{{ write_token }}"}
    result, run = module(auth=auth, extra_vars={"write_token": reader}, name=name, **NVIDIA)
    assert result["failed"] is True
    assert result["msg"].startswith("403 Forbidden from %s applying runtimeclass %s: the identity may not "
                                    "patch runtimeclasses.node.k8s.io; rbac/runtime-gate-remediate.yaml grants"
                                    % (real_cluster.server, name)), result["msg"]
    assert 'User "system:serviceaccount:gpurt-rcc:default" cannot patch resource "runtimeclasses"' in result["msg"]
    assert result["api_requests"] == 2  # the read it may do, the apply it may not: not retried
    assert live(api, name) is None
    assert reader not in run.text
    assert "Traceback" not in run.text


def test_a_wrong_token_is_a_clear_401(real_cluster, module, tmp_path):
    wrong = real_kubeconfig(str(tmp_path / "wrong"), real_cluster.server, real_cluster.ca, "wrong",
                            token="wrong-token-0a1b2c3d")
    result, run = module(auth={"kubeconfig": wrong}, name=PREFIX + "unauthorized", **NVIDIA)
    assert result["msg"] == ("401 Unauthorized from %s reading runtimeclass %sunauthorized: the bearer token or "
                             "client certificate was rejected" % (real_cluster.server, PREFIX))
    assert "wrong-token-0a1b2c3d" not in run.text
    assert result["api_requests"] == 1  # not retried


def test_an_unreachable_apiserver_fails_after_retries(tmp_path, env):
    module = ModuleRunner(tmp_path, env, None)
    result, run = module(auth={"host": "http://127.0.0.1:1"}, retries=1, retry_delay=0.01, name="nvidia", **NVIDIA)
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


def test_bad_options_fail_before_any_request(module):
    results, run = module.steps([args for args, _unused in BAD_OPTIONS])
    for result, (args, message) in zip(results, BAD_OPTIONS):
        assert result["failed"] is True and message in result["msg"], (args, result)
        # not one request: the module's own count, and no connection made (no server named)
        assert result.get("api_requests", 0) == 0 and "server" not in result, (args, result)
    assert "Traceback" not in run.text


# ----- the stand-in's write side, checked against a real kube-apiserver -----------------
# The stand-in's own tests: each runs on the stand-in and on the real apiserver (shared cluster,
# rcc-wire-* names), so what the fault tests elsewhere rely on is what a real apiserver does.

APPLY = "application/apply-patch+yaml"


class Target(object):
    """Where http() sends its requests: the stand-in, or the real apiserver as its admin."""

    def __init__(self, kind, url, token, get, context=None):
        self.kind, self.url, self.token, self.get, self.context = kind, url, token, get, context

    @property
    def fake(self):
        return self.kind == "fake"


WIRE = ["wire-nvidia", "wire-dry", "wire-x", "wire-other"]


@pytest.fixture(params=["fake", "real"])
def target(request):
    if request.param == "fake":
        server = request.getfixturevalue("fake")
        yield Target("fake", server.url, TOKEN, lambda name: server.get_object("runtimeclasses", name))
        return
    cluster = request.getfixturevalue("real_cluster")
    api = request.getfixturevalue("api")
    for name in WIRE:
        request.getfixturevalue("fresh")(name)
    context = ssl.create_default_context(cafile=cluster.ca)
    yield Target("real", cluster.server, cluster.token("gpurt-admin"), lambda name: live(api, name), context)


def http(target, method, path, body=None, content_type="application/json", token=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(target.url + path, data=data, method=method, headers={
        "Authorization": "Bearer %s" % (token or target.token), "Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=10, context=target.context) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_fake_refuses_a_handler_change_like_the_apiserver(target):
    # What recreate=false protects from: a PUT or a forced apply that changes handler is 422.
    name = PREFIX + "wire-nvidia"
    assert http(target, "POST", RC_PATH, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                          "metadata": {"name": name}, "handler": "nvidia"})[0] == 201
    current = target.get(name)
    current["handler"] = "nvidia-cdi"
    code, body = http(target, "PUT", RC_PATH + "/" + name, current)
    assert (code, body["reason"]) == (422, "Invalid")
    # the value is not quoted back
    assert body["message"] == 'RuntimeClass.node.k8s.io "%s" is invalid: handler: Invalid value: null: field is immutable' % name
    applied = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
               "handler": "nvidia-cdi"}
    code, body = http(target, "PATCH", RC_PATH + "/%s?fieldManager=x&force=true" % name, applied, APPLY)
    assert (code, body["reason"]) == (422, "Invalid")
    assert target.get(name)["handler"] == "nvidia"


def test_fake_object_endpoints_behave_like_the_apiserver(target, request):
    nvidia, dry, other = PREFIX + "wire-nvidia", PREFIX + "wire-dry", PREFIX + "wire-other"
    code, body = http(target, "GET", RC_PATH + "/" + nvidia)
    assert (code, body["reason"], body["details"]["name"]) == (404, "NotFound", nvidia)
    new = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": nvidia}, "handler": "nvidia"}
    code, created = http(target, "POST", RC_PATH, new)
    assert code == 201 and created["metadata"]["resourceVersion"]
    assert managers(created) == [("Python-urllib", "Update")]  # no fieldManager: the User-Agent's product
    code, body = http(target, "POST", RC_PATH, new)
    assert (code, body["reason"]) == (409, "AlreadyExists")
    x = PREFIX + "wire-x"
    code, body = http(target, "POST", RC_PATH, dict(new, metadata={"name": x}, handler=None))
    assert (code, body["message"]) == (422, 'RuntimeClass.node.k8s.io "%s" is invalid: handler: Required value' % x)
    code, body = http(target, "POST", RC_PATH + "?dryRun=All", dict(new, metadata={"name": dry}))
    assert code == 201 and target.get(dry) is None

    rv = created["metadata"]["resourceVersion"]
    same = dict(created)
    code, body = http(target, "PUT", RC_PATH + "/" + nvidia, same)
    assert code == 200 and body["metadata"]["resourceVersion"] == rv  # no-op update: no new version
    changed = dict(created, overhead={"podFixed": {"cpu": "250m"}})
    code, body = http(target, "PUT", RC_PATH + "/" + nvidia, changed)
    assert code == 200 and int(body["metadata"]["resourceVersion"]) > int(rv)
    code, body = http(target, "PUT", RC_PATH + "/" + nvidia, changed)  # rv is now stale
    assert (code, body["reason"]) == (409, "Conflict")
    # a PUT without resourceVersion creates a missing RuntimeClass
    code, body = http(target, "PUT", RC_PATH + "/" + other, dict(created, metadata={"name": other}))
    assert code == 201 and target.get(other)["handler"] == "nvidia"
    code, body = http(target, "PUT", RC_PATH + "/" + nvidia, dict(created, metadata={"name": other}))
    assert code == 400

    code, body = http(target, "DELETE", RC_PATH + "/" + nvidia, {"preconditions": {"resourceVersion": rv}})
    assert (code, body["reason"]) == (409, "Conflict")  # the precondition names an old version
    code, body = http(target, "DELETE", RC_PATH + "/%s?dryRun=All" % nvidia)
    assert (code, body["status"]) == (200, "Success") and target.get(nvidia)
    code, body = http(target, "DELETE", RC_PATH + "/" + nvidia)
    assert (code, body["status"]) == (200, "Success")
    assert http(target, "DELETE", RC_PATH + "/" + nvidia)[0] == 404

    assert http(target, "POST", RC_PATH, new, token="nope")[0] == 401
    assert target.get(nvidia) is None
    if target.fake:  # the stand-in's own limits and request log
        fake = request.getfixturevalue("fake")
        assert fake.list_requests("runtimeclasses") == []
        assert all(TOKEN not in json.dumps(r) for r in fake.requests)
        assert http(target, "PUT", "/api/v1/nodes/gpu-1", {"metadata": {"name": "gpu-1"}}) == (
            405, status_body(405, "this fake apiserver only answers GET, and POST/PUT/PATCH/DELETE of runtimeclasses"))


def test_fake_serves_apply_with_field_ownership(target):
    name = PREFIX + "wire-nvidia"
    applied = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
               "handler": "nvidia", "overhead": {"podFixed": {"cpu": "0.25"}}}
    path = RC_PATH + "/%s?fieldManager=gpurt" % name
    assert http(target, "PATCH", RC_PATH + "/" + name, applied, APPLY)[0] == 422  # fieldManager is required
    assert http(target, "PATCH", path, applied)[0] == 415  # only apply patches are served
    code, body = http(target, "PATCH", path, applied, APPLY)
    assert code == 201 and body["overhead"] == {"podFixed": {"cpu": "250m"}}  # stored canonically
    assert body["metadata"]["managedFields"][0]["fieldsV1"] == {"f:handler": {}, "f:overhead": {
        "f:podFixed": {"f:cpu": {}}}}
    rv = body["metadata"]["resourceVersion"]
    code, body = http(target, "PATCH", path, applied, APPLY)
    assert code == 200 and body["metadata"]["resourceVersion"] == rv  # a no-op apply writes nothing

    # kubectl (another manager) sets a label and the overhead's memory; gpurt's cpu is left as is.
    code, body = http(target, "PATCH", RC_PATH + "/%s?fieldManager=kubectl" % name, dict(
        applied, metadata={"name": name, "labels": {"team": "ml"}},
        overhead={"podFixed": {"cpu": "250m", "memory": "1Gi"}}), APPLY)
    assert code == 200  # the same cpu value: shared ownership, no conflict
    code, body = http(target, "PATCH", RC_PATH + "/%s?fieldManager=kubectl" % name, dict(
        applied, overhead={"podFixed": {"cpu": "500m"}}), APPLY)
    assert (code, body["reason"]) == (409, "Conflict")
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "gpurt": .overhead.podFixed.cpu'
    assert body["details"] == {"causes": [{"reason": "FieldManagerConflict", "message": 'conflict with "gpurt"',
                                           "field": ".overhead.podFixed.cpu"}]}

    # gpurt stops applying the overhead: its cpu goes only where nobody else owns it.
    code, body = http(target, "PATCH", path, dict((k, v) for k, v in applied.items() if k != "overhead"), APPLY)
    assert code == 200
    assert body["overhead"] == {"podFixed": {"cpu": "250m", "memory": "1Gi"}}  # kubectl still owns both
    assert body["metadata"]["labels"] == {"team": "ml"}
    code, body = http(target, "PATCH", path + "&dryRun=All", dict(applied, handler="other"), APPLY)
    assert code == 409  # kubectl owns handler too, with another value


# ----- the gated play of playbooks/remediate.yml --------------------------------------

def gate_node(tmp_path, name, version, labels=None, **extra):
    node = Node(tmp_path / "nodes", name, version)
    host = {
        "containerd_runtime_containerd_bin": node.binary,
        "containerd_runtime_config_path": node.config_path,
        "containerd_runtime_kubelet_config_path": node.kubelet_config_path,
        "containerd_runtime_restart_command": ["/bin/true"],
        "containerd_runtime_restart_proof": "config",  # no daemon runs here: the proof is the config's load
        "containerd_runtime_runtimes": [{"name": "nvidia", "binary_name": node.runtime_binary()}],
        "containerd_runtime_nvidia_cdi": {"name": "nvidia-cdi", "cdi": True,
                                          "binary_name": node.runtime_binary("usr/bin/nvidia-container-runtime.cdi")},
    }
    if labels is not None:
        host["gpurt_node_labels"] = labels
    host.update(extra)
    return node, host


def node_object(name, labels, handlers=None, taints=None):
    """A Node to make on the cluster; handlers None: its kubelet reports no status.runtimeHandlers."""
    return {"name": name, "labels": labels, "handlers": handlers, "taints": taints}


def everything(api):
    """The names of every RuntimeClass and Node of the cluster."""
    return ([r.metadata.name for r in api.node_k8s.list_runtime_class().items],
            [n.metadata.name for n in api.core.list_node().items])


@contextlib.contextmanager
def on_cluster(cluster, nodes=(), runtimeclasses=()):
    """NODES (node_object()) and RUNTIMECLASSES (made by EARLIER) on the module's private cluster for the
    block, and then every RuntimeClass and Node of it deleted: the gate judges every Node of the
    cluster and the tests count its RuntimeClasses, so each starts on an empty cluster and leaves it empty."""
    api = Api(cluster.kubeconfig)
    try:
        assert everything(api) == ([], []), "objects another test left on the private cluster"
        for obj in runtimeclasses:
            create_earlier(api, obj)
        for node in nodes:
            api.node(node["name"], labels=node["labels"], handlers=node["handlers"])
            if node["taints"]:
                api.core.patch_node(node["name"], {"spec": {"taints": node["taints"]}})
        yield api
    finally:
        try:
            runtimeclasses, nodes = everything(api)
            for name in runtimeclasses:
                api.node_k8s.delete_runtime_class(name)
            for name in nodes:
                api.core.delete_node(name)
        finally:
            api.close()


def remediate(tmp_path, cluster, hosts, desired=None, check=False, diff=False, **group_vars):
    all_vars = {"gpurt_kubeconfig": cluster.kubeconfig, "gpurt_manage_runtimeclasses": True}
    if desired is not None:
        all_vars["gpurt_runtimeclasses_desired"] = desired
    all_vars.update(group_vars)
    inventory = ansible_run.write_inventory(str(tmp_path / "hosts.json"), hosts, group_vars=all_vars)
    # One batch that goes on past a failed node, so the gate play sees every host: serial and
    # max_fail_percentage are play keywords and must come as extra vars. -v prints each task's
    # result: the listings' and the writes' own request counts (results_of()).
    return ansible_run.playbook(REMEDIATE, inventory, check=check, diff=diff, timeout=300, args=("-v",),
                                extra_vars={"gpurt_serial": "100%", "gpurt_max_fail_percentage": 100},
                                # JSON results: messages unwrapped, so they can be matched whole.
                                extra_env={"HOME": str(tmp_path), "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})


RESULT = re.compile(r"^(?:ok|changed|failed|fatal|skipping): \[[^\]]+\](?: => \(item=[^)]*\))? => (?=\{)", re.MULTILINE)


def results_of(run):
    """Every result -v printed (one line or indented): (head, result), the item's head included for a loop."""
    decoder = json.JSONDecoder()
    return [(match.group(0)[:-4], decoder.raw_decode(run.out, match.end())[0]) for match in RESULT.finditer(run.out)]


def node_listings(run):
    """The API list calls of each task that listed the Nodes (gpurt.runtime_gate.node_info)."""
    return [result["api_list_calls"] for _head, result in results_of(run)
            if "api_list_calls" in result and "nodes" in result and "runtimeclasses" not in result]


def written(run):
    """(name, action, api_requests) of each RuntimeClass the gated play's runtimeclass task wrote."""
    return [(result["item"]["name"], result["action"], result["api_requests"]) for _head, result in results_of(run)
            if "item" in result and "conflicts" in result]


GPU_ONLY = [{"name": "nvidia", "handler": "nvidia", "node_selector": GPU, "overhead": {"cpu": "250m", "memory": "120Mi"}}]
HEAD = "RuntimeClass nvidia (handler nvidia, nodeSelector nvidia.com/gpu.present=true)"


def test_gate_writes_when_every_node_it_can_select_in_the_cluster_has_the_handler(tmp_path, private_cluster):
    nodes = dict([gate_node(tmp_path, "gpu-1", "2.1"), gate_node(tmp_path, "gpu-2", "1.7"),
                  gate_node(tmp_path, "cpu-1", "1.6")])
    hosts = dict((node.name, host) for node, host in nodes.items())
    # Labels come from the Node objects; two more Nodes are not in the inventory: gpu-9 reports
    # the handler, cpu-9 does not but the class cannot select it.
    with on_cluster(private_cluster, [node_object("gpu-1", GPU), node_object("gpu-2", GPU), node_object("cpu-1", CPU),
                                      node_object("gpu-9", GPU, ["nvidia", "runc"]),
                                      node_object("cpu-9", CPU, ["runc"])]) as api:
        run = remediate(tmp_path, private_cluster, hosts, GPU_ONLY, check=True, diff=True)
        assert run.rc == 0, run
        assert HEAD + ": safe to write: all 3 selectable Node(s) have the handler (gpu-1, gpu-2 by re-audit; " \
                      "gpu-9 by status.runtimeHandlers)" in run.out, run
        assert re.search(r"^changed: \[\S+ -> localhost\] => \(item=nvidia\)", run.out, re.MULTILINE), run
        # the read that found nothing and the apply, which the apiserver ran as a dry run: nothing stored
        assert written(run) == [("nvidia", "created", 2)], run
        assert everything(api)[0] == []
        assert all(not os.path.exists(node.config_path) for node in nodes)
        assert node_listings(run) == [1], run

        run = remediate(tmp_path, private_cluster, hosts, GPU_ONLY)
        assert run.rc == 0, run
        for node in nodes:  # the premise: each node's real containerd loads the handler
            assert "nvidia" in parse_gathered.summarize_dump(node.dump()[1])["runtime_names"], node.name
        assert written(run) == [("nvidia", "created", 2)], run
        assert node_listings(run) == [1], run
        assert everything(api)[0] == ["nvidia"]
        stored = live(api, "nvidia")
        assert stored["handler"] == "nvidia"
        assert stored["scheduling"] == {"nodeSelector": GPU}
        assert stored["overhead"] == {"podFixed": {"cpu": "250m", "memory": "120Mi"}}
        assert managers(stored) == [("gpurt", "Apply")]


def test_gate_refuses_for_nodes_outside_the_run_naming_them_and_force_overrides(tmp_path, private_cluster):
    node, host = gate_node(tmp_path, "gpu-1", "2.1")
    cluster_nodes = [node_object("gpu-1", GPU),
                     node_object("gpu-7", GPU, ["runc"]),  # reports no nvidia
                     node_object("gpu-8", GPU),  # reports nothing: unknown
                     node_object("cp-1", {}, ["runc"], [{"key": "node-role.kubernetes.io/control-plane",
                                                         "effect": "NoSchedule"}])]
    desired = [{"name": "nvidia", "handler": "nvidia", "node_selector": GPU},
               {"name": "nvidia-any", "handler": "nvidia"}]
    with on_cluster(private_cluster, cluster_nodes) as api:
        run = remediate(tmp_path, private_cluster, {"gpu-1": host}, desired)
        assert run.rc == 2, run
        assert HEAD + ": not safe to write: of 3 selectable Node(s), lacking handler nvidia: gpu-7 " \
                      "(status.runtimeHandlers: runc); unknown: gpu-8 (not in this run and its kubelet reports no " \
                      "status.runtimeHandlers)" in run.out, run
        # The tainted control-plane Node cannot take pods of a class that does not tolerate it.
        assert "RuntimeClass nvidia-any (handler nvidia, nodeSelector none): not safe to write: of 3 selectable " \
               "Node(s)" in run.out, run
        assert "fix the Nodes, or set gpurt_runtimeclass_gate_force=true" in run.out, run
        assert written(run) == [], run
        assert everything(api)[0] == []

        run = remediate(tmp_path, private_cluster, {"gpu-1": host}, desired[:1], gpurt_runtimeclass_gate_force=True)
        assert run.rc == 0, run
        assert HEAD + ": written despite the gate (force): of 3 selectable Node(s), lacking handler nvidia: gpu-7" \
            in run.out, run
        assert written(run) == [("nvidia", "created", 2)], run
        assert everything(api)[0] == ["nvidia"]
        assert managers(live(api, "nvidia")) == [("gpurt", "Apply")]


def test_existing_runtimeclasses_keep_their_fields_and_the_default_list_leaves_them_alone(tmp_path, private_cluster):
    # The issue: --limit to some hosts with the default list overwrote nvidia and nvidia-cdi,
    # dropping their nodeSelector and overhead.
    existing = [
        {"metadata": {"name": "nvidia", "labels": {"team": "ml"}}, "handler": "nvidia",
         "overhead": {"podFixed": {"cpu": "100m"}}, "scheduling": {"nodeSelector": GPU}},
        {"metadata": {"name": "gpu-cdi", "annotations": {"note": "by hand"}}, "handler": "nvidia-cdi"},
    ]
    node, host = gate_node(tmp_path, "gpu-1", "2.1")
    with on_cluster(private_cluster, [node_object("gpu-1", GPU)], existing) as api:
        before = [live(api, name) for name in ("nvidia", "gpu-cdi")]
        run = remediate(tmp_path, private_cluster, {"gpu-1": host}, containerd_runtime_enable_nvidia_cdi=True)
        assert run.rc == 0, run
        assert HEAD.replace("nodeSelector nvidia.com/gpu.present=true", "nodeSelector none") + \
            ": left alone: RuntimeClass nvidia exists (handler nvidia); the default list does not rewrite it" in run.out
        assert "RuntimeClass gpu-cdi already serves handler nvidia-cdi" in run.out, run
        assert written(run) == [], run
        # not written: the same versions, the same managers
        assert [live(api, name) for name in ("nvidia", "gpu-cdi")] == before
        assert sorted(everything(api)[0]) == ["gpu-cdi", "nvidia"]

        # Named, with only its handler and a label: applied, and nothing else of it changes.
        run = remediate(tmp_path, private_cluster, {"gpu-1": host}, [{"name": "nvidia", "handler": "nvidia",
                                                                      "labels": {"owner": "gpurt"}}],
                        containerd_runtime_enable_nvidia_cdi=True)
        assert run.rc == 0, run
        assert written(run) == [("nvidia", "updated", 2)], run  # the read and one apply
        stored = live(api, "nvidia")
        assert stored["metadata"]["uid"] == before[0]["metadata"]["uid"]
        assert stored["overhead"] == {"podFixed": {"cpu": "100m"}}
        assert stored["scheduling"] == {"nodeSelector": GPU}
        assert stored["metadata"]["labels"] == {"team": "ml", "owner": "gpurt"}
        assert managers(stored) == [(EARLIER, "Update"), ("gpurt", "Apply")]
        assert live(api, "gpu-cdi") == before[1]


def test_gate_refuses_when_a_selected_node_cannot_be_remediated(tmp_path, private_cluster):
    nodes = dict([gate_node(tmp_path, "gpu-1", "2.1", GPU),
                  gate_node(tmp_path, "gpu-2", "1.7", GPU, containerd_runtime_containerd_bin="/nonexistent/containerd"),
                  gate_node(tmp_path, "cpu-1", "1.6", CPU)])
    hosts = dict((node.name, host) for node, host in nodes.items())
    # gpu-2's kubelet reports the handler; a host of this run that failed is unknown all the same.
    with on_cluster(private_cluster, [node_object("gpu-2", GPU, ["nvidia", "runc"])]) as api:
        run = remediate(tmp_path, private_cluster, hosts, GPU_ONLY)
        assert run.rc == 2, run
        assert run.recap["gpu-2"]["failed"] == 1
        assert HEAD + ": not safe to write: of 2 selectable Node(s), unknown: gpu-2 (its remediation failed)" \
            in run.out, run
        assert written(run) == [], run
        assert everything(api)[0] == []


def test_gate_judges_each_runtimeclass_on_the_nodes_it_can_select(tmp_path, private_cluster):
    # containerd 1.6 has no CDI, so cpu-1 fails when asked for nvidia-cdi: nvidia-cdi (GPU nodes
    # only) may still be created; nvidia (no nodeSelector: every node) may not.
    nodes = dict([gate_node(tmp_path, "gpu-1", "2.1", GPU), gate_node(tmp_path, "gpu-2", "1.7", GPU),
                  gate_node(tmp_path, "cpu-1", "1.6", CPU)])
    hosts = dict((node.name, host) for node, host in nodes.items())
    desired = [{"name": "nvidia", "handler": "nvidia"},
               {"name": "nvidia-cdi", "handler": "nvidia-cdi", "node_selector": GPU}]
    with on_cluster(private_cluster) as api:
        run = remediate(tmp_path, private_cluster, hosts, desired, containerd_runtime_enable_nvidia_cdi=True)
        assert run.rc == 2, run
        assert "ask for containerd's enable_cdi, which containerd 1.6 does not have" in run.text, run
        assert "RuntimeClass nvidia (handler nvidia, nodeSelector none): not safe to write: of 3 selectable Node(s), " \
               "unknown: cpu-1 (its remediation was refused)" in run.out, run
        assert written(run) == [("nvidia-cdi", "created", 2)], run
        assert everything(api)[0] == ["nvidia-cdi"]
        assert live(api, "nvidia-cdi")["handler"] == "nvidia-cdi"


def test_gate_is_off_by_default(tmp_path, private_cluster):
    node, host = gate_node(tmp_path, "gpu-1", "2.1", GPU)
    with on_cluster(private_cluster) as api:
        run = remediate(tmp_path, private_cluster, {"gpu-1": host}, gpurt_manage_runtimeclasses=False)
        assert run.rc == 0, run
        # No RuntimeClass read or written: the gated play's tasks did not run.
        assert written(run) == [], run
        assert not [head for head, result in results_of(run) if "runtimeclass" in result or "action" in result], run
        assert re.search(r"^TASK \[Write the RuntimeClasses the gate lets through \(server-side apply\)\] \*+\n"
                         r"skipping: ", run.out, re.MULTILINE), run
        assert everything(api)[0] == []
        # The Nodes are listed once all the same: for the re-audit's labels and the hosts without a Node object.
        assert node_listings(run) == [1], run


def test_a_write_pinned_to_the_judged_uid_never_re_creates_a_deleted_class_nor_writes_a_new_one(api, module):
    """prevent.yml passes the uid each class had when it was judged (issue 38). Measured on the real
    apiserver: an apply carrying a uid that matches no object is refused (409), one whose uid differs from
    the object's is refused (422); the module says which, and writes nothing."""
    # On the shared cluster every class this test makes selects no Node of it (a class without a selector
    # would select every Node that other tests judge meanwhile); the write it pins is a label.
    private, gated = {"gpurt.test/rcc-pin": "no-node"}, {"gpurt.test/rcc-pin": "gated"}
    name = PREFIX + "pin-gated"
    delete(api, name)
    api.runtimeclass(name, "nvidia", selector=private)
    judged = live(api, name)["metadata"]["uid"]
    delete(api, name)
    result, _run = module(name=name, handler="nvidia", node_selector=private, labels=gated, uid=judged)
    assert result["failed"] and "was deleted since it was judged (uid %s): not re-created" % judged in result["msg"]
    assert live(api, name) is None
    api.runtimeclass(name, "nvidia", selector=private)  # re-created by its owner, another object under the same name
    result, _run = module(name=name, handler="nvidia", node_selector=private, labels=gated, uid=judged)
    assert result["failed"] and "was re-created since it was judged" in result["msg"], result
    assert not live(api, name)["metadata"].get("labels")
    # the object judged: written
    now = live(api, name)["metadata"]["uid"]
    result, _run = module(name=name, handler="nvidia", node_selector=private, labels=gated, uid=now)
    assert result.get("failed") is not True and result["action"] == "updated", result
    assert live(api, name)["metadata"]["labels"] == gated
    delete(api, name)


def racing_session(real_cluster, api, name, race):
    """A real session of the module's own code whose read of RuntimeClass NAME is followed at once by RACE
    (another client's write on the real apiserver): the object the module judged is gone or replaced when
    its apply arrives, so the apiserver itself refuses the uid the apply carries."""
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import runtimeclass_apply
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.session import session_from_params
    params = dict((key, None) for key in runtimeclass_apply.argument_spec())
    params["kubeconfig"] = real_cluster.kubeconfig
    session = session_from_params(params)
    read = session.get

    def get(resource, obj_name, namespace=None):
        obj = read(resource, obj_name, namespace)
        if resource == "runtimeclasses" and obj_name == name:
            race()
        return obj
    session.get = get
    return session


@pytest.mark.parametrize("race, status", [("deleted", 409), ("re-created", 422)])
@pytest.mark.parametrize("check_mode", [False, True])
def test_the_apiservers_own_uid_refusals_are_a_clear_failure(real_cluster, api, fresh, race, status, check_mode):
    """The race the pre-read cannot close: the class is deleted (or deleted and re-created) between the
    module's read and its apply. Measured on the real apiserver: the apply carrying the judged uid is refused
    with 409 ("uid mismatch ... no existing object was found") or 422 ("metadata.uid: ... field is
    immutable"); the module reports a refusal in words, without the apiserver's body, and nothing is written."""
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import runtimeclass_apply
    name = fresh("pin-race-%s-%s" % (race, "check" if check_mode else "write"))
    api.runtimeclass(name, "nvidia")
    judged = live(api, name)["metadata"]["uid"]

    def another_client():
        delete(api, name)
        if race == "re-created":
            api.runtimeclass(name, "nvidia")
    session = racing_session(real_cluster, api, name, another_client)
    desired = runtimeclass_apply.desired_from_params(dict(
        name=name, state="present", handler="nvidia", node_selector={"pool": "gpu"}))
    try:
        with pytest.raises(kube.KubeError) as refused:
            runtimeclass_apply.ensure_present(session, name, desired, check_mode=check_mode, uid=judged)
    finally:
        session.close()
    message = str(refused.value)
    assert refused.value.status == status, message
    assert message == ("RuntimeClass %s was deleted or re-created since it was judged (uid %s): not written"
                       % (name, judged)), message
    assert not re.search(r"[{}]|Traceback|uid mismatch|immutable", message), message
    stored = live(api, name)
    if race == "deleted":
        assert stored is None  # not re-created
    else:
        assert stored["metadata"]["uid"] != judged and "scheduling" not in stored  # the new object: unwritten

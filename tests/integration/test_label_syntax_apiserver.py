"""The label syntax the manifests are checked with (module_utils/_k8s/label_syntax.py) against the real
kube-apiserver: each selector of the unit cases is POSTed as a RuntimeClass's scheduling.nodeSelector, and
what the apiserver stores or rejects is what the rule says. A nodeSelector value of another type is
rejected (400); a null one is stored as "" on create and removes the key in a strategic-merge patch
(kubectl apply), the two meanings the refusal names."""
import json
import urllib.error
import urllib.request
import uuid

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import label_syntax
from tests.unit.plugins.module_utils.test_label_syntax import CASES

pytestmark = pytest.mark.integration
PATH = "/apis/node.k8s.io/v1/runtimeclasses"
# In every selector: no Node of the shared cluster has it, so no other test's audit judges these classes.
PRIVATE = {"gpurt.test/label-syntax": "no-node"}


def request(cluster, method, path, body=None, content_type="application/json"):
    """(status, object or message) of one admin request."""
    req = urllib.request.Request(cluster.server + path, method=method, headers={"Content-Type": content_type},
                                 data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(req, context=cluster.admin_ssl_context(), timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()).get("message")


def create(cluster, selector):
    """What the apiserver does with a RuntimeClass of this selector: (status, stored selector or message).
    The class is private (a unique name, PRIVATE in its selector) and deleted at once."""
    name = "label-syntax-" + uuid.uuid4().hex[:10]
    body = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
            "handler": "label-syntax", "scheduling": {"nodeSelector": dict(selector, **PRIVATE)}}
    status, got = request(cluster, "POST", PATH, body)
    if status == 201:
        request(cluster, "DELETE", "%s/%s" % (PATH, name))
        stored = dict(got["scheduling"]["nodeSelector"])
        assert stored.pop("gpurt.test/label-syntax") == "no-node"
        return status, stored
    return status, got


@pytest.mark.parametrize("selector,stored", CASES, ids=[repr(c[0])[:40] for c in CASES])
def test_the_rule_stores_and_rejects_what_the_apiserver_does(real_cluster, selector, stored):
    status, got = create(real_cluster, selector)
    assert (status == 201) == stored, (status, got)
    assert (label_syntax.map_error(selector, "scheduling.nodeSelector") is None) == stored
    if stored:
        assert got == selector
    else:
        assert status == 422 and "scheduling.nodeSelector: Invalid value" in got, got


@pytest.mark.parametrize("value,kind", [(["gpu"], "array"), (True, "bool"), (1, "number")])
def test_a_value_of_another_type_is_rejected(real_cluster, value, kind):
    status, got = create(real_cluster, {"gpu": value})
    assert status == 400 and "cannot unmarshal %s into Go struct field" % kind in got, (status, got)
    assert "which the apiserver rejects" in label_syntax.value_error(value)


def test_a_null_value_has_two_meanings(real_cluster):
    status, got = create(real_cluster, {"gpu": None})
    assert status == 201 and got == {"gpu": ""}
    name = "label-syntax-" + uuid.uuid4().hex[:10]
    body = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
            "handler": "label-syntax", "scheduling": {"nodeSelector": dict(PRIVATE, gpu="yes")}}
    assert request(real_cluster, "POST", PATH, body)[0] == 201
    try:
        patch = {"scheduling": {"nodeSelector": {"gpu": None}}}  # what kubectl apply sends for `gpu: null`
        status, got = request(real_cluster, "PATCH", "%s/%s" % (PATH, name), patch,
                              "application/strategic-merge-patch+json")
        assert status == 200 and got["scheduling"]["nodeSelector"] == PRIVATE
    finally:
        request(real_cluster, "DELETE", "%s/%s" % (PATH, name))
    message = label_syntax.value_error(None)
    assert "stores it as \"\" when it creates the object" in message and "removes the key" in message

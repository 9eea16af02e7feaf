"""_k8s/resources.py: what the collection reads and writes through a session: a list of every page (limit and
continue), get, server-side apply, delete; single objects and writes share the session's loop."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import objects as k8s_objects
from tests.lib.fake_apiserver import status_body
from tests.lib.kube_session import DELAY, Sleeps, lister, make_runtimeclasses


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

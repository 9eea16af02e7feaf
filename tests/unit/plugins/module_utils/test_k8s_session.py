"""_k8s/session.py: the request loop of a module run: retries with backoff, one deadline no slow answer can
stretch, errors that are not retried, answers decoded into clear messages, the list options checked."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from tests.lib.kube_session import DELAY, TOKEN, Sleeps, lister


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


def test_answer_that_is_not_json_is_a_clear_error(fake):
    fake.respond_always("nodes", {"status": 200, "body": b"<html>a web server, not an apiserver</html>"})
    with lister(fake) as client, pytest.raises(kube.KubeError) as err:
        client.list_all("nodes")
    assert str(err.value) == "%s answered listing nodes with a body that is not JSON" % fake.url


@pytest.mark.parametrize("option, value", [("page_size", 0), ("retries", -1), ("request_timeout", 0),
                                           ("retry_delay", -1), ("deadline", 0)])
def test_bad_list_options_are_refused(fake, option, value):
    with pytest.raises(kube.KubeError, match=option):
        lister(fake, **{option: value})

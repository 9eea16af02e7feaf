"""The writer of the verified handler labels (module_utils/_k8s/node_labels): which Nodes get a patch and
what it says, from the state the run listed; its options' validation. The patches against a real
kube-apiserver are in tests/integration/test_labels_by_proof.py; here a recorder stands in for the
session, to count what would be sent."""
import calendar
import time

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import node_labels as nl

P = "runtime-gate.gpurt.io/"
NOW = calendar.timegm(time.strptime("2026-12-05T10:00:00Z", "%Y-%m-%dT%H:%M:%SZ"))
HOUR = 3600.0
REFRESH = 6 * HOUR  # a quarter of 24h


class Recorder(object):
    """What label_node sends: merge patches (and GETs of Nodes given without their listed state)."""

    def __init__(self, nodes=None, refuse=None):
        self.nodes = nodes or {}
        self.refuse = refuse
        self.sent = []

    def get(self, resource, name):
        self.sent.append(("GET", name))
        return self.nodes.get(name)

    def merge_patch(self, resource, name, body, field_manager, dry_run=False):
        self.sent.append(("PATCH", name, body, field_manager, dry_run))
        if self.refuse:
            raise self.refuse
        return {"metadata": {"name": name}}


def item(name="gpu-1", labels=None, uid="uid-1", current=None, listed=True):
    if listed and current is None:
        current = {"labels": {}, "checked_at": None, "set_by": {}}
    return nl._wanted({"name": name, "labels": labels or {}, "uid": uid, "current": current if listed else None})


def checked(hours_ago):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - hours_ago * HOUR))


def label(session, entry, check_mode=False, checked_at="2026-12-05T10:00:00Z"):
    return nl.label_node(session, entry, checked_at, "gpurt-runtime-gate-labels", REFRESH, NOW, check_mode)


def test_matching_labels_checked_recently_get_no_request():
    session = Recorder()
    current = {"labels": {P + "nvidia": "true", "team": "ml"}, "checked_at": checked(5), "set_by": {}}
    result = label(session, item(labels={P + "nvidia": "true"}, current=current))
    assert result["action"] == "unchanged" and session.sent == []


def test_matching_labels_checked_longer_ago_than_a_quarter_of_max_age_are_refreshed():
    session = Recorder()
    current = {"labels": {P + "nvidia": "true"}, "checked_at": checked(7), "set_by": {}}
    result = label(session, item(labels={P + "nvidia": "true"}, current=current))
    assert result["action"] == "refreshed" and result["added"] == [] and result["removed"] == []
    (_verb, _name, body, _manager, _dry), = session.sent
    assert body == {"metadata": {"uid": "uid-1", "annotations": {P + "checked-at": "2026-12-05T10:00:00Z"}}}


@pytest.mark.parametrize("at", [None, "yesterday", "2026-12-05T12:00:00Z"])
def test_a_missing_unreadable_or_future_check_time_is_refreshed(at):
    session = Recorder()
    current = {"labels": {P + "nvidia": "true"}, "checked_at": at, "set_by": {}}
    assert label(session, item(labels={P + "nvidia": "true"}, current=current))["action"] == "refreshed"


def test_every_label_under_the_prefix_that_is_not_proof_is_removed_and_who_set_it_is_named():
    session = Recorder()
    current = {"labels": {P + "nvidia": "true", P + "kata": "true", P + "runc": "false", "team": "ml"},
               "checked_at": checked(1),
               "set_by": {P + "nvidia": ["kubectl-label (Update)"],
                          P + "kata": ["gpurt-runtime-gate-labels (Apply)", "argocd (Apply)"],
                          P + "runc": ["gpurt-runtime-gate-labels (Update)"]}}
    result = label(session, item(labels={P + "runc": "true"}, current=current))
    assert result["action"] == "labeled"
    assert result["added"] == [P + "runc"] and result["removed"] == [P + "kata", P + "nvidia"]
    assert result["set_by"] == {P + "nvidia": ["kubectl-label (Update)"], P + "kata": ["argocd (Apply)"]}
    (_verb, _name, body, manager, dry), = session.sent
    assert body["metadata"]["labels"] == {P + "runc": "true", P + "kata": None, P + "nvidia": None}
    assert body["metadata"]["uid"] == "uid-1" and manager == "gpurt-runtime-gate-labels" and dry is False


def test_check_mode_sends_a_dry_run():
    session = Recorder()
    label(session, item(labels={P + "nvidia": "true"}), check_mode=True)
    assert session.sent[0][4] is True


def test_a_uid_the_apiserver_refuses_is_a_recreated_node():
    refused = kube.KubeError("422", status=422, causes=[{"field": "metadata.uid", "message": "field is immutable"}])
    result = label(Recorder(refuse=refused), item(labels={P + "nvidia": "true"}))
    assert result["action"] == "recreated" and "re-created since it was judged" in result["problem"]
    assert "not labeled" in result["problem"]


def test_another_refusal_of_one_node_is_that_nodes_problem():
    refused = kube.KubeError("422 ... metadata.labels: Invalid value", status=422,
                             causes=[{"field": "metadata.labels"}])
    result = label(Recorder(refuse=refused), item(labels={P + "nvidia": "true"}))
    assert result["action"] == "failed" and "metadata.labels" in result["problem"]


@pytest.mark.parametrize("status", [401, 403, 500, None])
def test_what_stops_every_node_alike_is_raised(status):
    with pytest.raises(kube.KubeError):
        label(Recorder(refuse=kube.KubeError("no", status=status)), item(labels={P + "nvidia": "true"}))


def test_without_the_listed_state_the_node_is_read_and_its_uid_compared():
    node = {"metadata": {"name": "gpu-1", "uid": "uid-2", "labels": {P + "x": "true"}}}
    session = Recorder(nodes={"gpu-1": node})
    result = label(session, item(labels={}, uid="uid-1", listed=False))
    assert result["action"] == "recreated" and "uid uid-1, now uid-2" in result["problem"]
    assert session.sent == [("GET", "gpu-1")]


def test_without_uid_or_state_the_read_nodes_uid_pins_the_write():
    managed = [{"manager": "kubectl-label", "operation": "Update",
                "fieldsV1": {"f:metadata": {"f:labels": {"f:%sx" % P: {}}}}}]
    node = {"metadata": {"name": "gpu-1", "uid": "uid-2", "labels": {P + "x": "true"}, "managedFields": managed}}
    session = Recorder(nodes={"gpu-1": node})
    result = label(session, nl._wanted({"name": "gpu-1", "labels": {}}))
    assert result["action"] == "labeled" and result["removed"] == [P + "x"]
    assert result["set_by"] == {P + "x": ["kubectl-label (Update)"]}
    assert session.sent[1][2]["metadata"]["uid"] == "uid-2"


def test_a_node_that_does_not_exist_is_never_written():
    session = Recorder()
    assert label(session, nl._wanted({"name": "gone", "labels": {}}))["action"] == "no node"
    assert session.sent == [("GET", "gone")]


def test_nodes_that_lose_a_label_are_written_first():
    keep = item("a", labels={P + "nvidia": "true"})
    lose = item("b", labels={}, current={"labels": {P + "nvidia": "true"}, "checked_at": None, "set_by": {}})
    unknown = nl._wanted({"name": "c", "labels": {}})
    assert [i[0] for i in nl._removes_first([keep, lose, unknown])] == ["b", "c", "a"]


@pytest.mark.parametrize("entry,message", [
    ({"labels": {}}, "every entry needs a name"),
    ({"name": "n", "labels": {"team": "true"}}, "only runtime-gate.gpurt.io/<handler>"),
    ({"name": "n", "labels": {P + "x": "yes"}}, "only runtime-gate.gpurt.io/<handler>"),
    ({"name": "n", "labels": {}, "uid": ""}, "nodes[n].uid must be"),
    ({"name": "n", "labels": {}, "current": {"labels": {}}}, "nodes[n].current needs uid"),
    ({"name": "n", "labels": {}, "uid": "u", "current": "x"}, "nodes[n].current must be"),
])
def test_bad_entries_are_named(entry, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        nl._wanted(entry)


def test_checked_at_is_written_as_given():
    session = Recorder()
    label(session, item(labels={P + "nvidia": "true"}), checked_at="2026-12-04T09:00:00Z")
    assert session.sent[0][2]["metadata"]["annotations"] == {P + "checked-at": "2026-12-04T09:00:00Z"}


@pytest.mark.parametrize("value,message", [
    ("2026-12-04 09:00:00", "checked_at must be a UTC time in the annotation's format"),
    ("yesterday", "checked_at must be a UTC time"),
    ("2026-12-05T12:00:00Z", "is later than now"),
])
def test_bad_checked_at_is_refused_with_its_format(value, message):
    with pytest.raises(ValueError, match=message):
        nl.given_checked_at(value, NOW)


def test_checked_at_in_the_past_or_within_the_clock_skew_is_taken():
    assert nl.given_checked_at("2026-12-04T09:00:00Z", NOW) == "2026-12-04T09:00:00Z"
    assert nl.given_checked_at("2026-12-05T10:00:30Z", NOW) == "2026-12-05T10:00:30Z"
    assert nl.given_checked_at(None, NOW) is None


class Failed(Exception):
    pass


class FakeModule(object):
    """Only the options' validation: it fails before a session is opened."""

    check_mode = False

    def __init__(self, **params):
        self.params = dict((name, option.get("default")) for name, option in nl.argument_spec().items())
        self.params.update(params)

    def fail_json(self, **result):
        raise Failed(result)


@pytest.mark.parametrize("params,message", [
    (dict(nodes=[], checked_at="soon"), "checked_at must be a UTC time"),
    (dict(nodes=[], max_age="a day"), "max_age must be a positive duration"),
    (dict(nodes=[{"name": "n", "labels": {}}, {"name": "n", "labels": {}}]), "each Node once; given more than once: n"),
])
def test_the_module_refuses_bad_options_before_any_request(params, message):
    with pytest.raises(Failed) as failed:
        nl.run(FakeModule(**params))
    result = failed.value.args[0]
    assert message in result["msg"] and result["api_requests"] == 0 and result["nodes"] == []


@pytest.mark.parametrize("problems", ["one", [1], {"a": 1}])
def test_given_problems_must_be_lines(problems):
    with pytest.raises(ValueError, match=r"nodes\[n\].problems must be a list of strings"):
        nl._entry({"name": "n", "labels": {}, "problems": problems})


def test_given_problems_come_with_the_entry():
    assert nl._entry({"name": "n", "labels": {}, "problems": ["x"]})[4] == ["x"]
    assert nl._entry({"name": "n", "labels": {}})[4] == []

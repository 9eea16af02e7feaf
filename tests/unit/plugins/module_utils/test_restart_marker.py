"""Issue 37: the restart marker (module_utils/_restart_marker) and what reads it: the gather's key, the
restart_pending check (also where no running view exists), the role's pending restart, the summary."""
import json
import os
import shutil
import tempfile

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _restart_marker as marker
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import restart
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report import model
from tests.lib.host_roots import FILES, NAME, NODE_PATHS, machine, spelled, under


def params(root, state_dir=None):
    out = {"host_root": str(root)}
    if state_dir:
        out["state_dir"] = state_dir
    return out


def test_the_marker_lives_under_the_host_root_once_one_per_config(tmp_path):
    root = str(tmp_path)
    main = root + "/etc/containerd/config.toml"
    assert marker.path(root, None, main) == root + "/var/lib/gpurt-runtime-gate/restart-pending.json"
    # the state dir as a node path or already under the root: the root once
    assert marker.path(root, root + "/srv/state", main) == marker.path(root, "/srv/state", main) == \
        root + "/srv/state/restart-pending.json"
    other = marker.path(root, None, root + "/etc/k0s/containerd.toml")
    assert os.path.dirname(other) == root + "/var/lib/gpurt-runtime-gate"
    assert os.path.basename(other).startswith("restart-pending-") and other != marker.path(root, None, main)
    assert marker.path("/", None, "/etc/containerd/config.toml") == "/var/lib/gpurt-runtime-gate/restart-pending.json"


def test_write_read_merge_remove(tmp_path):
    p = params(tmp_path)
    main = str(tmp_path / "etc/containerd/config.toml")
    assert marker.read(p, main) is None
    where = marker.write(p, main, ["/a", "/b"], now=1796567852.5)
    got = marker.read(p, main)
    assert got == {"path": where, "written_at": 1796567852.5, "time": "2026-12-06T14:37:32Z", "files": ["/a", "/b"],
                   "error": None}
    marker.write(p, main, ["/b", "/c"], now=1796567900.0)  # an earlier pending restart is kept in the files
    assert marker.read(p, main)["files"] == ["/a", "/b", "/c"]
    assert [n for n in os.listdir(os.path.dirname(where)) if n.startswith(".gpurt-")] == []  # no temporary left
    marker.remove(p, main)
    assert marker.read(p, main) is None
    marker.remove(p, main)  # not there: no error


@pytest.mark.parametrize("text, why", [("{not json", "not a restart marker of this role"),
                                       ("[1, 2]", "not a JSON object"), ('{"files": []}', "written_at")])
def test_a_marker_that_does_not_parse_still_says_a_restart_is_pending(tmp_path, text, why):
    p = params(tmp_path)
    main = str(tmp_path / "etc/containerd/config.toml")
    where = marker.path(p["host_root"], None, main)
    os.makedirs(os.path.dirname(where))
    with open(where, "w") as handle:
        handle.write(text)
    got = marker.read(p, main)
    assert got["path"] == where and why in got["error"]
    assert "says a restart is pending" in marker.line(got)


MARKER = {"path": "/var/lib/gpurt-runtime-gate/restart-pending.json", "written_at": 1796567852.5,
          "time": "2026-12-06T14:37:32Z", "files": ["/etc/containerd/conf.d/zz-gpurt-nvidia.toml"], "error": None}


def audit(running, restart_marker):
    gathered = {"loaded": {"runtimes": {"runc": {}, "nvidia": {}}, "runtime_names": ["nvidia", "runc"],
                           "default_runtime_name": "runc", "version": 3},
                "version": "2.1.9", "version_major": 2, "version_minor": 1, "running": running,
                "restart_marker": restart_marker}
    found, ran, skipped = checks.check_node("n1", gathered, [], labels={})
    return [f for f in found if f["check"] == "restart_pending"], ran, skipped


def test_the_audit_reports_the_marker_where_no_running_view_exists():
    no_view = {"source": "none", "error": "crictl not found; no running containerd daemon uses the config"}
    found, ran, skipped = audit(no_view, dict(MARKER))
    assert "restart_pending" in ran
    assert [(f["severity"], f["subject"]) for f in found] == [("error", "restart_marker")]
    assert found[0]["evidence"]["time"] == MARKER["time"] and found[0]["evidence"]["files"] == MARKER["files"]
    assert MARKER["time"] in found[0]["message"] and MARKER["files"][0] in found[0]["message"]
    # Without a marker the same node skips the check, as before: nothing can be said.
    found, ran, skipped = audit(no_view, None)
    assert found == [] and "restart_pending" in skipped


def test_the_marker_is_reported_where_the_start_time_fallback_cannot_judge():
    process = {"source": "process", "daemon_started": None, "config_newest_mtime": None, "error": "no mtime"}
    found, ran, _skipped = audit(process, dict(MARKER))
    assert "restart_pending" in ran and [(f["severity"], f["subject"]) for f in found] == [("error", "restart_marker")]


def test_the_marker_and_the_running_view_both_speak():
    crictl = {"source": "crictl", "runtimes": ["runc"], "runtime_details": {"runc": {}}, "endpoint": "unix:///x"}
    found, _ran, _skipped = audit(crictl, dict(MARKER))
    assert sorted((f["severity"], f["subject"]) for f in found) == [("error", "nvidia"), ("error", "restart_marker")]


def test_the_role_restarts_for_a_marker_and_names_what_the_running_view_says_too():
    specs = [{"name": "nvidia", "table": {"options": {"BinaryName": "/usr/bin/nvidia-container-runtime"}}}]
    opts = {"dropin_dir": "/etc/containerd/conf.d"}
    why = restart.restart_pending({"restart_marker": dict(MARKER), "running": {"source": "none"}}, specs, opts)
    assert why.startswith("the role wrote /etc/containerd/conf.d/zz-gpurt-nvidia.toml at 2026-12-06T14:37:32Z")
    both = restart.restart_pending({"restart_marker": dict(MARKER), "running": {"source": "crictl", "runtimes": []}},
                                   specs, opts)
    assert both.startswith(why) and "nvidia is not running" in both
    assert restart.restart_pending({"restart_marker": None, "running": {"source": "none"}}, specs, opts) is None


def test_the_summary_counts_a_host_whose_files_were_written_when_the_restart_failed():
    entries = [
        {"node": "a", "status": "FAILED", "failing": True, "counts": dict((s, 0) for s in checks.SEVERITIES),
         "remediation": {"outcome": "failed", "changed": True}},
        {"node": "b", "status": "FAILED", "failing": True, "counts": dict((s, 0) for s in checks.SEVERITIES),
         "remediation": {"outcome": "failed", "changed": False}},
        {"node": "c", "status": "OK", "failing": False, "counts": dict((s, 0) for s in checks.SEVERITIES),
         "remediation": {"outcome": "unchanged", "changed": False}},
    ]
    summary = model.build(entries, mode="remediation")["summary"]
    assert (summary["changed"], summary["unchanged"]) == (1, 1)


def test_the_marker_is_json_a_person_can_read(tmp_path):
    p = params(tmp_path)
    main = str(tmp_path / "etc/containerd/config.toml")
    with open(marker.write(p, main, ["/a"], now=0)) as handle:
        doc = json.load(handle)
    assert doc["config_path"] == main and doc["time"] == "1970-01-01T00:00:00Z" and "restart" in doc["why"]


# --- the marker is written and read under the host root once (issue 37) -----------------------

@FILES
@given(st.lists(NAME, min_size=1, max_size=2), NODE_PATHS, st.sampled_from(["node", "prefixed"]))
def test_the_restart_marker_is_written_and_read_under_the_root_once(parts, state_dir, form):
    base = tempfile.mkdtemp(prefix="hr", dir="/tmp")
    try:
        root = os.path.join(base, *parts)
        assume(not under(root, state_dir))
        config = machine(root, "/etc/containerd/config.toml")
        params = {"host_root": root, "state_dir": spelled(root, state_dir, form)}
        where = marker.write(params, config, [machine(root, "/etc/containerd/conf.d/zz-gpurt-nvidia.toml")])
        assert where == machine(root, state_dir + "/restart-pending.json") and os.path.isfile(where)
        assert marker.read(params, config)["path"] == where
        assert marker.read({"host_root": root, "state_dir": state_dir}, config)["path"] == where
    finally:
        shutil.rmtree(base, ignore_errors=True)

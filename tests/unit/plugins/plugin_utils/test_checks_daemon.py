"""_checks/daemon.py: whether containerd starts with the config and serves CRI (config_refused,
cri_plugin_disabled), what its default runtime puts at stake (default_runtime_blast_radius), and whether the
running daemon has what the config loads (restart_pending)."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from tests.lib.check_inputs import (DOCKER, DUMP_21, V2, ctx, file_entry, findings_of, gathered_with, ids, loaded, rc,
                                    run)


class TestDefaultRuntime(object):
    def test_runc_default_is_quiet(self):
        c = ctx({"loaded": loaded(default="runc")})
        assert run("default_runtime_blast_radius", c) == [] and run("config_refused", c) == []

    def test_empty_default_is_quiet(self):
        c = ctx({"loaded": loaded(default="")})
        assert run("default_runtime_blast_radius", c) == [] and run("config_refused", c) == []

    def test_nvidia_default_is_a_blast_radius_warning(self):
        out = run("default_runtime_blast_radius", ctx({"loaded": loaded(default="nvidia")}))
        assert ids(out) == [("default_runtime_blast_radius", "warning", "nvidia")]
        assert out[0]["evidence"] == {"default_runtime_name": "nvidia"}


class TestConfigRefused(object):
    def test_default_not_loaded_means_the_cri_plugin_will_not_load(self):
        c = ctx({"loaded": loaded(names=("runc",), default="nvidia"), "version": "2.1.9", "version_major": 2})
        out = run("config_refused", c)
        assert ids(out) == [("config_refused", "error", "nvidia")]
        assert out[0]["evidence"]["loaded_runtimes"] == ["runc"]
        # containerd's own words (measured on 1.6, 1.7, 2.1, 2.3.4 daemons)
        assert out[0]["evidence"]["cause"] == (
            "failed to load plugin io.containerd.cri.v1.runtime: invalid plugin config: no corresponding runtime "
            "configured in `containerd.runtimes` for `containerd` `default_runtime_name = \"nvidia\"`")
        assert "no pod runs on the node" in out[0]["message"]

    def test_1x_runtimes_declared_without_runc(self):
        dump = dict(loaded(names=("nvidia",), default="runc"), version=2)
        c = ctx({"loaded": dump, "version": "1.7.24", "version_major": 1, "version_minor": 7,
                 "running": {"source": "process", "crictl_error": "'crictl info' on unix:///s exited 1: "
                             "level=fatal msg=\"... unknown service runtime.v1.RuntimeService\""}})
        out = run("config_refused", c)
        assert ids(out) == [("config_refused", "error", "runc")]
        assert "failed to load plugin io.containerd.grpc.v1.cri" in out[0]["evidence"]["cause"]
        assert "containerd 1.x keeps no runc of its own once a config declares runtimes" in out[0]["message"]
        assert "unknown service runtime.v1.RuntimeService" in out[0]["evidence"]["running_cri"]

    def test_refused_dump_carries_containerds_cause_line(self):
        refused = {"command": "containerd --config /c.toml config dump", "rc": 1,
                   "cause": "containerd: drop-in config version 3 higher than root config version 2",
                   "warnings": []}
        g = {"loaded": None, "refused": refused, "config_path": "/c.toml", "version": "2.3.4", "version_major": 2,
             "version_minor": 3, "files": [
                 file_entry("/c.toml", "main", "version = 2\n"),
                 file_entry("/d/99.toml", "imported", "version = 3\n")]}
        out = run("config_refused", ctx(g))
        assert ids(out) == [("config_refused", "error", "/c.toml")]
        assert out[0]["message"] == ("containerd will not start with this config: containerd: drop-in config "
                                     "version 3 higher than root config version 2")
        assert out[0]["evidence"]["dropins_above_root"] == [{"file": "/d/99.toml", "version": 3, "root_version": 2}]
        assert "/d/99.toml is 3" in out[0]["fix"]

    def test_a_refused_config_skips_what_needs_a_loaded_config(self):
        g = {"loaded": None, "refused": {"cause": "fatal error: out of memory", "command": "c"},
             "config_path": "/c.toml", "version": "2.1.9", "version_major": 2, "imports": [], "files": []}
        found, ran, skipped = checks.run_checks(ctx(g, [rc("nvidia")]))
        assert ids(found) == [("config_refused", "error", "/c.toml")]
        assert "missing_handler" in skipped and "refuses the config" in skipped["missing_handler"]
        assert "dead_imports_glob" in ran


class TestRestartPendingByNodeStatus(object):
    """Without crictl, the Node's status.runtimeHandlers (the kubelet's copy of what the running
    containerd 2.x loaded) is the running view, when it was read well after the daemon started."""
    NO_CRICTL = {"source": "none", "error": "crictl not found (crictl_bin=crictl)"}

    def gathered(self, major=2, running=None):
        return {"loaded": loaded(names=("runc", "nvidia")), "version": "%d.1.9" % major, "version_major": major,
                "version_minor": 1, "running": dict(running or self.NO_CRICTL)}

    def reported(self, handlers, listed_at=1000000.0):
        return {"name": "gpu-1", "runtime_handlers": handlers, "listed_at": listed_at}

    def test_a_loaded_runtime_the_kubelet_does_not_report_is_a_restart_that_did_not_happen(self):
        out = run("restart_pending", ctx(self.gathered(), [rc("nvidia")], node_reported=self.reported(["runc"])))
        assert ids(out) == [("restart_pending", "error", "nvidia")]
        assert "the kubelet reports runc in Node gpu-1 status.runtimeHandlers" in out[0]["message"]
        assert "pods asking for 'nvidia' fail now" in out[0]["message"]
        assert out[0]["evidence"]["reported_runtimes"] == ["runc"]

    def test_a_runtime_no_runtimeclass_here_asks_for_is_a_warning(self):
        out = run("restart_pending", ctx(self.gathered(), [rc("nvidia", selector={"gpu": "true"})],
                                         labels={"gpu": "false"}, node_reported=self.reported(["runc"])))
        assert ids(out) == [("restart_pending", "warning", "nvidia")]
        assert "no pod can use it yet" in out[0]["message"]

    def test_a_reported_runtime_the_config_dropped_is_a_warning(self):
        out = run("restart_pending", ctx(self.gathered(), node_reported=self.reported(["kata", "nvidia", "runc"])))
        assert ids(out) == [("restart_pending", "warning", "kata")]

    def test_the_same_runtimes_are_quiet_and_the_check_runs(self):
        c = ctx(self.gathered(), node_reported=self.reported(["nvidia", "runc"]))
        found, ran, skipped = checks.run_checks(c)
        assert "restart_pending" in ran and not [f for f in found if f["check"] == "restart_pending"]

    @pytest.mark.parametrize("case, why", [
        ("1.x", "containerd before 2.0"),
        ("no handlers", "reports no named status.runtimeHandlers"),
        ("not reported", "reports no named status.runtimeHandlers"),
        ("from manifests", "not read from the cluster"),
        ("started just before the list", "too shortly before the Node was read"),
    ])
    def test_a_status_that_cannot_show_the_running_daemon_is_not_used(self, case, why):
        gathered, reported = self.gathered(), self.reported(["runc"])
        if case == "1.x":
            gathered = self.gathered(major=1)
        elif case == "no handlers":
            reported["runtime_handlers"] = []
        elif case == "not reported":
            reported["runtime_handlers"] = None
        elif case == "from manifests":
            reported["listed_at"] = None
        else:
            gathered["running"]["daemon_started"] = reported["listed_at"] - 30
        found, ran, skipped = checks.run_checks(ctx(gathered, node_reported=reported))
        assert "restart_pending" not in ran and why in skipped["restart_pending"], skipped
        assert not [f for f in found if f["check"] == "restart_pending"]

    def test_with_a_start_time_both_views_speak(self):
        running = dict(self.NO_CRICTL, source="process", daemon_started=900000.0, config_newest_mtime=950000.0)
        out = run("restart_pending", ctx(self.gathered(running=running), [rc("nvidia")],
                                         node_reported=self.reported(["runc"])))
        assert ids(out) == [("restart_pending", "error", "nvidia"), ("restart_pending", "warning", "config")]

    def test_crictl_wins_over_the_node_status(self):
        running = {"source": "crictl", "runtimes": ["nvidia", "runc"], "endpoint": "unix:///s"}
        out = run("restart_pending", ctx(self.gathered(running=running), node_reported=self.reported(["runc"])))
        assert out == []


# --- cri_plugin_disabled ---------------------------------------------------------------------

def test_dockers_file_on_21_is_an_error_naming_the_file_and_key():
    (item,) = findings_of(
        gathered_with([("/etc/containerd/config.toml", "main", DOCKER)], DUMP_21), "cri_plugin_disabled"
    )
    assert item["severity"] == "error" and item["subject"] == V2
    assert '/etc/containerd/config.toml sets disabled_plugins = ["cri"]' in item["message"]
    assert "the dump still lists runtimes (runc)" in item["message"]
    assert item["fix"].startswith('remove "cri" from disabled_plugins in /etc/containerd/config.toml')
    assert item["evidence"]["key"] == "disabled_plugins"
    assert item["evidence"]["files"] == [{"file": "/etc/containerd/config.toml", "names": ["cri"]}]


def test_a_bare_dump_still_names_the_key():
    out, _ran, _skipped = checks.check_node("n1", {"loaded": parse_gathered.summarize_dump(DUMP_21)}, [], {})
    (item,) = [f for f in out if f["check"] == "cri_plugin_disabled"]
    assert "the loaded config sets disabled_plugins = [\"io.containerd.grpc.v1.cri\"]" in item["message"]


def test_other_disabled_plugins_are_no_finding():
    dump = DUMP_21.replace("io.containerd.grpc.v1.cri']", "io.containerd.internal.v1.tracing']")
    text = 'version = 3\ndisabled_plugins = ["io.containerd.internal.v1.tracing"]\n'
    assert (
        findings_of(gathered_with([("/etc/containerd/config.toml", "main", text)], dump), "cri_plugin_disabled") == []
    )

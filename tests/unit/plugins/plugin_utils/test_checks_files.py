import random

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered

V1, V2, V3 = shapes.CRI_PLUGIN_V1, shapes.CRI_PLUGIN_V2, shapes.CRI_PLUGIN_V3


def rc(name, handler=None, selector=None, overhead=None):
    return {"name": name, "handler": handler or name, "node_selector": selector or {},
            "overhead": {"podFixed": overhead} if overhead is not None else None}


def runc_like(name, systemd=None, binary=""):
    return {"name": name, "runtime_type": "io.containerd.runc.v2", "runtime_path": "", "binary_name": binary,
            "systemd_cgroup": systemd, "cdi_devices": None, "plugin": V3}


def loaded(names=("runc", "nvidia"), default="runc", enable_cdi=True, runtimes=None):
    runtimes = runtimes if runtimes is not None else dict((n, runc_like(n)) for n in names)
    return {"version": 3, "imports": [], "cri_plugins": [V3], "runtimes": runtimes,
            "runtime_names": sorted(runtimes), "default_runtime_name": default,
            "enable_cdi": enable_cdi, "cdi_spec_dirs": ["/etc/cdi"]}


def file_entry(path, role, text, loaded_doc=None):
    """A gathered file, parsed; loaded_doc (the dump as a dict) lets a file nothing imports be
    compared with what containerd loaded."""
    entry = {"path": path, "role": role, "content": text, "error": None}
    entry["parsed"] = parse_gathered.summarize_file(entry, loaded_doc)
    return entry


def ids(items):
    return [(f["check"], f["severity"], f["subject"]) for f in items]


KNOWN = object()


def ctx(gathered=None, rcs=(), labels=KNOWN, allocatable=None, node="n1", **options):
    """A check context: labels default to known-and-empty; pass labels=None for unknown."""
    g = gathered if gathered is not None else {"loaded": loaded()}
    return checks.Context(node, g, list(rcs), {} if labels is KNOWN else labels, allocatable, options)


def run(check_id, context):
    """One check's function, as the registry calls it."""
    return checks.BY_ID[check_id].run(context)


def missing(handlers, rcs, labels=KNOWN):
    return run("missing_handler", ctx({"loaded": loaded(names=handlers)}, rcs, labels))


# --- missing_handler ------------------------------------------------------------------------

class TestMissingHandler(object):
    def test_handler_present_is_not_reported(self):
        assert missing(["runc", "nvidia"], [rc("nvidia")]) == []

    def test_missing_handler_without_selector(self):
        out = missing(["runc"], [rc("kata")])
        assert ids(out) == [("missing_handler", "error", "kata")]
        item = out[0]
        assert item["node"] == "n1"
        assert item["evidence"]["runtimeclass"] == "kata"
        assert item["evidence"]["loaded_runtimes"] == ["runc"]
        assert item["evidence"]["scheduling"] == "no nodeSelector"
        assert item["evidence"]["suggestion"] is None
        assert "did you mean" not in item["message"]
        assert "register runtime 'kata'" in item["fix"]

    def test_selector_matching(self):
        out = missing(["runc"], [rc("nvidia", selector={"gpu": "true"})], {"gpu": "true", "zone": "a"})
        assert ids(out) == [("missing_handler", "error", "nvidia")]
        assert out[0]["evidence"]["scheduling"] == "nodeSelector matches"

    def test_selector_not_matching(self):
        assert missing(["runc"], [rc("nvidia", selector={"gpu": "true"})], {"gpu": "false"}) == []
        # a label the node lacks does not match either
        assert missing(["runc"], [rc("nvidia", selector={"gpu": "true"})], {}) == []

    def test_selector_needs_every_key(self):
        selector = {"gpu": "true", "vendor": "nvidia"}
        assert missing(["runc"], [rc("nvidia", selector=selector)], {"gpu": "true"}) == []

    def test_unknown_labels_mean_it_applies(self):
        out = missing(["runc"], [rc("nvidia", selector={"gpu": "true"})], None)
        assert ids(out) == [("missing_handler", "error", "nvidia")]
        assert "labels unknown" in out[0]["evidence"]["scheduling"]

    def test_did_you_mean(self):
        out = missing(["runc", "nvidia"], [rc("gpu", handler="nvidai")])
        assert out[0]["subject"] == "nvidai"
        assert out[0]["evidence"]["suggestion"] == "nvidia"
        assert "did you mean 'nvidia'?" in out[0]["message"]
        assert "fix the RuntimeClass handler to 'nvidia'" in out[0]["fix"]

    def test_no_suggestion_for_unrelated_name(self):
        out = missing(["runc", "nvidia"], [rc("wasm", handler="spin")])
        assert out[0]["evidence"]["suggestion"] is None

    def test_default_entry_is_never_suggested(self):
        # cluster mode: status.runtimeHandlers has "" for the default runtime
        out = missing(["", "runc"], [rc("x", handler="r")])
        assert out[0]["evidence"]["suggestion"] is None

    @pytest.mark.parametrize("handler, loaded_names, rcs", [
        # NVIDIA's real nvidia-cdi handler on a node lacking it: nvidia is a RuntimeClass's own handler
        ("nvidia-cdi", ["runc", "nvidia"], [rc("nvidia")]),
        # the name of a real runtime is missing, not misspelt
        ("crun", ["runc", "nvidia"], []),
        ("runsc", ["runc"], []),
        ("nvidia-cdi", ["runc", "nvidia"], []),
        ("kata-qemu", ["runc", "kata-clh"], []),
        # not close: more than two edits
        ("nvidia-typo", ["runc", "nvidia"], []),
    ])
    def test_no_false_suggestion(self, handler, loaded_names, rcs):
        out = missing(loaded_names, rcs + [rc("x", handler=handler)])
        item = [f for f in out if f["subject"] == handler][0]
        assert item["evidence"]["suggestion"] is None
        assert "did you mean" not in item["message"]

    def test_a_runtimeclass_that_cannot_land_here_does_not_block_the_suggestion(self):
        rcs = [rc("nvidia", selector={"pool": "gpu"}), rc("legacy", handler="nvidai", selector={"pool": "legacy"})]
        out = missing(["runc", "nvidia"], rcs, {"pool": "legacy"})
        assert out[0]["evidence"]["suggestion"] == "nvidia"
        # where both can land, nvidia is a handler in its own right: no suggestion
        out = missing(["runc"], rcs, None)
        assert [f["evidence"]["suggestion"] for f in out] == [None, None]

    def test_transposition_is_one_edit(self):
        assert checks.suggestion("nvdiia", {"nvidia", "runc"}) == "nvidia"
        assert checks.suggestion("nvidia-legcy", {"nvidia-legacy", "runc"}) == "nvidia-legacy"

    def test_missing_lines_sorted_and_unique(self):
        rcs = [rc("b", handler="zeta"), rc("a", handler="alpha"), rc("c", handler="zeta")]
        out = missing(["runc"], rcs)
        assert len(out) == 3
        other = checks.finding("n1", "cdi_disabled", "error", "nvidia-cdi", "m", "f")
        assert checks.missing_lines(out + [other]) == ["MISSING=alpha", "MISSING=zeta"]
        assert checks.missing_lines([]) == []


# --- default runtime ------------------------------------------------------------------------

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


# --- imports --------------------------------------------------------------------------------

def gathered_imports():
    main = "/etc/containerd/config.toml"
    return {
        "loaded": loaded(names=("runc", "nvidia")),
        "imports": [
            {"pattern": "/etc/containerd/conf.d/*.toml", "resolved": "/etc/containerd/conf.d/*.toml",
             "declared_in": main, "matches": []},
            {"pattern": "extra/*.toml", "resolved": "/etc/containerd/extra/*.toml",
             "declared_in": main, "matches": ["/etc/containerd/extra/10-runc.toml"]},
        ],
        "files": [
            file_entry(main, "main", 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml", "extra/*.toml"]\n'),
            file_entry("/etc/containerd/extra/10-runc.toml", "imported",
                       'version = 3\n[plugins."%s".containerd.runtimes.runc]\nruntime_type = "io.containerd.runc.v2"\n' % V3),
            file_entry("/etc/containerd/conf.d/99-nvidia.conf", "unreferenced",
                       'version = 3\n[plugins."%s".containerd.runtimes.nvidia-cdi]\nruntime_type = "io.containerd.runc.v2"\n' % V3),
            file_entry("/etc/containerd/config.d/99-nvidia.toml", "unreferenced",
                       'version = 3\n[plugins."%s".containerd.runtimes.nvidia]\nruntime_type = "io.containerd.runc.v2"\n' % V3),
        ],
    }


class TestImports(object):
    def test_dead_glob(self):
        out = run("dead_imports_glob", ctx(gathered_imports()))
        assert ids(out) == [("dead_imports_glob", "warning", "/etc/containerd/conf.d/*.toml")]
        item = out[0]
        assert item["evidence"]["declared_in"] == "/etc/containerd/config.toml"
        assert item["evidence"]["files_in_dir"] == ["/etc/containerd/conf.d/99-nvidia.conf"]
        # the fix suggests a pattern for what really sits in the dir
        assert "/etc/containerd/conf.d/*.conf" in item["fix"]

    def test_matching_glob_is_not_dead(self):
        out = run("dead_imports_glob", ctx(gathered_imports()))
        assert "extra/*.toml" not in [f["subject"] for f in out]

    def test_orphans(self):
        out = dict((f["subject"], f) for f in run("orphan_dropin", ctx(gathered_imports())))
        assert sorted(out) == ["/etc/containerd/conf.d/99-nvidia.conf", "/etc/containerd/config.d/99-nvidia.toml"]
        conf = out["/etc/containerd/conf.d/99-nvidia.conf"]
        assert conf["severity"] == "error"
        assert conf["evidence"]["declares_runtimes"] == ["nvidia-cdi"]
        assert conf["evidence"]["not_loaded"] == ["nvidia-cdi"]
        assert conf["evidence"]["glob"] == "/etc/containerd/conf.d/*.conf"
        assert conf["fix"] == "rename it to match /etc/containerd/conf.d/*.toml, or add '/etc/containerd/conf.d/*.conf' to imports"
        assert "the glob '/etc/containerd/conf.d/*.conf' would load it" in conf["message"]
        # no loaded config to compare with (refused): a fragment nothing loads is an orphan
        ctk = out["/etc/containerd/config.d/99-nvidia.toml"]
        assert ctk["severity"] == "error" and ctk["evidence"]["not_loaded"] == []
        assert "imports read other dirs only" in ctk["message"]
        assert "/etc/containerd/config.d/*.toml" in ctk["fix"]

    def test_a_fragment_the_loaded_config_carries_is_no_orphan(self):
        """Talos merges its .part files into the cri.toml it imports: the loaded config carries them."""
        nv = 'version = 3\n[plugins."%s".containerd.runtimes.nvidia]\nruntime_type = "io.containerd.runc.v2"\n' % V3
        loaded_doc = {"version": 3, "plugins": {V3: {"enable_cdi": True, "containerd": {"runtimes": {
            "nvidia": {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": "/usr/bin/nv"}}}}}}}
        carried = file_entry("/etc/cri/conf.d/10-nvidia.part", "unreferenced", nv, loaded_doc)
        assert carried["parsed"]["not_carried_count"] == 0
        other = file_entry("/etc/cri/conf.d/20-x.part", "unreferenced", nv.replace("runc.v2", "kata.v2"), loaded_doc)
        assert other["parsed"]["not_carried"] == ['plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia'
                                                  '.runtime_type']
        gathered = {"loaded": loaded(), "imports": [], "files": [
            file_entry("/etc/cri/containerd.toml", "main", "version = 3\n"), carried, other]}
        out = run("orphan_dropin", ctx(gathered))
        assert ids(out) == [("orphan_dropin", "error", "/etc/cri/conf.d/20-x.part")]
        assert "does not carry its plugins" in out[0]["message"]

    def test_a_version_2_fragment_is_compared_under_the_plugin_name_2x_loads_it_with(self):
        loaded_doc = {"plugins": {V3: {"containerd": {"runtimes": {"nvidia": {"runtime_type": "io.containerd.runc.v2"}}}}}}
        entry = file_entry("/etc/containerd/conf.d/a.conf", "unreferenced",
                           'version = 2\n[plugins."%s".containerd.runtimes.nvidia]\nruntime_type = '
                           '"io.containerd.runc.v2"\n' % V2, loaded_doc)
        assert entry["parsed"]["not_carried_count"] == 0

    def test_a_template_placeholder_carries_what_the_generator_substituted(self):
        loaded_doc = {"root": "/var/snap/microk8s/common/var/lib/containerd", "plugins": {}}
        template = file_entry("/args/containerd-template.toml", "unreferenced",
                              'version = 2\nroot = "${SNAP_COMMON}/var/lib/containerd"\n', loaded_doc)
        assert template["parsed"]["not_carried_count"] == 0
        wrong = file_entry("/args/x.toml", "unreferenced", 'version = 2\nroot = "${SNAP_COMMON}/other"\n', loaded_doc)
        assert wrong["parsed"]["not_carried"] == ["root"]

    def test_a_file_that_is_no_fragment_is_no_orphan(self):
        loaded_doc = {"plugins": {}}
        hosts = file_entry("/etc/containerd/certs.d/docker.io/hosts.toml", "unreferenced",
                           'server = "https://registry-1.docker.io"\n[host."https://mirror"]\ncapabilities = ["pull"]\n',
                           loaded_doc)
        assert hosts["parsed"]["fragment"] is False
        gathered = {"loaded": loaded(), "imports": [], "files": [file_entry("/etc/containerd/config.toml", "main", ""), hosts]}
        assert run("orphan_dropin", ctx(gathered)) == []

    def test_orphan_when_config_has_no_imports(self):
        gathered = {"loaded": loaded(), "imports": [], "files": [
            file_entry("/etc/containerd/config.toml", "main", "version = 3\n"),
            file_entry("/etc/containerd/conf.d/a.toml", "unreferenced", "version = 3\n" + runtime_toml(V3, "gone"),
                       {"plugins": {}})]}
        out = run("orphan_dropin", ctx(gathered))
        assert ids(out) == [("orphan_dropin", "error", "/etc/containerd/conf.d/a.toml")]
        assert "the config has no imports" in out[0]["message"]
        assert out[0]["evidence"]["glob"] == "/etc/containerd/conf.d/*.toml"

    def test_dead_glob_in_an_empty_existing_dir_is_a_slot(self):
        gathered = gathered_imports()
        gathered["files"] = gathered["files"][:2]
        gathered["imports"][0].update(dir="/etc/containerd/conf.d", dir_exists=True)
        out = run("dead_imports_glob", ctx(gathered))
        assert ids(out) == [("dead_imports_glob", "info", "/etc/containerd/conf.d/*.toml")]
        assert "a slot waiting for a drop-in" in out[0]["message"]
        gathered["imports"][0]["dir_exists"] = False
        out = run("dead_imports_glob", ctx(gathered))
        assert ids(out) == [("dead_imports_glob", "warning", "/etc/containerd/conf.d/*.toml")]
        assert "/etc/containerd/conf.d does not exist" in out[0]["message"]

    def test_dead_glob_beside_a_fragment_stays_a_warning(self):
        gathered = gathered_imports()
        gathered["imports"][0].update(dir="/etc/containerd/conf.d", dir_exists=True)
        out = run("dead_imports_glob", ctx(gathered))
        assert ids(out) == [("dead_imports_glob", "warning", "/etc/containerd/conf.d/*.toml")]

    @pytest.mark.parametrize("name", ["99-nvidia.toml.12345.2025-01-01@10:00:00~", "99-nvidia.toml.bak",
                                      "config.toml.dpkg-old", "99-nvidia.toml.dpkg-dist", "x.toml~", "x.toml.rpmsave"])
    def test_backups_are_not_dropins(self, name):
        gathered = gathered_imports()
        backup = "/etc/containerd/conf.d/" + name
        gathered["files"].append(file_entry(backup, "unreferenced", "version = 3\n" + runtime_toml(V3, "gone")))
        assert backup not in [f["subject"] for f in run("orphan_dropin", ctx(gathered))]
        # and never the example a dead glob's fix is built from
        for item in run("dead_imports_glob", ctx(gathered)):
            assert backup not in item["evidence"]["files_in_dir"]
        assert checks.is_backup_name(backup) and not checks.is_backup_name("/etc/containerd/conf.d/99-nvidia.toml")

    def test_orphan_on_23_without_imports_explains_the_default_dump(self):
        gathered = {"loaded": loaded(), "imports": [], "version": "2.3.4", "version_major": 2, "version_minor": 3,
                    "files": [file_entry("/etc/containerd/config.toml", "main", "version = 4\n"),
                              file_entry("/etc/containerd/conf.d/99-nvidia.toml", "unreferenced",
                                         "version = 4\n" + runtime_toml(V3, "nvidia-x"))]}
        out = run("orphan_dropin", ctx(gathered))
        assert ids(out) == [("orphan_dropin", "error", "/etc/containerd/conf.d/99-nvidia.toml")]
        assert "containerd 2.3 dumps imports = ['/etc/containerd/conf.d/*.toml'] by default" in out[0]["message"]

    def test_nothing_to_report(self):
        gathered = gathered_imports()
        gathered["imports"] = gathered["imports"][1:]
        gathered["files"] = gathered["files"][:2]
        assert run("dead_imports_glob", ctx(gathered)) + run("orphan_dropin", ctx(gathered)) == []


# --- ignored plugin sections and drift ------------------------------------------------------

def runtime_toml(plugin, *names):
    return "".join('[plugins."%s".containerd.runtimes.%s]\nruntime_type = "io.containerd.runc.v2"\n' % (plugin, n)
                   for n in names)


def sections_gathered(major, files, loaded_names, version=None):
    version = version or ("2.1.9" if major == 2 else "1.7.24")
    return {"version_major": major, "version_minor": int(version.split(".")[1]), "version": version,
            "loaded": loaded(names=loaded_names),
            "dump_warnings": ['level=warning msg="Ignoring unknown key in TOML for plugin"'],
            "files": [file_entry(path, role, text) for path, role, text in files]}


def sections(gathered):
    """The findings of the checks that read each merged file's sections."""
    c = ctx(gathered)
    return run("ignored_plugin_section", c) + run("file_loaded_drift", c)


class TestFileSections(object):
    def test_v3_file_with_old_plugin_name_on_2x(self):
        g = sections_gathered(2, [("/c.toml", "main", "version = 3\n" + runtime_toml(V2, "nvidia"))], ("runc",))
        out = sections(g)
        assert ids(out) == [("ignored_plugin_section", "error", "/c.toml:%s" % V2)]
        assert out[0]["evidence"]["not_loaded"] == ["nvidia"]
        assert out[0]["evidence"]["file_version"] == 3
        assert out[0]["evidence"]["loader_warnings"] == g["dump_warnings"]
        assert 'plugins."%s"' % V3 in out[0]["fix"]

    def test_ignored_section_whose_runtime_loads_elsewhere_is_a_warning(self):
        g = sections_gathered(2, [("/c.toml", "main", "version = 3\n" + runtime_toml(V2, "nvidia"))], ("runc", "nvidia"))
        out = sections(g)
        assert ids(out) == [("ignored_plugin_section", "warning", "/c.toml:%s" % V2)]

    def test_v3_file_on_1x(self):
        g = sections_gathered(1, [("/c.toml", "main", "version = 3\n" + runtime_toml(V3, "nvidia"))], ("runc",),
                              version="1.6.20")
        out = sections(g)
        assert sorted(ids(out)) == [("ignored_plugin_section", "error", "/c.toml"),
                                    ("ignored_plugin_section", "error", "/c.toml:%s" % V3)]
        whole = [f for f in out if f["subject"] == "/c.toml"][0]
        assert whole["evidence"]["file_version"] == 3
        assert whole["evidence"]["containerd"] == "1.6.20"
        section = [f for f in out if f["subject"] != "/c.toml"][0]
        assert section["evidence"]["not_loaded"] == ["nvidia"]

    def test_v3_file_with_v2_plugin_name_on_16_is_reported_once(self):
        # measured: 1.6 reads io.containerd.grpc.v1.cri even from a version 3 file
        g = sections_gathered(1, [("/c.toml", "main", "version = 3\n" + runtime_toml(V2, "nvidia"))],
                              ("runc", "nvidia"), version="1.6.20")
        assert ids(sections(g)) == [("ignored_plugin_section", "error", "/c.toml")]

    def test_v1_file_on_2x(self):
        g = sections_gathered(2, [("/c.toml", "main", "version = 1\n" + runtime_toml(V1, "nvidia"))], ("runc",))
        out = sections(g)
        assert ids(out) == [("ignored_plugin_section", "error", "/c.toml:cri")]
        assert out[0]["evidence"]["file_version"] == 1
        assert out[0]["evidence"]["not_loaded"] == ["nvidia"]

    def test_v1_file_on_1x_is_fine(self):
        # measured: 1.6 and 1.7 read plugins.cri of a version 1 file
        g = sections_gathered(1, [("/c.toml", "main", "version = 1\n" + runtime_toml(V1, "nvidia"))], ("runc", "nvidia"))
        assert sections(g) == []

    def test_v2_file_on_2x_is_fine(self):
        g = sections_gathered(2, [("/c.toml", "main", "version = 2\n" + runtime_toml(V2, "nvidia"))], ("runc", "nvidia"))
        assert sections(g) == []

    def test_1x_dropins_replace_the_section(self):
        # measured on 1.7: two v2 drop-ins with one runtime each; only the last one's runtime is
        # loaded, and runc from the main file is lost too
        files = [
            ("/etc/containerd/config.toml", "main", "version = 2\n" + runtime_toml(V2, "runc")),
            ("/etc/containerd/conf.d/10-a.toml", "imported", "version = 2\n" + runtime_toml(V2, "nvidia-a")),
            ("/etc/containerd/conf.d/20-b.toml", "imported", "version = 2\n" + runtime_toml(V2, "nvidia")),
        ]
        out = sections(sections_gathered(1, files, ("nvidia",)))
        assert ids(out) == [
            ("file_loaded_drift", "error", "/etc/containerd/config.toml:runc"),
            ("file_loaded_drift", "error", "/etc/containerd/conf.d/10-a.toml:nvidia-a"),
        ]
        for item in out:
            assert "containerd#5837" in item["message"]
            assert item["evidence"]["merged_files"] == [f[0] for f in files]
        assert out[0]["evidence"]["not_loaded"] == ["runc"]
        assert out[1]["evidence"]["declared"] == ["nvidia-a"]

    def test_drift_on_2x_has_no_1x_explanation(self):
        files = [("/c.toml", "main", "version = 3\n" + runtime_toml(V3, "runc", "nvidia"))]
        out = sections(sections_gathered(2, files, ("runc",)))
        assert ids(out) == [("file_loaded_drift", "error", "/c.toml:nvidia")]
        assert "5837" not in out[0]["message"]

    def test_unreferenced_files_are_not_drift(self):
        files = [("/c.toml", "main", "version = 3\n"),
                 ("/conf.d/x.conf", "unreferenced", "version = 3\n" + runtime_toml(V3, "nvidia"))]
        assert sections(sections_gathered(2, files, ("runc",))) == []

    @pytest.mark.parametrize("major, main_version, plugin", [(1, 2, V2), (2, 2, V2), (2, 3, V3)])
    def test_versionless_dropin_takes_the_root_version(self, major, main_version, plugin):
        # measured on 1.7 and 2.1: a drop-in without a version line is read as the root file's
        files = [("/c.toml", "main", "version = %d\n" % main_version),
                 ("/conf.d/nvidia.toml", "imported", runtime_toml(plugin, "nvidia"))]
        assert sections(sections_gathered(major, files, ("runc", "nvidia"))) == []

    def test_versionless_main_file_is_version_1(self):
        files = [("/c.toml", "main", runtime_toml(V2, "nvidia"))]
        out = sections(sections_gathered(2, files, ("runc",)))
        assert ids(out) == [("ignored_plugin_section", "error", "/c.toml:%s" % V2)]
        assert out[0]["evidence"]["file_version"] == 1

    # Measured with the real 2.1.9 and 2.3.4 binaries (tests/integration/test_audit_checks.py repeats them).
    def test_mixed_plugin_names_in_a_v2_file_on_2x_is_an_ignored_section(self):
        text = "version = 2\n" + runtime_toml(V2, "kata") + runtime_toml(V3, "nvidia")
        for version in ("2.1.9", "2.3.4"):
            out = sections(sections_gathered(2, [("/c.toml", "main", text)], ("runc", "nvidia"), version=version))
            assert ids(out) == [("ignored_plugin_section", "error", "/c.toml:%s" % V2)], version
            assert "replaces the runtimes migrated from" in out[0]["message"]
            assert out[0]["evidence"]["not_loaded"] == ["kata"]
            assert 'plugins."%s"' % V3 in out[0]["fix"]

    @pytest.mark.parametrize("other", [
        '[plugins."%s"]\nenable_cdi = true\n' % V3,
        '[plugins."io.containerd.cri.v1.images"]\nsnapshotter = "overlayfs"\n',
        '[plugins."%s".containerd]\ndefault_runtime_name = "runc"\n' % V3,
    ])
    def test_old_name_runtimes_survive_without_a_new_name_runtimes_table(self, other):
        text = "version = 2\n" + runtime_toml(V2, "kata") + other
        assert sections(sections_gathered(2, [("/c.toml", "main", text)], ("runc", "kata"))) == []

    def test_an_empty_new_name_runtimes_table_drops_them_too(self):
        text = "version = 2\n" + runtime_toml(V2, "kata") + '[plugins."%s".containerd.runtimes]\n' % V3
        out = sections(sections_gathered(2, [("/c.toml", "main", text)], ("runc",)))
        assert ids(out) == [("ignored_plugin_section", "error", "/c.toml:%s" % V2)]

    def test_21_migrates_the_merged_files_23_each_file(self):
        files = [("/c.toml", "main", "version = 2\n" + runtime_toml(V2, "kata")),
                 ("/d/n.toml", "imported", "version = 2\n" + runtime_toml(V3, "nvidia"))]
        out = sections(sections_gathered(2, files, ("runc", "nvidia"), version="2.1.9"))
        assert ids(out) == [("ignored_plugin_section", "error", "/c.toml:%s" % V2)]
        assert "/d/n.toml" in out[0]["message"]
        assert sections(sections_gathered(2, files, ("runc", "nvidia", "kata"), version="2.3.4")) == []

    def test_21_reads_a_v2_dropin_by_the_v3_root(self):
        files = [("/c.toml", "main", "version = 3\n" + runtime_toml(V3, "nvidia")),
                 ("/d/k.toml", "imported", "version = 2\n" + runtime_toml(V2, "kata"))]
        out = sections(sections_gathered(2, files, ("runc", "nvidia"), version="2.1.9"))
        assert ids(out) == [("ignored_plugin_section", "error", "/d/k.toml:%s" % V2)]
        assert out[0]["evidence"]["file_version"] == 3
        assert sections(sections_gathered(2, files, ("runc", "nvidia", "kata"), version="2.3.4")) == []

    def test_23_reads_a_v3_file_with_the_old_name_but_not_a_v4_one(self):
        v3 = [("/c.toml", "main", "version = 3\n" + runtime_toml(V2, "nvidia"))]
        assert sections(sections_gathered(2, v3, ("runc", "nvidia"), version="2.3.4")) == []
        assert ids(sections(sections_gathered(2, v3, ("runc",), version="2.1.9"))) == [
            ("ignored_plugin_section", "error", "/c.toml:%s" % V2)]
        v4 = [("/c.toml", "main", "version = 4\n" + runtime_toml(V2, "nvidia"))]
        out = sections(sections_gathered(2, v4, ("runc",), version="2.3.4"))
        assert ids(out) == [("ignored_plugin_section", "error", "/c.toml:%s" % V2)]
        assert "containerd 2.3+ reads the runtimes of a version 4 file" in out[0]["message"]

    def test_23_migrates_a_v1_file(self):
        v1 = [("/c.toml", "main", runtime_toml(V1, "kata"))]
        assert sections(sections_gathered(2, v1, ("runc", "kata"), version="2.3.4")) == []
        assert ids(sections(sections_gathered(2, v1, ("runc",), version="2.1.9"))) == [
            ("ignored_plugin_section", "error", "/c.toml:cri")]

    def test_23_v1_file_drops_cri_runtimes_next_to_newer_tables(self):
        v1 = [("/c.toml", "main", "version = 1\n" + runtime_toml(V1, "k1") + runtime_toml(V3, "k3"))]
        out = sections(sections_gathered(2, v1, ("runc", "k3"), version="2.3.4"))
        assert ids(out) == [("ignored_plugin_section", "error", "/c.toml:cri")]

    def test_dropin_version_above_root_is_a_warning_before_23(self):
        files = [("/c.toml", "main", "version = 2\n"), ("/d/n.toml", "imported", "version = 3\n"),
                 ("/d/same.toml", "imported", "version = 2\n"), ("/d/none.toml", "imported", "")]
        out = run("dropin_version_above_root", ctx(sections_gathered(2, files, ("runc",), version="2.1.9")))
        assert ids(out) == [("dropin_version_above_root", "warning", "/d/n.toml")]
        assert "2.3+ refuses to start with it" in out[0]["message"]
        assert "drop-in config version 3 higher than root config version 2" in out[0]["message"]
        # on 2.3+ containerd refuses the config itself: config_refused says so
        assert run("dropin_version_above_root", ctx(sections_gathered(2, files, ("runc",), version="2.3.4"))) == []

    def test_unparsable_file_is_config_unreadable(self):
        g = sections_gathered(2, [("/c.toml", "main", "version = 3\n"), ("/d.toml", "imported", "[broken\n")], ("runc",))
        out = run("config_unreadable", ctx(g))
        assert ids(out) == [("config_unreadable", "error", "/d.toml")]
        assert "/d.toml" in out[0]["evidence"]["error"]

    def test_unread_file_is_config_unreadable(self):
        g = sections_gathered(2, [("/c.toml", "main", "version = 3\n")], ("runc",))
        g["files"].append({"path": "/big.toml", "role": "imported", "content": None, "error": "file is 2 bytes",
                           "parsed": parse_gathered.summarize_file(
                               {"path": "/big.toml", "role": "imported", "content": None, "error": "file is 2 bytes"})})
        assert ids(run("config_unreadable", ctx(g))) == [("config_unreadable", "error", "/big.toml")]


class TestMainConfig(object):
    def test_missing_config_is_info_not_unreadable(self):
        g = {"loaded": loaded(), "config_exists": False, "config_path": "/etc/containerd/config.toml",
             "version": "2.1.9", "version_major": 2, "version_minor": 1,
             "files": [{"path": "/etc/containerd/config.toml", "role": "main", "content": None,
                        "error": "file does not exist",
                        "parsed": {"path": "/etc/containerd/config.toml", "role": "main", "error": "file does not exist"}}]}
        found, _ran, _skipped = checks.run_checks(ctx(g))
        assert ids(found) == [("config_defaults", "info", "/etc/containerd/config.toml")]
        assert "runs on its built-in defaults" in found[0]["message"]
        g.update(version="2.3.4", version_minor=3)
        assert "without a config file no drop-in is loaded" in run("config_defaults", ctx(g))[0]["message"]

    def test_an_existing_config_is_quiet(self):
        g = sections_gathered(2, [("/c.toml", "main", "version = 3\n")], ("runc",))
        assert run("config_defaults", ctx(g)) == []


# --- runtime binary -------------------------------------------------------------------------

def facts(path, exists=True, is_file=True, executable=True):
    return {"path": path, "resolved": path, "exists": exists, "is_file": is_file, "executable": executable}


def ctx_kata(gathered):
    return ctx(gathered, [rc("kata")])


class TestRuntimeBinary(object):
    def gathered(self, nvidia_facts):
        runtimes = {"runc": runc_like("runc"), "nvidia": runc_like("nvidia", binary="/usr/bin/nvidia-container-runtime")}
        return {"loaded": loaded(runtimes=runtimes), "paths": {"/usr/bin/nvidia-container-runtime": nvidia_facts}}

    def test_missing_binary(self):
        out = run("runtime_binary", ctx(self.gathered(facts("/usr/bin/nvidia-container-runtime", False, False, False)), [rc("nvidia")]))
        assert ids(out) == [("runtime_binary", "error", "nvidia")]
        assert out[0]["evidence"]["binary_name"] == "/usr/bin/nvidia-container-runtime"
        assert "does not exist" in out[0]["message"]

    def test_not_executable(self):
        out = run("runtime_binary", ctx(self.gathered(facts("/usr/bin/nvidia-container-runtime", executable=False)), [rc("nvidia")]))
        assert ids(out) == [("runtime_binary", "error", "nvidia")]
        assert "is not executable" in out[0]["message"]

    def test_executable_is_fine(self):
        assert run("runtime_binary", ctx(self.gathered(facts("/usr/bin/nvidia-container-runtime")), [rc("nvidia")])) == []

    def test_unreported_path_is_not_judged(self):
        gathered = self.gathered({})
        gathered["paths"] = {}
        assert run("runtime_binary", ctx(gathered, [rc("nvidia")])) == []

    def kata(self, shim, runtime_path=""):
        kata = dict(runc_like("kata"), runtime_type="io.containerd.kata.v2", runtime_path=runtime_path,
                    config_path="/opt/kata/configuration.toml", base_runtime_spec="")
        paths = {"/opt/kata/configuration.toml": facts("/opt/kata/configuration.toml")}
        if runtime_path:
            paths[runtime_path] = shim
        return {"loaded": loaded(runtimes={"runc": runc_like("runc"), "kata": kata}), "paths": paths,
                "shims": {"io.containerd.kata.v2": shim}}

    def test_kata_shim_missing(self):
        shim = dict(facts("containerd-shim-kata-v2", False, False, False), searched=["/usr/bin", "/opt/containerd"])
        out = run("runtime_binary", ctx_kata(self.kata(shim)))
        assert ids(out) == [("runtime_binary", "error", "kata")]
        assert "shim of runtime_type io.containerd.kata.v2 containerd-shim-kata-v2, which does not exist" in out[0]["message"]
        assert "searched PATH, shim_dirs and the containerd binary's dir" in out[0]["message"]

    def test_kata_shim_present(self):
        assert run("runtime_binary", ctx_kata(self.kata(facts("/usr/bin/containerd-shim-kata-v2")))) == []

    def test_runtime_path_wins_over_the_shim_name(self):
        out = run("runtime_binary", ctx_kata(self.kata(facts("/opt/kata/bin/shim", exists=False), "/opt/kata/bin/shim")))
        assert ids(out) == [("runtime_binary", "error", "kata")]
        assert "runtime_path /opt/kata/bin/shim" in out[0]["message"]

    def test_a_runtime_no_pod_can_reach_is_info(self):
        # k3s's template declares runhcs-wcow-process (Windows) on every node: no shim on Linux
        shim = facts("containerd-shim-runhcs-v1", False, False, False)
        runhcs = dict(runc_like("runhcs-wcow-process"), runtime_type="io.containerd.runhcs.v1")
        g = {"loaded": loaded(runtimes={"runc": runc_like("runc"), "runhcs-wcow-process": runhcs}), "paths": {},
             "shims": {"io.containerd.runhcs.v1": shim}}
        out = run("runtime_binary", ctx(g, [rc("nvidia")]))
        assert ids(out) == [("runtime_binary", "info", "runhcs-wcow-process")]
        assert "no pod can reach it here" in out[0]["message"]

    def test_runc_types_need_no_shim_fact(self):
        # containerd ships containerd-shim-runc-v2 itself; a gather reports no shim for it
        g = self.gathered(facts("/usr/bin/nvidia-container-runtime"))
        g["shims"] = {}
        assert run("runtime_binary", ctx(g, [rc("nvidia")])) == []


class TestRuntimeFiles(object):
    def test_config_path_and_base_runtime_spec(self):
        kata = dict(runc_like("kata"), runtime_type="io.containerd.kata.v2", config_path="/opt/kata/c.toml",
                    base_runtime_spec="")
        nvidia = dict(runc_like("nvidia"), config_path="", base_runtime_spec="/etc/containerd/base-runtime-spec.json")
        g = {"loaded": loaded(runtimes={"kata": kata, "nvidia": nvidia}),
             "paths": {"/opt/kata/c.toml": facts("/opt/kata/c.toml", False, False, False),
                       "/etc/containerd/base-runtime-spec.json": facts("/etc/containerd/base-runtime-spec.json",
                                                                       executable=False)}}
        out = run("runtime_file", ctx(g, [rc("kata")]))
        assert ids(out) == [("runtime_file", "error", "kata:options.ConfigPath")]
        assert "does not exist" in out[0]["message"]


# --- cgroup driver --------------------------------------------------------------------------

class TestCgroupDriver(object):
    def gathered(self, kubelet_text, nvidia_systemd, runc_systemd=True, error=None):
        runtimes = {"runc": runc_like("runc", systemd=runc_systemd), "nvidia": runc_like("nvidia", systemd=nvidia_systemd)}
        runtimes["kata"] = dict(runc_like("kata"), runtime_type="io.containerd.kata.v2")
        kubelet = {"path": "/var/lib/kubelet/config.yaml", "exists": kubelet_text is not None or error is not None,
                   "content": kubelet_text, "error": error}
        return {"loaded": loaded(runtimes=runtimes), "kubelet_config": kubelet}

    def cgroup(self, gathered, rcs=(rc("nvidia"),), **options):
        found, _ran, skipped = checks.run_checks(ctx(gathered, list(rcs), **options))
        return [f for f in found if f["check"] == "cgroup_driver"], skipped.get("cgroup_driver")

    def test_systemd_kubelet_vs_systemd_false(self):
        out, _skipped = self.cgroup(self.gathered("kind: KubeletConfiguration\ncgroupDriver: systemd\n", False))
        assert ids(out) == [("cgroup_driver", "error", "nvidia")]
        assert out[0]["evidence"] == {"runtime": "nvidia", "systemd_cgroup": False, "kubelet_cgroup_driver": "systemd",
                                      "kubelet_config": "/var/lib/kubelet/config.yaml", "reachable": True}
        assert out[0]["fix"] == "set SystemdCgroup = true for 'nvidia'"

    def test_unset_systemd_cgroup_counts_as_false(self):
        out, _skipped = self.cgroup(self.gathered("cgroupDriver: systemd\n", None))
        assert ids(out) == [("cgroup_driver", "error", "nvidia")]

    def test_absent_cgroup_driver_is_kubelet_default_cgroupfs(self):
        out, _skipped = self.cgroup(self.gathered("kind: KubeletConfiguration\n", False, runc_systemd=True))
        assert ids(out) == [("cgroup_driver", "error", "runc")]
        assert out[0]["evidence"]["kubelet_cgroup_driver"] == "cgroupfs"

    def test_override_variable_wins(self):
        g = self.gathered("cgroupDriver: systemd\n", True, runc_systemd=True)
        assert self.cgroup(g) == ([], None)
        out, _skipped = self.cgroup(g, kubelet_cgroup_driver="cgroupfs")
        assert sorted(ids(out)) == [("cgroup_driver", "error", "nvidia"), ("cgroup_driver", "error", "runc")]
        assert out[0]["evidence"]["kubelet_config"] == "variable"

    def test_override_without_kubelet_file(self):
        g = self.gathered(None, False, runc_systemd=False)
        out, skipped = self.cgroup(g)
        assert out == [] and skipped.startswith("no kubelet config at /var/lib/kubelet/config.yaml")
        assert len(self.cgroup(g, kubelet_cgroup_driver="systemd")[0]) == 2

    @pytest.mark.parametrize("text, why", [
        ("[not: yaml", "kubelet config /var/lib/kubelet/config.yaml is not YAML: "),
        ("- a list\n", "is not a mapping but list"),
        ("cgroupDriver: [systemd]\n", "has cgroupDriver ['systemd'], neither systemd nor cgroupfs"),
        ("\x1b[31m: x: y:\n", "is not YAML"),
    ])
    def test_garbage_kubelet_config_skips_the_check_never_passes_it(self, text, why):
        out, skipped = self.cgroup(self.gathered(text, False))
        assert out == [] and why in skipped

    def test_kubelet_config_text_of_a_str_subclass(self):
        class UnsafeText(str):  # as ansible-core 2.16 hands a registered result's strings over
            pass
        out, skipped = self.cgroup(self.gathered(UnsafeText("cgroupDriver: systemd\n"), False))
        assert skipped is None and ids(out) == [("cgroup_driver", "error", "nvidia")]

    def test_kubelet_config_parsed_once_for_the_need_and_the_check(self, monkeypatch):
        import yaml
        calls = []
        real_load = yaml.load
        monkeypatch.setattr(yaml, "load", lambda *a, **kw: calls.append(a) or real_load(*a, **kw))
        out, skipped = self.cgroup(self.gathered("cgroupDriver: systemd\n", False))
        assert len(calls) == 1 and skipped is None
        assert ids(out) == [("cgroup_driver", "error", "nvidia")]

    def test_unread_kubelet_config_skips_the_check(self):
        g = self.gathered(None, False, error="/var/lib/kubelet/config.yaml is a FIFO, not a regular file")
        out, skipped = self.cgroup(g)
        # the cause is said once, its path once (it read "was not read: not read: ..." before)
        assert out == [] and skipped == "kubelet config not read: /var/lib/kubelet/config.yaml is a FIFO, not a regular file"
        g = self.gathered(None, False, error="cannot read: Permission denied")
        assert self.cgroup(g)[1] == "kubelet config not read: /var/lib/kubelet/config.yaml: cannot read: Permission denied"

    def test_empty_kubelet_config_is_the_kubelet_default(self):
        out, _skipped = self.cgroup(self.gathered("", False, runc_systemd=True))
        assert ids(out) == [("cgroup_driver", "error", "runc")]

    def test_non_runc_runtimes_are_not_judged(self):
        assert self.cgroup(self.gathered("cgroupDriver: systemd\n", True))[0] == []

    def test_a_runtime_no_pod_can_reach_is_info(self):
        # neither the default (runc) nor named by a RuntimeClass that can land here
        g = self.gathered("cgroupDriver: systemd\n", False)
        out, _skipped = self.cgroup(g, rcs=[rc("nvidia", selector={"pool": "gpu"})])
        assert ids(out) == [("cgroup_driver", "info", "nvidia")]
        assert "no pod can reach it here" in out[0]["message"]
        # unknown labels: the RuntimeClass may land here, so it is reachable
        found, _ran, _skipped = checks.run_checks(ctx(g, [rc("nvidia", selector={"pool": "gpu"})], labels=None))
        assert ids([f for f in found if f["check"] == "cgroup_driver"]) == [("cgroup_driver", "error", "nvidia")]

    def test_the_default_runtime_is_reachable(self):
        runtimes = {"runc": runc_like("runc", systemd=True), "nvidia": runc_like("nvidia", systemd=False)}
        g = {"loaded": loaded(runtimes=runtimes, default="nvidia"),
             "kubelet_config": {"path": "/k", "content": "cgroupDriver: systemd\n"}}
        assert ids(self.cgroup(g, rcs=[])[0]) == [("cgroup_driver", "error", "nvidia")]


# --- CDI ------------------------------------------------------------------------------------

class TestCdi(object):
    def cdi(self, runtimes, enable_cdi=False, rcs=(), version=None):
        g = {"loaded": loaded(runtimes=runtimes, enable_cdi=enable_cdi)}
        if version:
            g.update(version=version, version_major=int(version[0]), version_minor=int(version.split(".")[1]))
        return run("cdi_disabled", ctx(g, list(rcs)))

    def test_cdi_handler_without_cdi(self):
        out = self.cdi({"runc": runc_like("runc"), "nvidia-cdi": runc_like("nvidia-cdi", binary="/usr/bin/nvidia-ctr")},
                       rcs=[rc("nvidia-cdi")])
        assert ids(out) == [("cdi_disabled", "error", "nvidia-cdi")]
        assert out[0]["evidence"]["enable_cdi"] is False
        assert "set enable_cdi = true" in out[0]["fix"]

    def test_nvidias_cdi_runtime_injects_itself(self):
        # NVIDIA's own configs register nvidia-cdi with nvidia-container-runtime.cdi and set no enable_cdi
        runtimes = {"runc": runc_like("runc"),
                    "nvidia-cdi": runc_like("nvidia-cdi", binary="/usr/bin/nvidia-container-runtime.cdi")}
        assert self.cdi(runtimes, rcs=[rc("nvidia-cdi")]) == []

    def test_on_16_the_fix_is_not_enable_cdi(self):
        out = self.cdi({"nvidia-cdi": runc_like("nvidia-cdi", binary="/usr/bin/nvidia-container-runtime")},
                       rcs=[rc("nvidia-cdi")], version="1.6.20")
        assert "containerd 1.6.20 has no enable_cdi" in out[0]["fix"]
        assert "nvidia-container-runtime.cdi" in out[0]["fix"]

    def test_a_handler_not_loaded_is_missing_handler_only(self):
        assert self.cdi({"runc": runc_like("runc")}, rcs=[rc("gpu", handler="nvidia-cdi")]) == []

    def test_unreachable_cdi_runtime_is_info(self):
        out = self.cdi({"runc": runc_like("runc"), "nvidia-cdi": runc_like("nvidia-cdi")},
                       rcs=[rc("nvidia-cdi", selector={"cdi": "yes"})])
        assert ids(out) == [("cdi_disabled", "info", "nvidia-cdi")]

    def test_cdi_enabled_is_fine(self):
        assert self.cdi({"nvidia-cdi": runc_like("nvidia-cdi")}, enable_cdi=True, rcs=[rc("nvidia-cdi")]) == []

    def test_non_cdi_names(self):
        runtimes = dict((n, runc_like(n)) for n in ("runc", "nvidia", "cdi-less", "nvidiacdi"))
        # "cdi-less" has a "cdi" segment, "nvidiacdi" ends with cdi; "nvidia" has neither
        assert [f["subject"] for f in self.cdi(runtimes, rcs=[rc("cdi-less"), rc("nvidiacdi")])] == ["cdi-less", "nvidiacdi"]

    def test_stale_spec(self):
        g = {"loaded": loaded(), "cdi_specs": [
            {"path": "/etc/cdi/nvidia.yaml", "error": None, "host_paths": [
                {"path": "/dev/nvidia0", "exists": True},
                {"path": "/usr/lib/libcuda.so.535.104.05", "exists": False},
                {"path": "/usr/lib/libnvidia-ml.so.535.104.05", "exists": False}]},
            {"path": "/etc/cdi/fresh.yaml", "error": None, "host_paths": [{"path": "/dev/nvidia0", "exists": True}]},
        ]}
        out = run("cdi_stale_spec", ctx(g))
        assert ids(out) == [("cdi_stale_spec", "error", "/etc/cdi/nvidia.yaml")]
        assert out[0]["evidence"]["missing_host_paths"] == ["/usr/lib/libcuda.so.535.104.05",
                                                            "/usr/lib/libnvidia-ml.so.535.104.05"]
        assert out[0]["evidence"]["missing_count"] == 2
        assert "--output=/etc/cdi/nvidia.yaml" in out[0]["fix"]

    def test_unreadable_spec_is_a_warning(self):
        g = {"loaded": loaded(), "cdi_specs": [{"path": "/etc/cdi/x.json", "error": "not valid JSON: x", "host_paths": []}]}
        assert ids(run("cdi_stale_spec", ctx(g))) == [("cdi_stale_spec", "warning", "/etc/cdi/x.json")]


# --- overhead -------------------------------------------------------------------------------

def overhead(rcs, labels, allocatable, requests=None):
    found, _ran, skipped = checks.run_checks(ctx({"loaded": loaded()}, rcs, labels, allocatable, pod_requests=requests))
    if "overhead_unschedulable" in skipped:
        return []
    return [f for f in found if f["check"] == "overhead_unschedulable"]


class TestOverhead(object):
    def test_cpu_overhead_does_not_fit(self):
        rcs = [rc("nvidia-overhead", handler="nvidia", overhead={"cpu": "250m"})]
        out = overhead(rcs, {}, {"cpu": "1"}, {"cpu": "900m"})
        assert ids(out) == [("overhead_unschedulable", "error", "nvidia-overhead:cpu")]
        assert out[0]["evidence"]["arithmetic"] == "900m + 250m > 1000m"
        assert "900m + 250m > 1000m" in out[0]["message"]
        assert out[0]["evidence"]["pod_request"] == "900m"
        assert out[0]["evidence"]["overhead"] == "250m"
        assert out[0]["evidence"]["allocatable"] == "1"

    def test_memory_with_binary_suffixes(self):
        rcs = [rc("kata", overhead={"memory": "512Mi"})]
        out = overhead(rcs, {}, {"memory": "1Gi"}, {"memory": "768Mi"})
        assert ids(out) == [("overhead_unschedulable", "error", "kata:memory")]
        assert out[0]["evidence"]["arithmetic"] == "%d + %d > %d" % (768 * 2 ** 20, 512 * 2 ** 20, 2 ** 30)

    def test_fits(self):
        rcs = [rc("kata", overhead={"cpu": "100m", "memory": "256Mi"})]
        assert overhead(rcs, {}, {"cpu": "1", "memory": "1Gi"}, {"cpu": "900m", "memory": "768Mi"}) == []

    def test_exactly_full_fits(self):
        rcs = [rc("kata", overhead={"cpu": "100m"})]
        assert overhead(rcs, {}, {"cpu": "1"}, {"cpu": "900m"}) == []

    def test_no_pod_request_means_zero(self):
        rcs = [rc("kata", overhead={"cpu": "2"})]
        out = overhead(rcs, {}, {"cpu": "1500m"})
        assert out[0]["evidence"]["arithmetic"] == "0m + 2000m > 1500m"

    def test_bad_quantity_is_a_warning(self):
        rcs = [rc("kata", overhead={"cpu": "lots"})]
        out = overhead(rcs, {}, {"cpu": "1"}, {"cpu": "900m"})
        assert ids(out) == [("overhead_unschedulable", "warning", "kata:cpu")]
        assert "lots" in out[0]["message"]

    def test_bad_allocatable_is_a_warning(self):
        rcs = [rc("kata", overhead={"cpu": "250m"})]
        out = overhead(rcs, {}, {"cpu": "one"}, {})
        assert ids(out) == [("overhead_unschedulable", "warning", "kata:cpu")]

    def test_infinite_allocatable_is_a_warning_not_an_exception(self):
        rcs = [rc("kata", overhead={"cpu": "250m"})]
        out = overhead(rcs, {}, {"cpu": float("inf")}, {"cpu": "900m"})
        assert ids(out) == [("overhead_unschedulable", "warning", "kata:cpu")]

    def test_huge_quantity_is_reported_not_raised(self):
        rcs = [rc("kata", overhead={"memory": "1e5000"})]
        out = overhead(rcs, {}, {"memory": "1Gi"}, {})
        assert [f["check"] for f in out] == ["overhead_unschedulable"]

    def test_without_allocatable_nothing_is_judged(self):
        rcs = [rc("kata", overhead={"cpu": "250m"})]
        _found, _ran, skipped = checks.run_checks(ctx({"loaded": loaded()}, rcs))
        assert skipped["overhead_unschedulable"].startswith("node allocatable unknown")
        assert overhead(rcs, {}, None, {"cpu": "900m"}) == []
        assert overhead(rcs, {}, {"memory": "1Gi"}, {"cpu": "900m"}) == []

    def test_selector_keeps_it_off_the_node(self):
        rcs = [rc("kata", overhead={"cpu": "250m"}, selector={"kata": "yes"})]
        assert overhead(rcs, {"kata": "no"}, {"cpu": "1"}, {"cpu": "900m"}) == []


# --- node drift -----------------------------------------------------------------------------

class TestDrift(object):
    def test_the_node_lacking_a_runtime_is_flagged(self):
        out = checks.check_drift({"gpu": ["a", "b", "c"]},
                                 {"a": ["runc", "nvidia"], "b": ["runc"], "c": ["runc"]})
        assert ids(out) == [("node_drift", "warning", "gpu"), ("node_drift", "warning", "gpu")]
        assert sorted(f["node"] for f in out) == ["b", "c"]
        # union, not majority: the minority node that has nvidia is the right one
        assert out[0]["evidence"]["lacks"] == ["nvidia"]
        assert out[0]["evidence"]["loaded_by"] == {"nvidia": ["a"]}

    def test_each_node_lacking_something_is_flagged(self):
        out = checks.check_drift({"g": ["a", "b"]}, {"a": ["runc", "x"], "b": ["runc", "y"]})
        assert dict((f["node"], f["evidence"]["lacks"]) for f in out) == {"a": ["y"], "b": ["x"]}

    def test_equal_sets_and_single_members(self):
        assert checks.check_drift({"g": ["a", "b"]}, {"a": ["runc", "nvidia"], "b": ["nvidia", "runc"]}) == []
        assert checks.check_drift({"g": ["a", "b"]}, {"a": ["runc", "nvidia"]}) == []  # b not checked

    def test_a_typo_is_reported_on_the_node_that_loads_it_not_spread_to_the_others(self):
        out = checks.check_drift({"gpu": ["a", "b", "c"]},
                                 {"a": ["runc", "nvida"], "b": ["runc", "nvidia"], "c": ["runc", "nvidia"]})
        assert [f["node"] for f in out] == ["a"], out
        assert out[0]["evidence"]["likely_typos"] == {"nvida": "nvidia"}
        assert out[0]["evidence"]["lacks"] == ["nvidia"]
        assert "likely a typo of nvidia (loaded by b, c)" in out[0]["message"]
        assert "rename 'nvida' to 'nvidia'" in out[0]["fix"]

    def test_the_typo_is_the_non_runtime_name_even_in_the_majority(self):
        out = checks.check_drift({"g": ["a", "b", "c"]}, {"a": ["nvidia"], "b": ["nvida"], "c": ["nvida"]})
        assert sorted(f["node"] for f in out) == ["b", "c"]
        assert all(f["evidence"]["likely_typos"] == {"nvida": "nvidia"} for f in out)

    def test_two_real_runtimes_are_never_a_typo(self):
        out = checks.check_drift({"g": ["a", "b"]}, {"a": ["nvidia", "nvidia-cdi"], "b": ["nvidia"]})
        assert [(f["node"], f["evidence"]["lacks"], f["evidence"]["likely_typos"]) for f in out] == [
            ("b", ["nvidia-cdi"], {})]

    def test_groups_are_judged_separately(self):
        out = checks.check_drift({"g1": ["a"], "g2": ["b", "c"]}, {"a": ["nvidia"], "b": ["runc"], "c": ["runc"]})
        assert out == []


def test_missing_handler_lists_the_loaded_runtimes_and_a_typo_in_either_direction():
    # the class misspells: the loaded name is suggested
    out = missing(["runc", "nvidia"], [rc("gpu", "nvida")])
    assert "did you mean 'nvidia'?" in out[0]["message"] and "loaded runtimes: nvidia, runc" in out[0]["message"]
    # the node misspells: the class asks for the real name, the node loads a close name that is no runtime's
    out = missing(["runc", "nvida"], [rc("gpu", "nvidia")])
    assert "loaded runtimes: nvida, runc" in out[0]["message"]
    assert "the node loads 'nvida', likely a misspelt 'nvidia'" in out[0]["message"]
    assert out[0]["fix"].startswith("rename runtime 'nvida' to 'nvidia'")
    assert out[0]["evidence"]["misspelt_runtime"] == "nvida"
    # two real runtimes: no hint either way
    out = missing(["runc", "nvidia"], [rc("cdi", "nvidia-cdi")])
    assert "likely" not in out[0]["message"] and "did you mean" not in out[0]["message"]


# --- cluster-only mode ----------------------------------------------------------------------

class TestReportedNode(object):
    def test_handlers_not_reported(self):
        checked, out, ran, skipped = checks.check_reported_node({"name": "n1", "runtime_handlers": None}, [rc("nvidia")])
        assert checked is False
        assert ids(out) == [("handlers_not_reported", "warning", "n1")]
        assert skipped["missing_handler"] == "the Node reports no status.runtimeHandlers"
        assert ran == ["handlers_not_reported"]

    def test_handlers_not_reported_can_be_skipped(self):
        checked, out, _ran, skipped = checks.check_reported_node({"name": "n1", "runtime_handlers": None},
                                                                 [rc("nvidia")], skip=["handlers_not_reported"])
        assert (checked, out, skipped["handlers_not_reported"]) == (False, [], "skip_checks")

    def test_missing_reported_handler(self):
        node = {"name": "n1", "runtime_handlers": ["", "runc", "nvidia"], "labels": {}}
        checked, out, _ran, _skipped = checks.check_reported_node(node, [rc("nvidia"), rc("nvidia-cdi")])
        assert checked is True
        assert ids(out) == [("missing_handler", "error", "nvidia-cdi")]
        assert "status.runtimeHandlers" in out[0]["message"]
        # nvidia-cdi is NVIDIA's handler, and nvidia a RuntimeClass's own: no "did you mean"
        assert out[0]["evidence"]["suggestion"] is None

    def test_empty_default_entry_is_ignored(self):
        node = {"name": "n1", "runtime_handlers": ["", "runc"], "labels": {}}
        out = checks.check_reported_node(node, [rc("x", handler="q")])[1]
        assert out[0]["evidence"]["suggestion"] is None
        assert checks.check_reported_node(node, [rc("runc")])[:2] == (True, [])

    def test_selector_against_node_labels(self):
        node = {"name": "n1", "runtime_handlers": ["runc"], "labels": {"gpu": "false"}}
        assert checks.check_reported_node(node, [rc("nvidia", selector={"gpu": "true"})])[:2] == (True, [])

    def test_overhead_from_node_allocatable(self):
        node = {"name": "n1", "runtime_handlers": ["runc", "nvidia"], "labels": {}, "allocatable": {"cpu": "1"}}
        out = checks.check_reported_node(node, [rc("nvidia", overhead={"cpu": "250m"})], {"cpu": "900m"})[1]
        assert ids(out) == [("overhead_unschedulable", "error", "nvidia:cpu")]


# --- check_node, skip, order ----------------------------------------------------------------

def full_gathered():
    g = gathered_imports()
    g["version_major"] = 2
    g["loaded"] = loaded(runtimes={"runc": runc_like("runc", systemd=True),
                                   "nvidia": runc_like("nvidia", systemd=False, binary="/usr/bin/nvidia")},
                         default="nvidia")
    g["paths"] = {"/usr/bin/nvidia": {"exists": False, "executable": False}}
    g["kubelet_config"] = {"path": "/k.yaml", "content": "cgroupDriver: systemd\n"}
    g["cdi_specs"] = []
    return g


class TestCheckNode(object):
    def test_all_checks_together_sorted(self):
        # nvidia is the default, so its cgroup mismatch is reachable
        out, ran, skipped = checks.check_node("n1", full_gathered(), [rc("nvidia-typo")], {})
        assert [f["check"] for f in out] == [
            "cgroup_driver", "missing_handler", "orphan_dropin", "orphan_dropin", "runtime_binary",
            "dead_imports_glob", "default_runtime_blast_radius"]
        assert [f["severity"] for f in out] == ["error"] * 5 + ["warning"] * 2
        # what could not run says why; nothing is both run and skipped
        assert skipped == {
            "restart_pending": "the running view was not gathered (a bare dump, or gather_running=false)",
            "overhead_unschedulable": "node allocatable unknown (no Node object, no gpurt_node_allocatable)"}
        assert not set(ran) & set(skipped)
        assert sorted(ran + list(skipped)) == sorted(checks.check_ids("hosts"))

    def test_skip_checks_drop_findings(self):
        everything = checks.check_node("n1", full_gathered(), [rc("nvidia-typo")], {})[0]
        skip = ["orphan_dropin", "runtime_binary"]
        out, ran, skipped = checks.check_node("n1", full_gathered(), [rc("nvidia-typo")], {}, options={"skip_checks": skip})
        assert out == [f for f in everything if f["check"] not in skip]
        assert len(out) == len(everything) - 3
        assert skipped["orphan_dropin"] == skipped["runtime_binary"] == "skip_checks"
        assert not set(skip) & set(ran)

    def test_a_bare_dump_skips_what_it_cannot_show(self):
        _out, ran, skipped = checks.check_node("n1", {"loaded": loaded()}, [rc("nvidia")], {})
        assert sorted(ran) == ["cdi_disabled", "config_refused", "cri_plugin_disabled",
                               "default_runtime_blast_radius", "missing_handler"]
        assert skipped["orphan_dropin"] == "the node reported no files (a bare dump has no files)"
        assert skipped["cgroup_driver"] == "the node reported no kubelet config"

    def test_no_runtimeclass_skips_missing_handler(self):
        _out, ran, skipped = checks.check_node("n1", {"loaded": loaded()}, [], {})
        assert "missing_handler" not in ran
        assert skipped["missing_handler"] == "no RuntimeClass was read: nothing to cross-check"

    def test_a_check_that_breaks_its_declaration_is_a_defect(self, monkeypatch):
        bad = checks.Check("x_check", ("warning",), "warning", "c", (), lambda ctx: [
            checks.finding("n1", "x_check", "error", "s", "m", "f")])
        monkeypatch.setattr(checks.registry, "REGISTRY", (bad,))
        with pytest.raises(AssertionError, match="x_check produced a error finding"):
            checks.run_checks(ctx())

    def test_unknown_skip_id_raises(self):
        with pytest.raises(ValueError, match="unknown check id.*no_such"):
            checks.validate_skip(["missing_handler", "no_such"])
        checks.validate_skip(sorted(checks.CHECKS))
        checks.validate_skip(None)

    def test_sort_is_stable_under_shuffling(self):
        everything = checks.check_node("n1", full_gathered(), [rc("nvidia-typo")], {})[0]
        more = everything + checks.check_drift({"g": ["a", "b"]}, {"a": ["x"], "b": ["y"]})
        expected = checks.sort_findings(more)
        rng = random.Random(7)
        for _unused in range(20):
            shuffled = list(more)
            rng.shuffle(shuffled)
            assert checks.sort_findings(shuffled) == expected
        assert [f["node"] for f in expected] == ["a", "b"] + ["n1"] * len(everything)

    def test_reaches(self):
        assert checks.reaches("error", "error") and not checks.reaches("warning", "error")
        assert checks.reaches("warning", "warning") and checks.reaches("error", "info")
        assert not any(checks.reaches(s, "none") for s in checks.SEVERITIES)


def test_yaml_typed_label_values_match_string_selectors():
    # An inventory's `gpu: true` / `zone: 1` arrive as bool / int; Kubernetes labels are strings.
    assert checks.selector_matches({"gpu": "true", "zone": "1"}, {"gpu": True, "zone": 1})[0] is True
    assert checks.selector_matches({"gpu": "true"}, {"gpu": False})[0] is False


# --- the registry, the formatter --------------------------------------------------------------

def test_every_check_is_declared_once_with_its_needs():
    assert len(checks.BY_ID) == len(checks.REGISTRY)
    for check in checks.REGISTRY:
        assert set(check.needs) <= set(checks.NEEDS), check.id
        assert set(check.severities) <= set(checks.SEVERITIES), check.id
        assert (check.run is None) == (check.modes == ("group",)), check.id
    assert sorted(checks.CHECKS) == sorted(checks.BY_ID)


@pytest.mark.parametrize("text, shown", [
    ("nvidia\nOK", "nvidia\\nOK"),
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("a\x00b\x7f\x85c", "a\\x00b\\x7f\\x85c"),
    ("tab\there\r", "tab\\there\\r"),
    (u"line\u2028sep\ufffe", "line\\u2028sep\\ufffe"),
    (u"gr\u00fc\u00df", u"gr\u00fc\u00df"),
])
def test_one_line_escapes_every_control_character(text, shown):
    assert checks.one_line(text) == shown
    assert "\n" not in checks.one_line(text)


def test_a_handler_with_a_newline_never_prints_a_line_of_its_own():
    out = missing(["runc"], [rc("x", handler="nv\nOK")])
    assert checks.missing_lines(out) == ["MISSING=nv\\nOK"]
    line = checks.finding_line(out[0])
    assert "\n" not in line and line.startswith("ERROR missing_handler: RuntimeClass x asks for handler 'nv\\nOK'")
    assert line.endswith("(fix: register runtime 'nv\\nOK' in containerd (role gpurt.runtime_gate.containerd_runtime))")
    assert checks.finding_line(out[0], with_node=True).startswith("n1: ERROR missing_handler: ")

import random

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import containerd_config as cc
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import findings as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import loaded_config

V1, V2, V3 = cc.CRI_PLUGIN_V1, cc.CRI_PLUGIN_V2, cc.CRI_PLUGIN_V3


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


def file_entry(path, role, text):
    entry = {"path": path, "role": role, "content": text, "error": None}
    entry["parsed"] = loaded_config.summarize_file(entry)
    return entry


def ids(items):
    return [(f["check"], f["severity"], f["subject"]) for f in items]


# --- missing_handler ------------------------------------------------------------------------

class TestMissingHandler(object):
    def test_handler_present_is_not_reported(self):
        assert checks.check_missing_handlers("n1", ["runc", "nvidia"], [rc("nvidia")], {}, "src") == []

    def test_missing_handler_without_selector(self):
        out = checks.check_missing_handlers("n1", ["runc"], [rc("kata")], {}, "the loaded config")
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
        out = checks.check_missing_handlers("n1", ["runc"], [rc("nvidia", selector={"gpu": "true"})],
                                            {"gpu": "true", "zone": "a"}, "src")
        assert ids(out) == [("missing_handler", "error", "nvidia")]
        assert out[0]["evidence"]["scheduling"] == "nodeSelector matches"

    def test_selector_not_matching(self):
        assert checks.check_missing_handlers("n1", ["runc"], [rc("nvidia", selector={"gpu": "true"})],
                                             {"gpu": "false"}, "src") == []
        # a label the node lacks does not match either
        assert checks.check_missing_handlers("n1", ["runc"], [rc("nvidia", selector={"gpu": "true"})],
                                             {}, "src") == []

    def test_selector_needs_every_key(self):
        selector = {"gpu": "true", "vendor": "nvidia"}
        assert checks.check_missing_handlers("n1", ["runc"], [rc("nvidia", selector=selector)],
                                             {"gpu": "true"}, "src") == []

    def test_unknown_labels_mean_it_applies(self):
        out = checks.check_missing_handlers("n1", ["runc"], [rc("nvidia", selector={"gpu": "true"})], None, "src")
        assert ids(out) == [("missing_handler", "error", "nvidia")]
        assert "labels unknown" in out[0]["evidence"]["scheduling"]

    def test_did_you_mean(self):
        out = checks.check_missing_handlers("n1", ["runc", "nvidia"], [rc("gpu", handler="nvidia-typo")], {}, "src")
        assert out[0]["subject"] == "nvidia-typo"
        assert out[0]["evidence"]["suggestion"] == "nvidia"
        assert "did you mean 'nvidia'?" in out[0]["message"]
        assert "fix the RuntimeClass handler to 'nvidia'" in out[0]["fix"]

    def test_no_suggestion_for_unrelated_name(self):
        out = checks.check_missing_handlers("n1", ["runc", "nvidia"], [rc("wasm", handler="spin")], {}, "src")
        assert out[0]["evidence"]["suggestion"] is None

    def test_default_entry_is_never_suggested(self):
        # cluster mode: status.runtimeHandlers has "" for the default runtime
        out = checks.check_missing_handlers("n1", ["", "runc"], [rc("x", handler="r")], {}, "src")
        assert out[0]["evidence"]["suggestion"] is None

    def test_missing_lines_sorted_and_unique(self):
        rcs = [rc("b", handler="zeta"), rc("a", handler="alpha"), rc("c", handler="zeta")]
        out = checks.check_missing_handlers("n1", ["runc"], rcs, {}, "src")
        assert len(out) == 3
        other = checks.finding("n1", "cdi_disabled", "error", "nvidia-cdi", "m", "f")
        assert checks.missing_lines(out + [other]) == ["MISSING=alpha", "MISSING=zeta"]
        assert checks.missing_lines([]) == []


# --- default runtime ------------------------------------------------------------------------

class TestDefaultRuntime(object):
    def test_runc_default_is_quiet(self):
        assert checks.check_default_runtime("n1", loaded(default="runc")) == []

    def test_empty_default_is_quiet(self):
        assert checks.check_default_runtime("n1", loaded(default="")) == []

    def test_nvidia_default_is_a_blast_radius_warning(self):
        out = checks.check_default_runtime("n1", loaded(default="nvidia"))
        assert ids(out) == [("default_runtime_blast_radius", "warning", "nvidia")]
        assert out[0]["evidence"] == {"default_runtime_name": "nvidia"}

    def test_default_not_loaded(self):
        out = checks.check_default_runtime("n1", loaded(names=("runc",), default="nvidia"))
        assert sorted(ids(out)) == [("default_runtime_blast_radius", "warning", "nvidia"),
                                    ("default_runtime_not_loaded", "error", "nvidia")]
        item = [f for f in out if f["check"] == "default_runtime_not_loaded"][0]
        assert item["evidence"]["loaded_runtimes"] == ["runc"]

    def test_runc_default_not_loaded(self):
        # containerd 1.x drop-in replacement can lose runc itself
        out = checks.check_default_runtime("n1", loaded(names=("nvidia",), default="runc"))
        assert ids(out) == [("default_runtime_not_loaded", "error", "runc")]


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
        out = [f for f in checks.check_imports("n1", gathered_imports()) if f["check"] == "dead_imports_glob"]
        assert ids(out) == [("dead_imports_glob", "warning", "/etc/containerd/conf.d/*.toml")]
        item = out[0]
        assert item["evidence"]["declared_in"] == "/etc/containerd/config.toml"
        assert item["evidence"]["files_in_dir"] == ["/etc/containerd/conf.d/99-nvidia.conf"]
        # the fix suggests a pattern for what really sits in the dir
        assert "/etc/containerd/conf.d/*.conf" in item["fix"]

    def test_matching_glob_is_not_dead(self):
        out = checks.check_imports("n1", gathered_imports())
        assert "extra/*.toml" not in [f["subject"] for f in out]

    def test_orphans(self):
        out = dict((f["subject"], f) for f in checks.check_imports("n1", gathered_imports())
                   if f["check"] == "orphan_dropin")
        assert sorted(out) == ["/etc/containerd/conf.d/99-nvidia.conf", "/etc/containerd/config.d/99-nvidia.toml"]
        conf = out["/etc/containerd/conf.d/99-nvidia.conf"]
        # declares a runtime nothing loads: an error
        assert conf["severity"] == "error"
        assert conf["evidence"]["declares_runtimes"] == ["nvidia-cdi"]
        assert conf["evidence"]["not_loaded"] == ["nvidia-cdi"]
        assert "rename it to match /etc/containerd/conf.d/*.toml" == conf["fix"]
        ctk = out["/etc/containerd/config.d/99-nvidia.toml"]
        # declares nvidia, which is loaded from elsewhere: a warning
        assert ctk["severity"] == "warning"
        assert ctk["evidence"]["not_loaded"] == []
        assert "imports read other dirs only" in ctk["message"]
        assert "/etc/containerd/config.d/*.toml" in ctk["fix"]

    def test_orphan_when_config_has_no_imports(self):
        gathered = {"loaded": loaded(), "imports": [], "files": [
            file_entry("/etc/containerd/config.toml", "main", "version = 3\n"),
            file_entry("/etc/containerd/conf.d/a.toml", "unreferenced", "version = 3\n")]}
        out = checks.check_imports("n1", gathered)
        assert ids(out) == [("orphan_dropin", "warning", "/etc/containerd/conf.d/a.toml")]
        assert "the config has no imports" in out[0]["message"]

    def test_nothing_to_report(self):
        gathered = gathered_imports()
        gathered["imports"] = gathered["imports"][1:]
        gathered["files"] = gathered["files"][:2]
        assert checks.check_imports("n1", gathered) == []


# --- ignored plugin sections and drift ------------------------------------------------------

def runtime_toml(plugin, *names):
    return "".join('[plugins."%s".containerd.runtimes.%s]\nruntime_type = "io.containerd.runc.v2"\n' % (plugin, n)
                   for n in names)


def sections_gathered(major, files, loaded_names, version=None):
    return {"version_major": major, "version": version or ("2.1.9" if major == 2 else "1.7.24"),
            "loaded": loaded(names=loaded_names),
            "dump_warnings": ['level=warning msg="Ignoring unknown key in TOML for plugin"'],
            "files": [file_entry(path, role, text) for path, role, text in files]}


class TestFileSections(object):
    def test_v3_file_with_old_plugin_name_on_2x(self):
        g = sections_gathered(2, [("/c.toml", "main", "version = 3\n" + runtime_toml(V2, "nvidia"))], ("runc",))
        out = checks.check_file_sections("n1", g)
        assert ids(out) == [("ignored_plugin_section", "error", "/c.toml:%s" % V2)]
        assert out[0]["evidence"]["not_loaded"] == ["nvidia"]
        assert out[0]["evidence"]["file_version"] == 3
        assert out[0]["evidence"]["loader_warnings"] == g["dump_warnings"]
        assert 'plugins."%s"' % V3 in out[0]["fix"]

    def test_ignored_section_whose_runtime_loads_elsewhere_is_a_warning(self):
        g = sections_gathered(2, [("/c.toml", "main", "version = 3\n" + runtime_toml(V2, "nvidia"))], ("runc", "nvidia"))
        out = checks.check_file_sections("n1", g)
        assert ids(out) == [("ignored_plugin_section", "warning", "/c.toml:%s" % V2)]

    def test_v3_file_on_1x(self):
        g = sections_gathered(1, [("/c.toml", "main", "version = 3\n" + runtime_toml(V3, "nvidia"))], ("runc",),
                              version="1.6.20")
        out = checks.check_file_sections("n1", g)
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
        assert ids(checks.check_file_sections("n1", g)) == [("ignored_plugin_section", "error", "/c.toml")]

    def test_v1_file_on_2x(self):
        g = sections_gathered(2, [("/c.toml", "main", "version = 1\n" + runtime_toml(V1, "nvidia"))], ("runc",))
        out = checks.check_file_sections("n1", g)
        assert ids(out) == [("ignored_plugin_section", "error", "/c.toml:cri")]
        assert out[0]["evidence"]["file_version"] == 1
        assert out[0]["evidence"]["not_loaded"] == ["nvidia"]

    def test_v1_file_on_1x_is_fine(self):
        # measured: 1.6 and 1.7 read plugins.cri of a version 1 file
        g = sections_gathered(1, [("/c.toml", "main", "version = 1\n" + runtime_toml(V1, "nvidia"))], ("runc", "nvidia"))
        assert checks.check_file_sections("n1", g) == []

    def test_v2_file_on_2x_is_fine(self):
        g = sections_gathered(2, [("/c.toml", "main", "version = 2\n" + runtime_toml(V2, "nvidia"))], ("runc", "nvidia"))
        assert checks.check_file_sections("n1", g) == []

    def test_1x_dropins_replace_the_section(self):
        # measured on 1.7: two v2 drop-ins with one runtime each; only the last one's runtime is
        # loaded, and runc from the main file is lost too
        files = [
            ("/etc/containerd/config.toml", "main", "version = 2\n" + runtime_toml(V2, "runc")),
            ("/etc/containerd/conf.d/10-a.toml", "imported", "version = 2\n" + runtime_toml(V2, "nvidia-a")),
            ("/etc/containerd/conf.d/20-b.toml", "imported", "version = 2\n" + runtime_toml(V2, "nvidia")),
        ]
        out = checks.check_file_sections("n1", sections_gathered(1, files, ("nvidia",)))
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
        out = checks.check_file_sections("n1", sections_gathered(2, files, ("runc",)))
        assert ids(out) == [("file_loaded_drift", "error", "/c.toml:nvidia")]
        assert "5837" not in out[0]["message"]

    def test_unreferenced_files_are_not_drift(self):
        files = [("/c.toml", "main", "version = 3\n"),
                 ("/conf.d/x.conf", "unreferenced", "version = 3\n" + runtime_toml(V3, "nvidia"))]
        assert checks.check_file_sections("n1", sections_gathered(2, files, ("runc",))) == []

    @pytest.mark.parametrize("major, main_version, plugin", [(1, 2, V2), (2, 2, V2), (2, 3, V3)])
    def test_versionless_dropin_takes_the_root_version(self, major, main_version, plugin):
        # measured on 1.7 and 2.1: a drop-in without a version line is read as the root file's
        files = [("/c.toml", "main", "version = %d\n" % main_version),
                 ("/conf.d/nvidia.toml", "imported", runtime_toml(plugin, "nvidia"))]
        assert checks.check_file_sections("n1", sections_gathered(major, files, ("runc", "nvidia"))) == []

    def test_versionless_main_file_is_version_1(self):
        files = [("/c.toml", "main", runtime_toml(V2, "nvidia"))]
        out = checks.check_file_sections("n1", sections_gathered(2, files, ("runc",)))
        assert ids(out) == [("ignored_plugin_section", "error", "/c.toml:%s" % V2)]
        assert out[0]["evidence"]["file_version"] == 1

    def test_unparsable_file_is_config_unreadable(self):
        g = sections_gathered(2, [("/c.toml", "main", "version = 3\n"), ("/d.toml", "imported", "[broken\n")], ("runc",))
        out = checks.check_file_sections("n1", g)
        assert ids(out) == [("config_unreadable", "error", "/d.toml")]
        assert "/d.toml" in out[0]["evidence"]["error"]

    def test_unread_file_is_config_unreadable(self):
        g = sections_gathered(2, [("/c.toml", "main", "version = 3\n")], ("runc",))
        g["files"].append({"path": "/big.toml", "role": "imported", "content": None, "error": "file is 2 bytes",
                           "parsed": loaded_config.summarize_file(
                               {"path": "/big.toml", "role": "imported", "content": None, "error": "file is 2 bytes"})})
        assert ids(checks.check_file_sections("n1", g)) == [("config_unreadable", "error", "/big.toml")]


# --- runtime binary -------------------------------------------------------------------------

class TestRuntimeBinary(object):
    def gathered(self, facts):
        runtimes = {"runc": runc_like("runc"), "nvidia": runc_like("nvidia", binary="/usr/bin/nvidia-container-runtime")}
        return {"loaded": loaded(runtimes=runtimes), "paths": {"/usr/bin/nvidia-container-runtime": facts}}

    def test_missing_binary(self):
        facts = {"path": "/usr/bin/nvidia-container-runtime", "exists": False, "is_file": False, "executable": False}
        out = checks.check_binaries("n1", self.gathered(facts))
        assert ids(out) == [("runtime_binary", "error", "nvidia")]
        assert out[0]["evidence"]["binary_name"] == "/usr/bin/nvidia-container-runtime"
        assert "does not exist" in out[0]["message"]

    def test_not_executable(self):
        facts = {"path": "/usr/bin/nvidia-container-runtime", "exists": True, "is_file": True, "executable": False}
        out = checks.check_binaries("n1", self.gathered(facts))
        assert ids(out) == [("runtime_binary", "error", "nvidia")]
        assert "is not an executable file" in out[0]["message"]

    def test_executable_is_fine(self):
        facts = {"path": "/usr/bin/nvidia-container-runtime", "exists": True, "is_file": True, "executable": True}
        assert checks.check_binaries("n1", self.gathered(facts)) == []

    def test_unreported_path_is_skipped(self):
        gathered = self.gathered({})
        gathered["paths"] = {}
        assert checks.check_binaries("n1", gathered) == []


# --- cgroup driver --------------------------------------------------------------------------

class TestCgroupDriver(object):
    def gathered(self, kubelet_text, nvidia_systemd, runc_systemd=True):
        runtimes = {"runc": runc_like("runc", systemd=runc_systemd), "nvidia": runc_like("nvidia", systemd=nvidia_systemd)}
        runtimes["kata"] = dict(runc_like("kata"), runtime_type="io.containerd.kata.v2")
        kubelet = {"path": "/var/lib/kubelet/config.yaml", "exists": kubelet_text is not None, "content": kubelet_text}
        return {"loaded": loaded(runtimes=runtimes), "kubelet_config": kubelet}

    def test_systemd_kubelet_vs_systemd_false(self):
        g = self.gathered("kind: KubeletConfiguration\ncgroupDriver: systemd\n", False)
        out = checks.check_cgroup_driver("n1", g)
        assert ids(out) == [("cgroup_driver", "error", "nvidia")]
        assert out[0]["evidence"] == {"runtime": "nvidia", "systemd_cgroup": False, "kubelet_cgroup_driver": "systemd",
                                      "kubelet_config": "/var/lib/kubelet/config.yaml"}
        assert out[0]["fix"] == "set SystemdCgroup = true for 'nvidia'"

    def test_unset_systemd_cgroup_counts_as_false(self):
        g = self.gathered("cgroupDriver: systemd\n", None)
        assert ids(checks.check_cgroup_driver("n1", g)) == [("cgroup_driver", "error", "nvidia")]

    def test_absent_cgroup_driver_is_kubelet_default_cgroupfs(self):
        g = self.gathered("kind: KubeletConfiguration\n", False, runc_systemd=True)
        out = checks.check_cgroup_driver("n1", g)
        assert ids(out) == [("cgroup_driver", "error", "runc")]
        assert out[0]["evidence"]["kubelet_cgroup_driver"] == "cgroupfs"

    def test_override_variable_wins(self):
        g = self.gathered("cgroupDriver: systemd\n", True, runc_systemd=True)
        assert checks.check_cgroup_driver("n1", g) == []
        out = checks.check_cgroup_driver("n1", g, override="cgroupfs")
        assert sorted(ids(out)) == [("cgroup_driver", "error", "nvidia"), ("cgroup_driver", "error", "runc")]
        assert out[0]["evidence"]["kubelet_config"] == "variable"

    def test_override_without_kubelet_file(self):
        g = self.gathered(None, False, runc_systemd=False)
        assert checks.check_cgroup_driver("n1", g) == []
        assert len(checks.check_cgroup_driver("n1", g, override="systemd")) == 2

    @pytest.mark.parametrize("text", ["", "[not: yaml", "- a list\n"])
    def test_unusable_kubelet_config_skips_the_check(self, text):
        assert checks.check_cgroup_driver("n1", self.gathered(text, False)) == []

    def test_non_runc_runtimes_are_not_judged(self):
        g = self.gathered("cgroupDriver: systemd\n", True)
        assert checks.check_cgroup_driver("n1", g) == []  # kata has systemd_cgroup None but is no runc shim


# --- CDI ------------------------------------------------------------------------------------

class TestCdi(object):
    def test_cdi_handler_without_cdi(self):
        g = {"loaded": loaded(names=("runc", "nvidia", "nvidia-cdi"), enable_cdi=False)}
        out = checks.check_cdi("n1", g, [rc("nvidia-cdi")], {})
        assert ids(out) == [("cdi_disabled", "error", "nvidia-cdi")]
        assert out[0]["evidence"]["enable_cdi"] is False

    def test_cdi_handler_of_a_runtimeclass_only(self):
        g = {"loaded": loaded(names=("runc",), enable_cdi=False)}
        assert ids(checks.check_cdi("n1", g, [rc("gpu", handler="nvidia-cdi")], {})) == [
            ("cdi_disabled", "error", "nvidia-cdi")]
        # a RuntimeClass that cannot land here does not count
        assert checks.check_cdi("n1", g, [rc("gpu", handler="nvidia-cdi", selector={"cdi": "yes"})], {}) == []

    def test_cdi_enabled_is_fine(self):
        g = {"loaded": loaded(names=("runc", "nvidia-cdi"), enable_cdi=True)}
        assert checks.check_cdi("n1", g, [rc("nvidia-cdi")], {}) == []

    def test_non_cdi_names(self):
        g = {"loaded": loaded(names=("runc", "nvidia", "cdi-less", "nvidiacdi"), enable_cdi=False)}
        # "cdi-less" has a "cdi" segment, "nvidiacdi" ends with cdi; "nvidia" has neither
        assert [f["subject"] for f in checks.check_cdi("n1", g, [], {})] == ["cdi-less", "nvidiacdi"]

    def test_stale_spec(self):
        g = {"loaded": loaded(), "cdi_specs": [
            {"path": "/etc/cdi/nvidia.yaml", "error": None, "host_paths": [
                {"path": "/dev/nvidia0", "exists": True},
                {"path": "/usr/lib/libcuda.so.535.104.05", "exists": False},
                {"path": "/usr/lib/libnvidia-ml.so.535.104.05", "exists": False}]},
            {"path": "/etc/cdi/fresh.yaml", "error": None, "host_paths": [{"path": "/dev/nvidia0", "exists": True}]},
        ]}
        out = checks.check_cdi("n1", g, [], {})
        assert ids(out) == [("cdi_stale_spec", "error", "/etc/cdi/nvidia.yaml")]
        assert out[0]["evidence"]["missing_host_paths"] == ["/usr/lib/libcuda.so.535.104.05",
                                                            "/usr/lib/libnvidia-ml.so.535.104.05"]
        assert out[0]["evidence"]["missing_count"] == 2
        assert "--output=/etc/cdi/nvidia.yaml" in out[0]["fix"]

    def test_unreadable_spec_is_a_warning(self):
        g = {"loaded": loaded(), "cdi_specs": [{"path": "/etc/cdi/x.json", "error": "not valid JSON: x", "host_paths": []}]}
        assert ids(checks.check_cdi("n1", g, [], {})) == [("cdi_stale_spec", "warning", "/etc/cdi/x.json")]


# --- overhead -------------------------------------------------------------------------------

class TestOverhead(object):
    def test_cpu_overhead_does_not_fit(self):
        rcs = [rc("nvidia-overhead", handler="nvidia", overhead={"cpu": "250m"})]
        out = checks.check_overhead("n1", rcs, {}, {"cpu": "1"}, {"cpu": "900m"})
        assert ids(out) == [("overhead_unschedulable", "error", "nvidia-overhead:cpu")]
        assert out[0]["evidence"]["arithmetic"] == "900m + 250m > 1000m"
        assert "900m + 250m > 1000m" in out[0]["message"]
        assert out[0]["evidence"]["pod_request"] == "900m"
        assert out[0]["evidence"]["overhead"] == "250m"
        assert out[0]["evidence"]["allocatable"] == "1"

    def test_memory_with_binary_suffixes(self):
        rcs = [rc("kata", overhead={"memory": "512Mi"})]
        out = checks.check_overhead("n1", rcs, {}, {"memory": "1Gi"}, {"memory": "768Mi"})
        assert ids(out) == [("overhead_unschedulable", "error", "kata:memory")]
        assert out[0]["evidence"]["arithmetic"] == "%d + %d > %d" % (768 * 2 ** 20, 512 * 2 ** 20, 2 ** 30)

    def test_fits(self):
        rcs = [rc("kata", overhead={"cpu": "100m", "memory": "256Mi"})]
        assert checks.check_overhead("n1", rcs, {}, {"cpu": "1", "memory": "1Gi"},
                                     {"cpu": "900m", "memory": "768Mi"}) == []

    def test_exactly_full_fits(self):
        rcs = [rc("kata", overhead={"cpu": "100m"})]
        assert checks.check_overhead("n1", rcs, {}, {"cpu": "1"}, {"cpu": "900m"}) == []

    def test_no_pod_request_means_zero(self):
        rcs = [rc("kata", overhead={"cpu": "2"})]
        out = checks.check_overhead("n1", rcs, {}, {"cpu": "1500m"})
        assert out[0]["evidence"]["arithmetic"] == "0m + 2000m > 1500m"

    def test_bad_quantity_is_a_warning(self):
        rcs = [rc("kata", overhead={"cpu": "lots"})]
        out = checks.check_overhead("n1", rcs, {}, {"cpu": "1"}, {"cpu": "900m"})
        assert ids(out) == [("overhead_unschedulable", "warning", "kata:cpu")]
        assert "lots" in out[0]["message"]

    def test_bad_allocatable_is_a_warning(self):
        rcs = [rc("kata", overhead={"cpu": "250m"})]
        out = checks.check_overhead("n1", rcs, {}, {"cpu": "one"}, {})
        assert ids(out) == [("overhead_unschedulable", "warning", "kata:cpu")]

    def test_infinite_allocatable_is_a_warning_not_an_exception(self):
        rcs = [rc("kata", overhead={"cpu": "250m"})]
        out = checks.check_overhead("n1", rcs, {}, {"cpu": float("inf")}, {"cpu": "900m"})
        assert ids(out) == [("overhead_unschedulable", "warning", "kata:cpu")]

    def test_huge_quantity_is_reported_not_raised(self):
        rcs = [rc("kata", overhead={"memory": "1e5000"})]
        out = checks.check_overhead("n1", rcs, {}, {"memory": "1Gi"}, {})
        assert [f["check"] for f in out] == ["overhead_unschedulable"]

    def test_without_allocatable_nothing_is_judged(self):
        rcs = [rc("kata", overhead={"cpu": "250m"})]
        assert checks.check_overhead("n1", rcs, {}, None, {"cpu": "900m"}) == []
        assert checks.check_overhead("n1", rcs, {}, {"memory": "1Gi"}, {"cpu": "900m"}) == []

    def test_selector_keeps_it_off_the_node(self):
        rcs = [rc("kata", overhead={"cpu": "250m"}, selector={"kata": "yes"})]
        assert checks.check_overhead("n1", rcs, {"kata": "no"}, {"cpu": "1"}, {"cpu": "900m"}) == []


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

    def test_groups_are_judged_separately(self):
        out = checks.check_drift({"g1": ["a"], "g2": ["b", "c"]}, {"a": ["nvidia"], "b": ["runc"], "c": ["runc"]})
        assert out == []


# --- cluster-only mode ----------------------------------------------------------------------

class TestReportedNode(object):
    def test_handlers_not_reported(self):
        checked, out = checks.check_reported_node({"name": "n1", "runtime_handlers": None}, [rc("nvidia")])
        assert checked is False
        assert ids(out) == [("handlers_not_reported", "warning", "n1")]

    def test_handlers_not_reported_can_be_skipped(self):
        checked, out = checks.check_reported_node({"name": "n1", "runtime_handlers": None}, [rc("nvidia")],
                                                  skip=["handlers_not_reported"])
        assert (checked, out) == (False, [])

    def test_missing_reported_handler(self):
        node = {"name": "n1", "runtime_handlers": ["", "runc", "nvidia"], "labels": {}}
        checked, out = checks.check_reported_node(node, [rc("nvidia"), rc("nvidia-cdi")])
        assert checked is True
        assert ids(out) == [("missing_handler", "error", "nvidia-cdi")]
        assert "status.runtimeHandlers" in out[0]["message"]
        assert out[0]["evidence"]["suggestion"] == "nvidia"

    def test_empty_default_entry_is_ignored(self):
        node = {"name": "n1", "runtime_handlers": ["", "runc"], "labels": {}}
        _checked, out = checks.check_reported_node(node, [rc("x", handler="q")])
        assert out[0]["evidence"]["suggestion"] is None
        assert checks.check_reported_node(node, [rc("runc")]) == (True, [])

    def test_selector_against_node_labels(self):
        node = {"name": "n1", "runtime_handlers": ["runc"], "labels": {"gpu": "false"}}
        assert checks.check_reported_node(node, [rc("nvidia", selector={"gpu": "true"})]) == (True, [])

    def test_overhead_from_node_allocatable(self):
        node = {"name": "n1", "runtime_handlers": ["runc", "nvidia"], "labels": {}, "allocatable": {"cpu": "1"}}
        _checked, out = checks.check_reported_node(node, [rc("nvidia", overhead={"cpu": "250m"})], {"cpu": "900m"})
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
        out = checks.check_node("n1", full_gathered(), [rc("nvidia-typo")], {})
        assert [f["check"] for f in out] == [
            "cgroup_driver", "missing_handler", "orphan_dropin", "runtime_binary",
            "dead_imports_glob", "default_runtime_blast_radius", "orphan_dropin"]
        assert [f["severity"] for f in out] == ["error"] * 4 + ["warning"] * 3

    def test_skip_checks_drop_findings(self):
        everything = checks.check_node("n1", full_gathered(), [rc("nvidia-typo")], {})
        skip = ["orphan_dropin", "runtime_binary"]
        out = checks.check_node("n1", full_gathered(), [rc("nvidia-typo")], {}, options={"skip_checks": skip})
        assert out == [f for f in everything if f["check"] not in skip]
        assert len(out) == len(everything) - 3

    def test_unknown_skip_id_raises(self):
        with pytest.raises(ValueError, match="unknown check id.*no_such"):
            checks.validate_skip(["missing_handler", "no_such"])
        checks.validate_skip(sorted(checks.CHECKS))
        checks.validate_skip(None)

    def test_sort_is_stable_under_shuffling(self):
        everything = checks.check_node("n1", full_gathered(), [rc("nvidia-typo")], {})
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

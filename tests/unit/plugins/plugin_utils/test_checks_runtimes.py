"""_checks/runtimes.py: what each loaded runtime needs on the node: its binary or shim (runtime_binary), its
files (runtime_file), a SystemdCgroup that agrees with the kubelet (cgroup_driver), CDI where it expects it
(cdi_disabled), CDI specs whose host paths still exist (cdi_stale_spec)."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from tests.lib.check_inputs import ctx, ids, loaded, rc, run, runc_like


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
        shim = dict(facts("containerd-shim-kata-v2", False, False, False), searched=["/usr/bin", "/opt/containerd"],
                    path_from="systemd's default PATH for services")
        out = run("runtime_binary", ctx_kata(self.kata(shim)))
        assert ids(out) == [("runtime_binary", "error", "kata")]
        assert "shim of runtime_type io.containerd.kata.v2 containerd-shim-kata-v2, which does not exist" in out[0]["message"]
        assert ("(searched /usr/bin, /opt/containerd: containerd's PATH (systemd's default PATH for services), then "
                "gpurt_shim_dirs, then the containerd binary's dir)") in out[0]["message"]

    def test_a_bare_binary_name_found_nowhere_says_where_it_was_looked_up(self):
        bare = dict(facts("nvidia-oci", False, False, False), searched=["/usr/local/sbin", "/usr/bin", "/opt/nv"],
                    path_from="PATH from Environment= in /etc/systemd/system/containerd.service.d/path.conf")
        runtimes = {"runc": runc_like("runc"), "nvidia": runc_like("nvidia", binary="nvidia-oci")}
        out = run("runtime_binary", ctx({"loaded": loaded(runtimes=runtimes), "paths": {"nvidia-oci": bare}},
                                        [rc("nvidia")]))
        assert ids(out) == [("runtime_binary", "error", "nvidia")]
        assert out[0]["message"] == (
            "runtime 'nvidia' uses BinaryName nvidia-oci, which does not exist on the node (searched /usr/local/sbin, "
            "/usr/bin, /opt/nv: containerd's PATH (PATH from Environment= in "
            "/etc/systemd/system/containerd.service.d/path.conf), then gpurt_shim_dirs)")

    def test_a_bare_name_found_only_as_a_plain_file_names_that_file(self):
        plain = dict(facts("nvidia-oci", executable=False), resolved="/usr/bin/nvidia-oci", searched=["/usr/bin"],
                     path_from="systemd's default PATH for services")
        runtimes = {"runc": runc_like("runc"), "nvidia": runc_like("nvidia", binary="nvidia-oci")}
        out = run("runtime_binary", ctx({"loaded": loaded(runtimes=runtimes), "paths": {"nvidia-oci": plain}},
                                        [rc("nvidia")]))
        assert "BinaryName nvidia-oci (found at /usr/bin/nvidia-oci), which is not executable" in out[0]["message"]

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

    def test_on_24_cdi_is_always_on(self):
        # measured: 2.4 has no enable_cdi (ignored with a warning, absent from its dump); 2.3 still reads it
        runtimes = {"nvidia-cdi": runc_like("nvidia-cdi")}
        assert self.cdi(runtimes, rcs=[rc("nvidia-cdi")], version="2.4.2") == []
        on_23 = self.cdi(runtimes, rcs=[rc("nvidia-cdi")], version="2.3.4")
        assert ids(on_23) == [("cdi_disabled", "error", "nvidia-cdi")]

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

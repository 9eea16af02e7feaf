"""The node-side gather (module_utils/_node_gather): its pure parts (the refusal, the shim name rule, the
runtimes' path facts), and gather() end to end with small shell scripts standing in for containerd and
crictl, one test per branch. The real binaries and daemons are in tests/integration."""
import json
import os
import re
import resource

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_commands as node_commands
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_gather as gather
from tests.lib.containerd_stderr import GOROUTINE_DUMP
from tests.lib.fake_containerd import V16, V21, FakeContainerd


def test_refusal_keeps_the_cause_and_a_bounded_tail():
    refused = gather.refusal(["containerd", "--config", "/c", "config", "dump"], 2, GOROUTINE_DUMP)
    assert refused["cause"] == "fatal error: out of memory"
    assert refused["rc"] == 2 and refused["command"] == "containerd --config /c config dump"
    assert len(refused["stderr_tail"]) <= 2000
    assert refused["warnings"] == ['level=warning msg="Configuration migrated from version 2, use `containerd config '
                                   'migrate` to avoid migration" t="5.7us"']


@pytest.mark.parametrize("runtime_type, shim", [
    ("io.containerd.kata.v2", "containerd-shim-kata-v2"),
    ("io.containerd.kata-qemu.v2", "containerd-shim-kata-qemu-v2"),
    ("io.containerd.runsc.v1", "containerd-shim-runsc-v1"),
    ("io.containerd.runc.v2", "containerd-shim-runc-v2"),
    ("/opt/kata/bin/containerd-shim-kata-v2", "/opt/kata/bin/containerd-shim-kata-v2"),
    ("kata", None),
    (".v2", None),
])
def test_shim_binary_name(runtime_type, shim):
    assert gather.shim_binary_name(runtime_type) == shim


def test_runtime_path_facts_skip_runc_and_read_every_path_key(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    text = ('[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kata]\n'
            '  runtime_type = "io.containerd.kata.v2"\n'
            '  base_runtime_spec = "/etc/containerd/base.json"\n'
            "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata.options]\n"
            "  ConfigPath = '/opt/kata/configuration.toml'\n"
            '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]\n'
            '  runtime_type = "io.containerd.runc.v2"\n  runtime_path = "/opt/runc/shim"\n')
    lookup = gather.RuntimeLookup(str(tmp_path / "node"), [], str(tmp_path / "containerd"))
    paths, shims = gather.runtime_path_facts([text, ""], lookup)
    assert sorted(paths) == ["/etc/containerd/base.json", "/opt/kata/configuration.toml", "/opt/runc/shim"]
    assert sorted(shims) == ["io.containerd.kata.v2"]
    assert shims["io.containerd.kata.v2"]["searched"][-1] == str(tmp_path)


# --- where a bare BinaryName is looked up: containerd's PATH, then gpurt_shim_dirs, under the node root --

def put(path, text="", mode=0o644):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(str(path), "w") as handle:
        handle.write(text)
    os.chmod(str(path), mode)
    return str(path)


def test_containerd_path_is_systemds_default_without_a_unit(tmp_path):
    # merged /usr (no /bin directory of its own): systemd.exec(5)'s fixed PATH, without /sbin:/bin
    assert gather.containerd_path(str(tmp_path)) == (
        ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin"], "systemd's default PATH for services")
    os.symlink("usr/bin", str(tmp_path / "bin"))
    assert gather.containerd_path(str(tmp_path))[0][-1] == "/usr/bin"
    os.unlink(str(tmp_path / "bin"))
    os.makedirs(str(tmp_path / "bin"))  # an unmerged /usr: ":/sbin:/bin" appended
    assert gather.containerd_path(str(tmp_path))[0][-2:] == ["/sbin", "/bin"]


def test_containerd_path_from_the_unit_and_its_dropins(tmp_path):
    put(tmp_path / "usr/lib/systemd/system/containerd.service",
        "[Service]\nExecStart=/usr/bin/containerd\nEnvironment=PATH=/usr/bin:/usr/sbin\n")
    assert gather.containerd_path(str(tmp_path)) == (
        ["/usr/bin", "/usr/sbin"], "PATH from Environment= in /usr/lib/systemd/system/containerd.service")
    # a drop-in's EnvironmentFile (read under the root) overrides Environment=, as systemd.exec(5) says
    put(tmp_path / "etc/systemd/system/containerd.service.d/10-path.conf",
        "[Service]\nEnvironmentFile=-/etc/default/containerd\n")
    put(tmp_path / "etc/default/containerd", "# the node's PATH for containerd\nPATH='/opt/gpu/bin:/usr/bin'\n")
    assert gather.containerd_path(str(tmp_path)) == (
        ["/opt/gpu/bin", "/usr/bin"],
        "PATH from EnvironmentFile=/etc/default/containerd in /etc/systemd/system/containerd.service.d/10-path.conf")


def test_search_dirs_put_each_dir_under_the_root_once_and_skip_relative_entries(tmp_path):
    root = str(tmp_path)
    got = gather.search_dirs(root, ["/usr/bin", "", "bin", "/usr/bin", root + "/opt/x"], ["/opt/kata/bin", root + "/y"])
    assert got == [root + "/usr/bin", root + "/opt/x", root + "/opt/kata/bin", root + "/y"]
    assert gather.search_dirs("/", ["/usr/bin"], ["/opt/kata/bin"]) == ["/usr/bin", "/opt/kata/bin"]


def test_a_bare_binary_name_resolves_in_containerds_path_under_the_root(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "module-bin"))
    root = tmp_path / "node"
    oci = put(root / "usr/bin/nvidia-oci", "#!/bin/sh\n", 0o755)
    put(tmp_path / "module-bin" / "only-here", "#!/bin/sh\n", 0o755)
    lookup = gather.RuntimeLookup(str(root), None, str(tmp_path / "containerd"))
    facts = lookup.binary("nvidia-oci")
    assert (facts["resolved"], facts["executable"]) == (oci, True)
    assert facts["path_from"] == "systemd's default PATH for services"
    # a name in the module's PATH only is not in containerd's: missing, and the facts say where it was looked up
    facts = lookup.binary("only-here")
    assert (facts["exists"], facts["executable"]) == (False, False)
    assert facts["searched"] == [str(root) + d for d in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin")]
    # an absolute BinaryName is checked as it is, not searched
    assert "searched" not in lookup.binary(oci) and lookup.binary(oci)["executable"] is True


def test_a_bare_binary_name_in_shim_dirs_or_a_units_path(tmp_path):
    root = tmp_path / "node"
    kata = put(root / "opt/kata/bin/kata-runtime", "#!/bin/sh\n", 0o755)
    assert gather.RuntimeLookup(str(root), [], "/usr/bin/containerd").binary("kata-runtime")["exists"] is False
    facts = gather.RuntimeLookup(str(root), ["/opt/kata/bin"], "/usr/bin/containerd").binary("kata-runtime")
    assert facts["resolved"] == kata and facts["searched"][-1] == str(root / "opt/kata/bin")
    put(root / "etc/systemd/system/containerd.service.d/path.conf", "[Service]\nEnvironment=PATH=/opt/kata/bin\n")
    facts = gather.RuntimeLookup(str(root), [], "/usr/bin/containerd").binary("kata-runtime")
    assert facts["resolved"] == kata and facts["searched"] == [str(root / "opt/kata/bin")]
    # a BinaryName is not looked up next to containerd (the runc shim runs it from PATH); a shim is
    put(tmp_path / "bin/containerd-shim-kata-v2", "#!/bin/sh\n", 0o755)
    lookup = gather.RuntimeLookup(str(root), [], str(tmp_path / "bin/containerd"))
    assert lookup.binary("containerd-shim-kata-v2")["exists"] is False
    assert lookup.shim("containerd-shim-kata-v2")["resolved"] == str(tmp_path / "bin/containerd-shim-kata-v2")


def test_a_bad_host_root_is_a_gather_error_not_a_traceback():
    with pytest.raises(node_commands.GatherError, match="host_root must be an absolute path"):
        gather.RuntimeLookup("relative/root", [], "/usr/bin/containerd")


# --- gather() end to end, with small shell scripts standing in for containerd and crictl --------

def params(tmp_path, binary, **extra):
    values = dict(containerd_bin=str(binary), config_path=str(tmp_path / "etc/containerd/config.toml"), dropin_dirs=None,
                  kubelet_config_path=str(tmp_path / "kubelet.yaml"), cdi_spec_dirs=[], timeout=10,
                  max_file_bytes=1 << 20, max_dump_bytes=1 << 24, max_memory_mb=1024, on_refused="fail",
                  gather_running=False, shim_dirs=None, crictl_bin=str(tmp_path / "no-crictl"), cri_endpoint=None)
    values.update(extra)
    return values


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_gather_follows_imports_and_lists_unreferenced_dropins(tmp_path):
    etc = tmp_path / "etc/containerd"
    write(etc / "config.toml", 'version = 3\nimports = ["%s/conf.d/*.toml"]\n' % etc)
    write(etc / "conf.d/10-a.toml", 'version = 3\nimports = ["%s/nested.toml"]\n' % etc)
    write(etc / "nested.toml", "version = 3\n")
    write(etc / "conf.d/20-b.conf", "version = 3\n")  # .conf: no glob matches it
    write(etc / "config.d/99-nvidia.toml", "version = 3\n")  # the wrong directory
    fake = FakeContainerd(tmp_path, dump="version = 3\n", stderr='time="2026-01-01T00:00:00Z" level=warning msg="x"\nnoise\n')
    result = gather.gather(params(tmp_path, fake.path))
    assert (result["version"], result["version_major"], result["version_minor"]) == ("2.1.9", 2, 1)
    assert result["version_output"] == V21 and result["config_exists"] is True
    assert result["dump"] == "version = 3\n" and result["refused"] is None
    assert result["dump_warnings"] == ['level=warning msg="x"']
    roles = [(os.path.relpath(f["path"], str(etc)), f["role"]) for f in result["files"]]
    assert roles == [("config.toml", "main"), ("conf.d/10-a.toml", "imported"), ("nested.toml", "imported"),
                     ("conf.d/20-b.conf", "unreferenced"), ("config.d/99-nvidia.toml", "unreferenced")]
    assert all(f["content"] == "version = 3\n" or "imports" in f["content"] for f in result["files"])
    assert [(i["pattern"], len(i["matches"])) for i in result["imports"]] == [
        ("%s/conf.d/*.toml" % etc, 1), ("%s/nested.toml" % etc, 1)]
    assert result["imports"][1]["declared_in"] == str(etc / "conf.d/10-a.toml")
    assert result["dropin_dirs"] == [str(etc / "conf.d"), str(etc / "config.d")]
    assert "running" not in result
    # both commands ran once, and one load of a scratch config per fragment nothing imports
    calls = fake.calls()
    scratch = [c for c in calls if "/gpurt-fragment-" in c]
    assert len(scratch) == 2 and all(c.endswith("/config.toml config dump") for c in scratch)
    own = sorted(c for c in calls if c not in scratch)
    assert own == ["--config %s config dump" % (etc / "config.toml"), "--version"]
    assert result["fragment_loads"] == {"loaded": 2, "cap": 8, "left_out": []}
    assert [f["load"]["rc"] for f in result["files"] if f["role"] == "unreferenced"] == [0, 0]


def test_gather_without_a_config_file_dumps_the_defaults(tmp_path):
    fake = FakeContainerd(tmp_path)
    result = gather.gather(params(tmp_path, fake.path, dropin_dirs=[]))
    assert result["config_exists"] is False and result["dump"] == "version = 3\n# default\n"
    assert result["files"] == [{"path": str(tmp_path / "etc/containerd/config.toml"), "role": "main", "content": None,
                                "error": "file does not exist"}]
    assert sorted(fake.calls()) == ["--version", "config default"]


def test_containerd_16_resolves_relative_imports_against_its_working_directory(tmp_path):
    etc = tmp_path / "etc/containerd"
    write(etc / "config.toml", 'version = 2\nimports = ["conf.d/*.toml"]\n')
    for version, expected in ((V16, "/conf.d/*.toml"), (V21, "%s/conf.d/*.toml" % etc)):
        fake = FakeContainerd(tmp_path, version=version, dump="version = 2\n")
        result = gather.gather(params(tmp_path, fake.path, dropin_dirs=[]))
        assert result["imports"][0]["resolved"] == expected, version


@pytest.mark.parametrize("version, version_rc, message", [
    ("containerd github.com/containerd/containerd v2.1.9", 1, "--version' failed (rc=1)"),
    ("something else entirely", 0, "--version' failed (rc=0): something else entirely"),
])
def test_a_version_that_cannot_be_read_fails_the_gather(tmp_path, version, version_rc, message):
    fake = FakeContainerd(tmp_path, version=version, version_rc=version_rc)
    with pytest.raises(gather.GatherError, match=re.escape(message)):
        gather.gather(params(tmp_path, fake.path))


def test_a_refused_config_fails_or_is_reported(tmp_path):
    write(tmp_path / "etc/containerd/config.toml", "version = 9\n")
    stderr = ('time="2026-01-01T00:00:00Z" level=warning msg="ignoring"\n'
              "containerd: drop-in config version 4 higher than root config version 2\n")
    fake = FakeContainerd(tmp_path, dump="", dump_rc=1, stderr=stderr)
    with pytest.raises(gather.ConfigRefused) as raised:
        gather.gather(params(tmp_path, fake.path))
    assert str(raised.value).startswith("containerd refuses the config: containerd: drop-in config version 4 higher")
    assert raised.value.refused["rc"] == 1 and raised.value.partial["version"] == "2.1.9"
    result = gather.gather(params(tmp_path, fake.path, on_refused="report", cdi_spec_dirs=None))
    assert result["dump"] is None
    assert result["refused"]["cause"] == "containerd: drop-in config version 4 higher than root config version 2"
    assert result["refused"]["warnings"] == ['level=warning msg="ignoring"']
    assert result["files"][0]["content"] == "version = 9\n"  # the files are still read
    assert result["cdi_spec_dirs_read"] == ["/etc/cdi", "/var/run/cdi"]  # no dump: the defaults


@pytest.mark.parametrize("fake_args, extra, message", [
    (dict(dump=""), {}, "printed nothing"),
    (dict(dump="x" * 2048), dict(max_dump_bytes=1024), "printed 2048 bytes, more than max_dump_bytes=1024"),
    (dict(dump=b"version = 3\n# \xff\n"), {}, "printed bytes that are not UTF-8 (offset 14)"),
    (dict(dump_prefix="sleep 30"), dict(timeout=1), "did not finish within 1 s (timeout option)"),
])
def test_bad_dumps_fail_clearly(tmp_path, fake_args, extra, message):
    write(tmp_path / "etc/containerd/config.toml", "version = 3\n")
    fake = FakeContainerd(tmp_path, **fake_args)
    with pytest.raises(gather.GatherError, match=re.escape(message)):
        gather.gather(params(tmp_path, fake.path, **extra))


def test_the_dump_runs_under_the_memory_limit(tmp_path):
    write(tmp_path / "etc/containerd/config.toml", "version = 3\n")
    fake = FakeContainerd(tmp_path, dump_prefix='echo "# data limit $(ulimit -d)"')
    assert gather.gather(params(tmp_path, fake.path, max_memory_mb=256))["dump"].startswith("# data limit 262144\n")
    assert gather.gather(params(tmp_path, fake.path, max_memory_mb=0))["dump"].startswith("# data limit unlimited\n")


def test_the_memory_limit_is_only_the_dumps(tmp_path):
    """The cap is set on this process while the dump starts, then put back, so what starts next
    has the limit it had before."""
    write(tmp_path / "etc/containerd/config.toml", "version = 3\n")
    fake = FakeContainerd(tmp_path, dump_prefix='echo "# data limit $(ulimit -d)"')
    before = resource.getrlimit(resource.RLIMIT_DATA)
    assert gather.gather(params(tmp_path, fake.path, max_memory_mb=128))["dump"].startswith("# data limit 131072\n")
    assert resource.getrlimit(resource.RLIMIT_DATA) == before
    after = node_commands.finish(node_commands.start(["/bin/sh", "-c", "ulimit -d"]), ["sh"], 10)[1]
    assert after != "131072\n"


def test_only_the_version_runs_without_go_collections(tmp_path, monkeypatch):
    """GO_RUNTIME_ENV for `--version`; the dump, which loads the config, runs in the environment as is."""
    write(tmp_path / "etc/containerd/config.toml", "version = 3\n")
    script = tmp_path / "containerd"
    script.write_text('#!/bin/sh\nshow="GOGC=$GOGC GOMEMLIMIT=$GOMEMLIMIT KEPT=$GPURT_TEST_KEPT"\n'
                      '[ "$1" = --version ] && { echo "containerd x v2.1.9 $show"; exit 0; }\n'
                      'echo "version = 3"; echo "# $show"\n')
    script.chmod(0o755)
    monkeypatch.setenv("GPURT_TEST_KEPT", "yes")
    monkeypatch.setenv("GOGC", "100")
    monkeypatch.delenv("GOMEMLIMIT", raising=False)
    result = gather.gather(params(tmp_path, str(script)))
    assert result["version_output"] == "containerd x v2.1.9 GOGC=off GOMEMLIMIT=256MiB KEPT=yes"
    assert result["dump"] == "version = 3\n# GOGC=100 GOMEMLIMIT= KEPT=yes\n"
    assert os.environ["GOGC"] == "100"  # only the child's environment


def test_binaries_are_found_by_path_or_name(tmp_path, monkeypatch):
    fake = FakeContainerd(tmp_path)
    with pytest.raises(gather.GatherError, match="containerd binary not found: /nonexistent/containerd"):
        gather.gather(params(tmp_path, "/nonexistent/containerd"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(gather.GatherError, match="containerd binary 'containerd' not found in PATH"):
        gather.gather(params(tmp_path, "containerd"))
    monkeypatch.setenv("PATH", "%s:/usr/bin:/bin" % fake.dir)
    assert gather.gather(params(tmp_path, "containerd"))["containerd_bin"] == str(fake.path)


def test_runtime_binaries_kubelet_and_cdi_specs_are_reported(tmp_path):
    etc = tmp_path / "etc/containerd"
    write(etc / "config.toml", "version = 3\n")
    runtime = write(tmp_path / "bin/nvidia-container-runtime", "#!/bin/sh\n")
    os.chmod(runtime, 0o755)
    dump = ('version = 3\n[plugins."io.containerd.cri.v1.runtime"]\n  cdi_spec_dirs = ["%s"]\n'
            '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]\n'
            '  BinaryName = "%s"\n  ConfigPath = "/nonexistent/kata.toml"\n' % (tmp_path / "cdi", runtime))
    write(tmp_path / "cdi/good.json", json.dumps({"containerEdits": {"deviceNodes": [{"path": runtime}, {"path": "/nonexistent/dev"}]}}))
    write(tmp_path / "cdi/bad.json", "{not json")
    write(tmp_path / "cdi/README.md", "not a spec")
    write(tmp_path / "kubelet.yaml", "cgroupDriver: systemd\n")
    fake = FakeContainerd(tmp_path, dump=dump)
    result = gather.gather(params(tmp_path, fake.path, cdi_spec_dirs=None))
    assert result["paths"][runtime]["executable"] is True
    assert result["paths"]["/nonexistent/kata.toml"]["exists"] is False
    assert result["kubelet_config"] == {"path": str(tmp_path / "kubelet.yaml"), "exists": True,
                                        "content": "cgroupDriver: systemd\n", "error": None}
    assert result["cdi_spec_dirs_read"] == [str(tmp_path / "cdi")]
    specs = dict((os.path.basename(s["path"]), s) for s in result["cdi_specs"])
    assert sorted(specs) == ["bad.json", "good.json"]
    assert specs["good.json"]["host_paths"] == [{"path": runtime, "exists": True}, {"path": "/nonexistent/dev", "exists": False}]
    assert specs["bad.json"]["error"].startswith("not valid JSON")
    missing = gather.gather(params(tmp_path, fake.path, kubelet_config_path=str(tmp_path / "none.yaml")))
    assert missing["kubelet_config"] == {"path": str(tmp_path / "none.yaml"), "exists": False, "content": None, "error": None}


def fake_crictl(tmp_path, body):
    path = tmp_path / "crictl"
    path.write_text("#!/bin/sh\necho \"$*\" > %s/crictl.args\n%s\n" % (tmp_path, body))
    path.chmod(0o755)
    return str(path)


def test_the_running_view_from_crictl(tmp_path):
    write(tmp_path / "etc/containerd/config.toml", 'version = 3\n[grpc]\n  address = "/run/k3s/containerd.sock"\n')
    info = {"config": {"containerd": {"defaultRuntimeName": "runc", "runtimes": {"runc": {"runtimeType": "io.containerd.runc.v2"}}},
                       "enableCDI": True, "cdiSpecDirs": ["/etc/cdi"]}}
    crictl = fake_crictl(tmp_path, "echo '%s'" % json.dumps(info))
    fake = FakeContainerd(tmp_path, dump='version = 3\n[grpc]\n  address = "/run/k3s/containerd.sock"\n')
    result = gather.gather(params(tmp_path, fake.path, gather_running=True, crictl_bin=crictl))
    running = result["running"]
    assert (running["source"], running["runtimes"], running["enable_cdi"]) == ("crictl", ["runc"], True)
    assert running["endpoint"] == "unix:///run/k3s/containerd.sock"  # the config's [grpc] address
    assert (tmp_path / "crictl.args").read_text().split()[:2] == ["--runtime-endpoint", "unix:///run/k3s/containerd.sock"]


@pytest.mark.parametrize("body, error", [
    ("echo 'connect: connection refused' >&2; exit 1", "exited 1: connect: connection refused"),
    ("echo 'not json'", "printed no usable JSON"),
])
def test_a_crictl_that_gives_no_view_says_why(tmp_path, body, error):
    write(tmp_path / "etc/containerd/config.toml", "version = 3\n")
    fake = FakeContainerd(tmp_path)
    result = gather.gather(params(tmp_path, fake.path, gather_running=True, crictl_bin=fake_crictl(tmp_path, body),
                                  cri_endpoint="unix:///x.sock"))
    assert result["running"]["source"] == "none" and error in result["running"]["crictl_error"]
    assert result["running"]["endpoint"] == "unix:///x.sock"


def test_what_was_already_run_is_not_run_again(tmp_path):
    config = write(tmp_path / "etc/containerd/config.toml", "version = 3\n")
    fake = FakeContainerd(tmp_path, dump="version = 3\n# from the fake\n")
    argv = [str(fake.path), "--config", config, "config", "dump"]
    result = gather.gather(params(tmp_path, fake.path), ran={"dump": (argv, 0, "version = 3\n# ran\n", ""),
                                                             "version_output": V16})
    assert fake.calls() == []
    assert (result["dump"], result["version"], result["version_major"]) == ("version = 3\n# ran\n", "1.6.20~ds1", 1)
    # a dump of another command line is not this gather's: it runs its own
    result = gather.gather(params(tmp_path, fake.path), ran={"dump": (argv[:1] + ["config", "default"], 0, "x", "")})
    assert result["dump"] == "version = 3\n# from the fake\n" and sorted(fake.calls()) == ["--config %s config dump" % config,
                                                                                           "--version"]
    with pytest.raises(gather.GatherError, match="--version' failed"):
        gather.gather(params(tmp_path, fake.path), ran={"version_output": "garbage"})


def test_a_gather_result_has_only_keys_its_return_documents(tmp_path):
    """Every key the node returns, after the action plugin parsed it, is in containerd_config_info's RETURN."""
    from ansible_collections.gpurt.runtime_gate.plugins.modules import containerd_config_info
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
    from tests.lib import module_docs
    import yaml
    etc = tmp_path / "etc/containerd"
    write(etc / "config.toml", 'version = 3\nimports = ["%s/conf.d/*.toml"]\n' % etc)
    write(etc / "conf.d/99-nvidia.toml", 'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
                                         '  runtime_type = "io.containerd.kata.v2"\n')
    fake = FakeContainerd(tmp_path, dump='version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
                                         '  runtime_type = "io.containerd.kata.v2"\n')
    result = gather.gather(params(tmp_path, fake.path, gather_running=True))
    documented = yaml.safe_load(containerd_config_info.RETURN)
    assert module_docs.undocumented_keys(parse_gathered.parse_gathered(dict(result)), documented) == []
    kept = parse_gathered.drop_texts(parse_gathered.parse_gathered(result))
    assert "dump" not in kept and all("content" not in f and "parsed" in f for f in kept["files"])


def test_one_gather_reads_the_processes_once(tmp_path, monkeypatch):
    """The runtime lookup (a bare BinaryName: the daemon's PATH) and the running view (no crictl) both need the
    daemons that use the config: one search of /proc serves both."""
    fake = FakeContainerd(tmp_path, dump='version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
                                         '  runtime_type = "io.containerd.runc.v2"\n'
                                         '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
                                         '    BinaryName = "nvidia-container-runtime"\n')
    write(tmp_path / "etc/containerd/config.toml", "version = 2\n")
    listed = []
    real_listdir = os.listdir

    def listdir(path):
        listed.append(path)
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", listdir)
    result = gather.gather(params(tmp_path, fake.path, gather_running=True))
    assert result["paths"]["nvidia-container-runtime"]["path_from"] is not None
    assert result["running"]["crictl_error"] and "no running containerd daemon" in result["running"]["error"]
    assert listed.count("/proc") == 1

"""Node side of remediation (module_utils/_node_remediation): the normalised dump hash, the gather for a plan,
staging and the write with rollback."""
import glob
import hashlib
import os
import tempfile

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_remediation as cf


def test_the_normalised_dump_hash_ignores_only_the_imports_line():
    a = "version = 3\nimports = ['/tmp/gpurt-stage-x/etc/conf.d/*.toml']\nroot = '/var/lib/containerd'\n"
    b = "version = 3\nimports = ['/etc/conf.d/*.toml']\nroot = '/var/lib/containerd'\n"
    c = "version = 3\nimports = ['/etc/conf.d/*.toml']\nroot = '/other'\n"
    assert cf.normalized_dump_sha256(a) == cf.normalized_dump_sha256(b) != cf.normalized_dump_sha256(c)


def _fake_containerd(tmp_path, dump_text, fail_for=None):
    """A containerd stand-in for the unit tests: prints a fixed dump, fails when --config is fail_for."""
    dump = tmp_path / "dump.toml"
    dump.write_text(dump_text)
    script = tmp_path / "containerd"
    script.write_text('#!/bin/sh\n[ "$1" = "--version" ] && { echo "containerd x v2.1.9 y"; exit 0; }\n'
                      '[ "$2" = "%s" ] && { echo "containerd: boom" >&2; exit 1; }\ncat "%s"\n' % (fail_for or "-", dump))
    script.chmod(0o755)
    return str(script)


def _params(tmp_path, binary, **extra):
    params = dict(containerd_bin=binary, config_path=str(tmp_path / "etc/config.toml"),
                  dropin_dir=str(tmp_path / "etc/conf.d"), dropin_dirs=[str(tmp_path / "etc/conf.d")],
                  kubelet_config_path=str(tmp_path / "kubelet.yaml"), cdi_spec_dirs=[], timeout=10,
                  max_file_bytes=1 << 20, max_dump_bytes=1 << 24, backup_dir=str(tmp_path / "backups"),
                  import_patterns=[], files=[], state_dir=str(tmp_path / "state"))
    params.update(extra)
    return params


def _sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def test_stage_writes_only_below_its_private_dir_and_always_removes_it(tmp_path):
    (tmp_path / "etc/conf.d").mkdir(parents=True)
    (tmp_path / "etc/conf.d/99-nvidia.toml").write_text("version = 3\n")
    binary = _fake_containerd(tmp_path, "version = 3\nimports = []\n")
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "gpurt-stage-*")))
    own = str(tmp_path / "etc/conf.d/zz-gpurt-nvidia.toml")
    result = cf.stage(_params(tmp_path, binary, staged_main='version = 3\nimports = ["@@GPURT_STAGE@@%s/*.toml"]\n'
                              % (tmp_path / "etc/conf.d"), files=[dict(path=own, content="version = 3\n", expect_sha256=None)]))
    assert result["rc"] == 0 and result["normalized_sha256"]
    assert sorted(os.path.basename(m) for m in result["imports"][0]["matches"]) == ["99-nvidia.toml", "zz-gpurt-nvidia.toml"]
    assert result["imports"][0]["matches"][1] == own  # mapped back to the node's path
    assert not os.path.exists(own)
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "gpurt-stage-*"))) == before
    with pytest.raises(cf.FilesError):  # a file outside the drop-in dir is not the role's to stage
        cf.stage(_params(tmp_path, binary, staged_main="", files=[dict(path="/etc/passwd", content="x", expect_sha256=None)]))
    with pytest.raises(Exception):
        cf.stage(_params(tmp_path, str(tmp_path / "missing"), staged_main="version = 3\n"))
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "gpurt-stage-*"))) == before


def test_every_step_refuses_a_file_changed_since_it_was_read(tmp_path):
    (tmp_path / "etc").mkdir()
    main = tmp_path / "etc/config.toml"
    main.write_text("version = 3\n")
    binary = _fake_containerd(tmp_path, "version = 3\n")
    files = [dict(path=str(main), content="version = 3\nimports = []\n", expect_sha256=_sha("version = 2\n"))]
    with pytest.raises(cf.FilesError, match="changed since it was read"):
        cf.stage(_params(tmp_path, binary, staged_main="version = 3\n", files=files))
    with pytest.raises(cf.FilesError, match="changed since it was read"):
        cf.write(_params(tmp_path, binary, files=files, expected_sha256="x"))
    assert main.read_text() == "version = 3\n"


def test_write_puts_every_file_back_when_the_real_load_differs(tmp_path):
    (tmp_path / "etc/conf.d").mkdir(parents=True)
    main = tmp_path / "etc/config.toml"
    main.write_text("# theirs\nversion = 3\n")
    main.chmod(0o640)
    binary = _fake_containerd(tmp_path, "version = 3\nroot = '/x'\n")
    own = tmp_path / "etc/conf.d/zz-gpurt-nvidia.toml"
    files = [dict(path=str(main), content="version = 3\nimports = []\n", expect_sha256=_sha("# theirs\nversion = 3\n")),
             dict(path=str(own), content="version = 3\n", expect_sha256=None)]
    result = cf.write(_params(tmp_path, binary, files=files, expected_sha256="not what it loads"))
    assert result["failed"] and result["restored"], result
    assert "load differently from the staged ones" in result["msg"]
    assert main.read_text() == "# theirs\nversion = 3\n" and oct(main.stat().st_mode & 0o777) == "0o640"
    assert not own.exists()
    assert os.path.isfile(os.path.join(result["backup_dir"], str(main).lstrip("/")))


def test_write_keeps_mode_and_returns_the_gather_of_what_it_wrote(tmp_path):
    (tmp_path / "etc/conf.d").mkdir(parents=True)
    main = tmp_path / "etc/config.toml"
    main.write_text("version = 3\n")
    main.chmod(0o600)
    dump = "version = 3\nroot = '/x'\n"
    binary = _fake_containerd(tmp_path, dump)
    files = [dict(path=str(main), content="version = 3\nimports = []\n", expect_sha256=_sha("version = 3\n"))]
    result = cf.write(_params(tmp_path, binary, files=files, expected_sha256=cf.normalized_dump_sha256(dump)))
    assert not result.get("failed"), result
    assert result["written"] == [str(main)] and result["dump"] == dump
    assert main.read_text() == "version = 3\nimports = []\n" and oct(main.stat().st_mode & 0o777) == "0o600"
    assert not [p for p in os.listdir(tmp_path / "etc") if p.startswith(".gpurt-")]  # no temp file left


def test_write_refuses_backups_an_imports_glob_would_load(tmp_path):
    (tmp_path / "etc").mkdir()
    main = tmp_path / "etc/config.toml"
    main.write_text("version = 3\n")
    binary = _fake_containerd(tmp_path, "version = 3\n")
    files = [dict(path=str(main), content="version = 3\nimports = []\n", expect_sha256=_sha("version = 3\n"))]
    # <backup_dir>/<run dir>/<the main config's path>: one '*' per path segment matches it
    depth = len(str(main).strip("/").split("/"))
    pattern = str(tmp_path / "backups") + "/*" * (1 + depth)
    with pytest.raises(cf.FilesError, match="would load the backups"):
        cf.write(_params(tmp_path, binary, files=files, expected_sha256="x", import_patterns=[pattern]))
    assert main.read_text() == "version = 3\n"


def test_the_gather_after_a_write_runs_no_containerd_command_again(tmp_path):
    """The write loads the written files once; its gather reuses that dump, and the version the gather
    step saw (version_output): one containerd call in all. Without version_output, --version runs once."""
    from tests.lib.fake_containerd import V21, FakeContainerd
    (tmp_path / "etc/conf.d").mkdir(parents=True)
    main = tmp_path / "etc/config.toml"
    main.write_text("version = 3\n")
    dump = "version = 3\nroot = '/x'\n"
    fake = FakeContainerd(tmp_path, dump=dump)
    files = [dict(path=str(main), content="version = 3\nimports = []\n", expect_sha256=_sha("version = 3\n"))]
    result = cf.write(_params(tmp_path, str(fake.path), files=files, expected_sha256=cf.normalized_dump_sha256(dump),
                              version_output=V21))
    assert not result.get("failed"), result
    assert fake.calls() == ["--config %s config dump" % main]
    assert (result["dump"], result["version"], result["version_output"]) == (dump, "2.1.9", V21)
    main.write_text("version = 3\n")
    fake.log.unlink()
    result = cf.write(_params(tmp_path, str(fake.path), files=files, expected_sha256=cf.normalized_dump_sha256(dump)))
    assert sorted(fake.calls()) == ["--config %s config dump" % main, "--version"]


def test_every_step_returns_only_keys_its_return_documents(tmp_path):
    import yaml
    from ansible_collections.gpurt.runtime_gate.plugins.modules import register_runtimes_node
    from tests.lib import module_docs
    from tests.lib.fake_containerd import FakeContainerd
    documented = yaml.safe_load(register_runtimes_node.RETURN)
    (tmp_path / "etc/conf.d").mkdir(parents=True)
    main = tmp_path / "etc/config.toml"
    main.write_text("version = 3\n")
    dump = "version = 3\nimports = []\n"
    fake = FakeContainerd(tmp_path, dump=dump)
    own = str(tmp_path / "etc/conf.d/zz-gpurt-nvidia.toml")
    gathered = cf.gather_for_plan(_params(tmp_path, str(fake.path), migrate="auto", crictl_bin="/nonexistent/crictl"))
    staged = cf.stage(_params(tmp_path, str(fake.path), staged_main="version = 3\n",
                              files=[dict(path=own, content="version = 3\n", expect_sha256=None)]))
    written = cf.write(_params(tmp_path, str(fake.path), files=[dict(path=own, content="version = 3\n", expect_sha256=None)],
                               expected_sha256=staged["normalized_sha256"]))
    failed = cf.write(_params(tmp_path, str(fake.path), files=[dict(path=own, content="version = 3\n# 2\n",
                                                                    expect_sha256=_sha("version = 3\n"))],
                              expected_sha256="not what it loads"))
    assert failed["failed"] is True and "running" in gathered
    for result in (gathered, staged, written, failed):
        assert module_docs.undocumented_keys(result, documented) == []


def test_stage_and_write_load_the_node_files_under_the_memory_limit(tmp_path):
    """The staged and the written files include the node's own drop-ins: their dumps run under
    max_memory_mb (RLIMIT_DATA) as the gather's does, so an import of /dev/zero cannot reach the
    node's OOM killer."""
    (tmp_path / "etc/conf.d").mkdir(parents=True)
    main = tmp_path / "etc/config.toml"
    main.write_text("version = 3\n")
    script = tmp_path / "containerd"
    script.write_text('#!/bin/sh\n[ "$1" = "--version" ] && { echo "containerd x v2.1.9 y"; exit 0; }\n'
                      'echo "version = 3"\necho "# data limit $(ulimit -d)"\n')
    script.chmod(0o755)
    binary = str(script)
    for extra, limit in (({}, 1024 * 1024), ({"max_memory_mb": 256}, 256 * 1024)):
        staged = cf.stage(_params(tmp_path, binary, staged_main="version = 3\n", **extra))
        assert staged["dump"] == "version = 3\n# data limit %d\n" % limit
        files = [dict(path=str(main), content="version = 3\n", expect_sha256=_sha(main.read_text()))]
        written = cf.write(_params(tmp_path, binary, files=files, expected_sha256=staged["normalized_sha256"], **extra))
        assert not written.get("failed"), written
        assert written["dump"] == staged["dump"]
    assert cf.stage(_params(tmp_path, binary, staged_main="version = 3\n", max_memory_mb=0))["dump"] == (
        "version = 3\n# data limit unlimited\n")

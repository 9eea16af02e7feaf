"""_checks/files.py: the config files on disk against what containerd loads: imports that match nothing
(dead_imports_glob), fragments nothing imports (orphan_dropin), sections a version ignores
(ignored_plugin_section), runtimes lost in the merge (file_loaded_drift), drop-in versions, unreadable files,
no config at all, and containerd's load warnings (config_load_warning); orphan_dropin's load evidence:
test_fragment_carry.py."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from tests.lib.check_inputs import (DOCKER, DUMP_21, V1, V2, V3, ctx, file_entry, findings_of, gathered_imports,
                                    gathered_with, ids, loaded, run)
from tests.lib.containerd_stderr import ignored
from tests.lib.fragment_loads import LOADED, with_fragment


# --- imports --------------------------------------------------------------------------------

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


# --- config_load_warning: containerd's load warnings ----------------------------------------

def test_the_check_names_key_and_file_and_leaves_ignored_runtimes_to_ignored_plugin_section():
    v3_old = (
        'version = 3\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "x"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
    )
    lines = [
        ignored(k, V2) for k in ("sandbox_image", "containerd", "containerd runtimes", "containerd runtimes nvidia")
    ]
    dump = DUMP_21.replace("disabled_plugins = ['io.containerd.grpc.v1.cri']\n", "")
    gathered = gathered_with([("/etc/containerd/config.toml", "main", v3_old)], dump, warnings=lines)
    (item,) = findings_of(gathered, "config_load_warning")
    assert item["severity"] == "warning"
    assert item["subject"] == '/etc/containerd/config.toml:plugins."io.containerd.grpc.v1.cri".sandbox_image'
    assert "ignores sandbox_image of plugin io.containerd.grpc.v1.cri" in item["message"]
    assert [
        f["check"] for f in checks.check_node("n1", gathered, [], {})[0] if f["check"] == "ignored_plugin_section"
    ] == ["ignored_plugin_section"]


def test_deprecated_version_1_on_1x_names_the_file():
    line = (
        'level=warning msg="containerd config version `1` has been deprecated and will be removed in containerd '
        'v2.0, please switch to version `2`, see https://github.com/containerd/containerd/blob/main/docs/PLUGINS.md'
        '#version-header"'
    )
    dump = 'disabled_plugins = ["cri"]\nversion = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
    gathered = gathered_with([("/etc/containerd/config.toml", "main", DOCKER)], dump, version=(1, 6), warnings=[line])
    (item,) = findings_of(gathered, "config_load_warning")
    assert item["subject"] == "/etc/containerd/config.toml:version"
    assert "config version 1 is deprecated" in item["message"]


# --- orphan_dropin's load evidence, a generated config's slot ---------------------------------

def unreferenced(path, text, load, loaded_doc=None):
    loaded_doc = LOADED if loaded_doc is None else loaded_doc
    entry = {"path": path, "role": "unreferenced", "content": text, "error": None, "load": load}
    entry["parsed"] = parse_gathered.summarize_file(entry, loaded_doc)
    return entry


PART_V2 = ('version = 2\n[plugins."%s".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
           '  runtime_engine = ""\n  runtime_root = ""\n' % V2)


def gathered_fragments(*files, **extra):
    out = {"loaded": loaded(), "imports": [], "config_path": "/etc/cri/containerd.toml",
           "files": [{"path": "/etc/cri/containerd.toml", "role": "main", "parsed": {"version": 3}}] + list(files)}
    out.update(extra)
    return out


class TestJudgment(object):
    def test_keys_a_migration_drops_are_no_orphan_when_the_load_changes_nothing(self):
        part = unreferenced("/etc/cri/conf.d/10-nvidia.part", PART_V2, {"rc": 0, "dump": toml_codec.dumps(LOADED)})
        assert part["parsed"]["not_carried_count"] == 2  # runtime_engine, runtime_root: never in a 2.x dump
        out = run("orphan_dropin", ctx(gathered_fragments(part)))
        assert ids(out) == [("orphan_dropin", "info", "/etc/cri/conf.d/10-nvidia.part")]
        assert "changes nothing this node loads" in out[0]["message"] and "runtime_engine" in out[0]["message"]
        assert out[0]["evidence"]["load"] == "loaded" and out[0]["evidence"]["would_change"] == []

    def test_a_load_that_changes_the_config_is_an_orphan_naming_the_change(self):
        doc = with_fragment(**{"plugins/%s/containerd/runtimes/nvidia-x/runtime_type" % V3: "io.containerd.runc.v2"})
        part = unreferenced("/etc/containerd/conf.d/99-nvidia.conf", PART_V2.replace("nvidia]", "nvidia-x]"),
                            {"rc": 0, "dump": toml_codec.dumps(doc)})
        out = run("orphan_dropin", ctx(gathered_fragments(part)))
        assert ids(out) == [("orphan_dropin", "error", "/etc/containerd/conf.d/99-nvidia.conf")]
        assert "importing it would change 1 key(s)" in out[0]["message"] and "nvidia-x" in out[0]["message"]
        assert out[0]["evidence"]["would_change_count"] == 1

    def test_no_load_falls_back_to_the_settings_and_says_so(self):
        part = unreferenced("/etc/cri/conf.d/10-nvidia.part", PART_V2, None)
        out = run("orphan_dropin", ctx(gathered_fragments(part)))
        assert ids(out) == [("orphan_dropin", "error", "/etc/cri/conf.d/10-nvidia.part")]
        assert "judged without containerd's load: not loaded by containerd" in out[0]["message"]

    def test_a_loaded_file_naming_it_as_its_input_decides_where_containerd_cannot_load_it(self):
        main = {"path": "/k3s/config.toml", "role": "main", "error": None,
                "content": "# File generated by k3s. DO NOT EDIT. Use config-v3.toml.tmpl instead.\nversion = 3\n"}
        tmpl = {"path": "/k3s/config-v3.toml.tmpl", "role": "unreferenced", "error": None, "content": PART_V2,
                "load": {"rc": 1, "cause": "level=error msg=\"failed to load\""}}
        other = dict(tmpl, path="/k3s/other.toml")
        result = {"dump": toml_codec.dumps(LOADED), "files": [main, tmpl, other]}
        parse_gathered.parse_gathered(result)
        assert main["parsed"]["generated"].startswith("# File generated by k3s")
        assert tmpl["parsed"]["named_by"].startswith("/k3s/config.toml: '# File generated by k3s")
        assert "named_by" not in other["parsed"]
        out = dict((f["subject"], f) for f in run("orphan_dropin", ctx(result)))
        assert out["/k3s/config-v3.toml.tmpl"]["severity"] == "info"
        assert "it is a generator's input: /k3s/config.toml" in out["/k3s/config-v3.toml.tmpl"]["message"]
        assert "containerd refuses the config with it imported" in out["/k3s/config-v3.toml.tmpl"]["message"]
        assert out["/k3s/other.toml"]["severity"] == "error"
        parse_gathered.drop_texts(result)
        assert "load" not in tmpl and tmpl["parsed"]["load"]["state"] == "refused"

    def test_a_fragment_the_settings_test_finds_carried_is_not_loaded_for_nothing(self):
        part = unreferenced("/etc/cri/conf.d/00.part", 'version = 3\n[plugins."%s".containerd.runtimes.runc]\n'
                            '  runtime_type = "io.containerd.runc.v2"\n' % V3, {"rc": 0, "dump": "garbage ="})
        assert part["parsed"]["not_carried_count"] == 0 and "load" not in part["parsed"]
        assert run("orphan_dropin", ctx(gathered_fragments(part))) == []


class TestGeneratedSlot(object):
    def entry(self, generated):
        main = {"path": "/k3s/config.toml", "role": "main", "parsed": {"version": 3}}
        if generated:
            main["parsed"]["generated"] = "# File generated by k3s. DO NOT EDIT."
        return {"loaded": loaded(), "config_path": "/k3s/config.toml", "files": [main], "imports": [
            {"pattern": "/k3s/config-v3.toml.d/*.toml", "resolved": "/k3s/config-v3.toml.d/*.toml", "matches": [],
             "declared_in": "/k3s/config.toml", "dir": "/k3s/config-v3.toml.d", "dir_exists": False}]}

    def test_a_generated_config_s_slot_is_info_until_used(self):
        out = run("dead_imports_glob", ctx(self.entry(True)))
        assert ids(out) == [("dead_imports_glob", "info", "/k3s/config-v3.toml.d/*.toml")]
        assert "is generated (# File generated by k3s. DO NOT EDIT.)" in out[0]["message"]

    def test_a_hand_written_config_s_missing_dir_stays_a_warning(self):
        out = run("dead_imports_glob", ctx(self.entry(False)))
        assert ids(out) == [("dead_imports_glob", "warning", "/k3s/config-v3.toml.d/*.toml")]

"""Plan and proof of the remediation, on gather results built here (no containerd needed)."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _remediation as r
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import toml_edit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec

V2 = "io.containerd.grpc.v1.cri"
V3 = "io.containerd.cri.v1.runtime"
ETC = "/etc/containerd"


def opts(**extra):
    base = dict(config_path=ETC + "/config.toml", dropin_dir=ETC + "/conf.d", backup_dir="/var/backups/gpurt",
                dropin_prefix="zz-", dropin_suffix=".toml", dropin_glob="*.toml", migrate="auto",
                runtimes=[{"name": "nvidia", "binary_name": "/usr/bin/nvidia-container-runtime"}], require_binaries=False)
    base.update(extra)
    return base


def dump(major, runtimes, default="runc", **cri):
    plugin = V2 if major < 2 else V3
    doc = {"version": 2 if major < 2 else 3, "imports": [],
           "plugins": {plugin: dict(cri, containerd={"default_runtime_name": default, "runtimes": runtimes})}}
    return toml_codec.dumps(doc)


RUNC = {"runtime_type": "io.containerd.runc.v2"}
NVIDIA = {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": "/usr/bin/nvidia-container-runtime"}}


def gathered(major, main_text, loaded, files=(), minor=1, imports=None):
    """A gather result: main config text (None: absent), the loaded dump, more files [(path, text, role)]."""
    entries = [{"path": ETC + "/config.toml", "role": "main", "content": main_text,
                "error": None if main_text is not None else "file does not exist"}]
    entries += [{"path": p, "role": role, "content": t, "error": None} for p, t, role in files]
    return {"version_major": major, "version_minor": minor, "version": "%d.%d.0" % (major, minor),
            "config_path": ETC + "/config.toml", "config_exists": main_text is not None, "files": entries,
            "file_states": dict((e["path"], {"exists": True, "sha256": "sha-" + e["path"]}) for e in entries
                                if e["content"] is not None),
            "dump": loaded, "dump_warnings": [], "default_text": dump(major, {"runc": RUNC}) if major < 2 else
            'version = 3\n', "imports": imports or [], "paths": {}, "migration": None, "kubelet_config": {}}


@pytest.mark.parametrize("change, message", [
    (dict(config_path="etc/containerd/config.toml"), "config_path must be an absolute path"),
    (dict(config_path="/etc/containerd/[a]/config.toml"), "without glob characters"),
    (dict(dropin_prefix="a/b"), "must not contain '/'"),
    (dict(dropin_suffix=".."), "must not contain"),
    (dict(dropin_glob="*.conf"), "does not match the drop-in names"),
    (dict(backup_dir=ETC + "/backups"), "must be outside"),
    (dict(backup_dir="/etc"), "must be outside"),
    (dict(migrate="sometimes"), "migrate must be"),
])
def test_bad_options_are_refused(change, message):
    with pytest.raises(r.Refusal, match=message.replace("[", r"\[")):
        r.check_options(opts(**change))


def test_runtime_specs_are_checked_and_completed():
    with pytest.raises(r.Refusal, match="not a DNS label"):
        r.normalize_runtimes([{"name": "Nvidia"}], None)
    with pytest.raises(r.Refusal, match="runc is kept"):
        r.normalize_runtimes([{"name": "runc"}], None)
    with pytest.raises(r.Refusal, match="listed twice"):
        r.normalize_runtimes([{"name": "a"}, {"name": "a"}], None)
    specs = r.normalize_runtimes([{"name": "nvidia", "binary_name": "/b"},
                                  {"name": "kata", "runtime_type": "io.containerd.kata.v2"}], True)
    assert specs[0]["table"] == {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": "/b", "SystemdCgroup": True}}
    assert specs[1]["table"] == {"runtime_type": "io.containerd.kata.v2"}  # SystemdCgroup is a runc option


KUBELET = "/var/lib/kubelet/config.yaml"


@pytest.mark.parametrize("kubelet, systemd", [
    ({}, None),  # the node reported none
    ({"path": KUBELET, "exists": False, "content": None, "error": None}, None),
    ({"path": KUBELET, "exists": True, "content": None, "error": "permission denied"}, None),
    ({"path": KUBELET, "exists": True, "content": "kind: KubeletConfiguration\ncgroupDriver: systemd\n"}, True),
    ({"path": KUBELET, "exists": True, "content": "kind: KubeletConfiguration\ncgroupDriver: cgroupfs\n"}, False),
    # the kubelet's own default, as the audit's cgroup_driver check reads it
    ({"path": KUBELET, "exists": True, "content": "kind: KubeletConfiguration\n"}, False),
    ({"path": KUBELET, "exists": True, "content": ""}, False),
])
def test_systemd_cgroup_follows_the_kubelet_as_the_audit_reads_it(kubelet, systemd):
    assert r.kubelet_systemd_cgroup({"kubelet_config": kubelet}) is systemd


def test_systemd_cgroup_comes_from_the_runtime_then_the_option_then_the_kubelet():
    asked = []

    def kubelet():
        asked.append(True)
        return True
    runtimes = [{"name": "own", "binary_name": "/b", "systemd_cgroup": False}, {"name": "plain", "binary_name": "/b"},
                {"name": "kata", "runtime_type": "io.containerd.kata.v2"}]
    specs = r.normalize_runtimes(runtimes, None, kubelet)
    assert [(s["table"].get("options") or {}).get("SystemdCgroup") for s in specs] == [False, True, None]
    assert len(asked) == 1  # only for the runc-type runtime that says nothing itself
    specs = r.normalize_runtimes(runtimes, False, kubelet)
    assert [(s["table"].get("options") or {}).get("SystemdCgroup") for s in specs] == [False, False, None]
    assert len(asked) == 1


def test_the_kubelet_is_asked_once_for_all_the_runtimes_that_say_nothing():
    asked = []

    def kubelet():
        asked.append(True)
        return False
    runtimes = [{"name": "nvidia", "binary_name": "/b"}, {"name": "nvidia-cdi", "binary_name": "/c", "cdi": True}]
    specs = r.normalize_runtimes(runtimes, None, kubelet)
    assert [s["table"]["options"]["SystemdCgroup"] for s in specs] == [False, False]
    assert len(asked) == 1


@pytest.mark.parametrize("content, cause", [
    ("cgroupDriver: Systemd\n", "has cgroupDriver 'Systemd', neither systemd nor cgroupfs"),
    ("cgroupDriver: [systemd\n", "is not YAML"),
    ("- systemd\n", "is not a mapping but list"),
])
def test_a_kubelet_config_that_names_no_known_driver_is_refused_not_guessed(content, cause):
    g = gathered(2, 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n', dump(2, {"runc": RUNC}))
    g["kubelet_config"] = {"path": KUBELET, "exists": True, "content": content, "error": None}
    said = "set systemd_cgroup to say it"  # the module's option; the role names its variable
    with pytest.raises(r.Refusal, match=said) as refused:
        r.plan(g, opts())
    assert cause in str(refused.value) and KUBELET in str(refused.value)
    # the option, or each runc-type runtime's own, says what the kubelet config could not
    assert r.plan(g, opts(systemd_cgroup=True))["writes"]
    assert r.plan(g, opts(runtimes=[{"name": "nvidia", "binary_name": "/b", "systemd_cgroup": False}]))["writes"]
    # a runtime that is not runc-type has no SystemdCgroup to set
    assert r.plan(g, opts(runtimes=[{"name": "kata", "runtime_type": "io.containerd.kata.v2"}]))["writes"]


def test_nothing_is_planned_while_the_runtime_is_loaded_as_wanted():
    g = gathered(2, 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n', dump(2, {"runc": RUNC, "nvidia": NVIDIA}))
    plan = r.plan(g, opts())
    assert plan["noop"] and plan["writes"] == []
    assert plan["notes"] == ["nvidia is already loaded as wanted; nothing to write for it"]


def test_2x_plans_one_drop_in_per_runtime_at_the_main_files_version_and_an_imports_entry():
    g = gathered(2, "# kept comment\nversion = 2\n", dump(2, {"runc": RUNC}))
    plan = r.plan(g, opts())
    paths = [w["path"] for w in plan["writes"]]
    assert paths == [ETC + "/config.toml", ETC + "/conf.d/zz-gpurt-nvidia.toml"]
    main, dropin = plan["writes"][0]["content"], plan["writes"][1]["content"]
    assert main.startswith("# kept comment\nversion = 2\n") and 'imports = ["/etc/containerd/conf.d/*.toml"]' in main
    assert toml_codec.loads(dropin) == {"version": 2, "plugins": {V2: {"containerd": {"runtimes": {"nvidia": NVIDIA}}}}}
    assert dropin.startswith(r.OWN_MARKER)
    assert plan["staged_main"].count("@@GPURT_STAGE@@/etc/containerd/conf.d/*.toml") == 1


def test_a_file_of_another_tool_at_the_role_name_is_refused():
    g = gathered(2, 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n', dump(2, {"runc": RUNC}),
                 files=[(ETC + "/conf.d/zz-gpurt-nvidia.toml", "version = 3\n", "imported")])
    with pytest.raises(r.Refusal, match="is not a file of this role"):
        r.plan(g, opts())


def test_a_generated_main_config_is_left_to_the_evidence_and_refused_when_its_input_does_not_exist(tmp_path):
    """The plan does not judge ownership by a path or a tool's name; the ownership gate does, from the
    evidence: k3s' header names config.toml.tmpl, which does not exist, so the host is refused with k3s'
    documented way (edit_generated writes the file anyway)."""
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _ownership as own
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import ownership_gate
    text = "# File generated by k3s. DO NOT EDIT. Use config.toml.tmpl instead.\nversion = 2\n"
    plan = r.plan(gathered(1, text, dump(1, {"runc": RUNC}), minor=7), opts())
    assert not plan["noop"]
    config = tmp_path / "etc" / "containerd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(text)
    g = gathered(1, text, dump(1, {"runc": RUNC}), minor=7)
    g["config_path"] = str(config)
    for item in plan["writes"]:
        item["path"] = str(config) if item["path"] == "/etc/containerd/config.toml" else item["path"]
    plan["writes"] = [w for w in plan["writes"] if w["path"] == str(config)]
    found = {"ownership": own.gather([str(config)], root=str(tmp_path), mountinfo=""), "inputs": {}}
    verdict = ownership_gate.judge(plan, g, found)
    assert verdict["refusals"] == [] and verdict["template"][1] == str(config) + ".tmpl"
    for entry in g["files"]:
        entry["path"] = str(config) if entry["path"] == "/etc/containerd/config.toml" else entry["path"]
    # the advice names only what this node reads: the template k3s reads for a version 2 file, never a drop-in
    # directory the generated file does not import (issue 37)
    with pytest.raises(r.Refusal, match="config.toml.tmpl, does not exist; the documented way: /etc/containerd/"
                       "config.toml.tmpl beside the generated file \\(k3s reads it for a version 2 config") as refused:
        ownership_gate.through_template(plan, g, found, *verdict["template"])
    assert "config.toml.d" not in str(refused.value)
    assert ownership_gate.judge(plan, g, found, edit_generated=True)["template"] is None


def test_1x_carries_the_key_by_key_merge_of_every_files_cri_section():
    """containerd 1.x takes the whole section from the last file; the role's drop-in carries what 2.x would load:
    the later file's keys over the earlier one's, the earlier one's other keys kept, and runc (the default) back."""
    main = ('version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n[plugins."%s"]\n  sandbox_image = "main"\n'
            '  enable_selinux = true\n' % V2)
    kata = ('version = 2\n[plugins."%s"]\n  sandbox_image = "kata"\n[plugins."%s".containerd.runtimes.kata]\n'
            '  runtime_type = "io.containerd.kata.v2"\n' % (V2, V2))
    g = gathered(1, main, dump(1, {"kata": {"runtime_type": "io.containerd.kata.v2"}}, sandbox_image="kata"), minor=7,
                 files=[(ETC + "/conf.d/50-kata.toml", kata, "imported")],
                 imports=[{"pattern": ETC + "/conf.d/*.toml", "resolved": ETC + "/conf.d/*.toml",
                           "declared_in": ETC + "/config.toml", "matches": [ETC + "/conf.d/50-kata.toml"]}])
    plan = r.plan(g, opts())
    [write] = plan["writes"]
    assert write["path"] == ETC + "/conf.d/zz-gpurt_cri.toml"
    section = toml_codec.loads(write["content"])["plugins"][V2]
    assert section["sandbox_image"] == "kata" and section["enable_selinux"] is True
    assert set(section["containerd"]["runtimes"]) == {"kata", "nvidia", "runc"}
    # the keys the drop-in pins are named in the notes (the report keeps them) and in the plan (issue 37)
    [pins] = [n for n in plan["notes"] if n.startswith("pins: ")]
    assert "50-kata.toml" in pins and 'in [plugins."io.containerd.grpc.v1.cri"]: ' in pins and "sandbox_image" in pins
    assert 'plugins."io.containerd.grpc.v1.cri".sandbox_image' in plan["pinned"]["keys"]
    assert 'plugins."io.containerd.grpc.v1.cri".enable_selinux' in plan["pinned"]["keys"]
    assert not [k for k in plan["pinned"]["keys"] if ".runtimes.nvidia" in k], plan["pinned"]
    assert plan["pinned"]["from"] == [ETC + "/config.toml", ETC + "/conf.d/50-kata.toml"]


def test_1x_refuses_when_a_later_file_would_replace_the_section_again():
    main = 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
    later = 'version = 2\n[plugins."%s"]\n  sandbox_image = "x"\n' % V2
    g = gathered(1, main, dump(1, {"runc": RUNC}), minor=7,
                 files=[(ETC + "/conf.d/zzz-late.toml", later, "imported")],
                 imports=[{"pattern": ETC + "/conf.d/*.toml", "resolved": ETC + "/conf.d/*.toml",
                           "declared_in": ETC + "/config.toml", "matches": [ETC + "/conf.d/zzz-late.toml"]}])
    with pytest.raises(r.Refusal, match="zzz-late.toml after the role's"):
        r.plan(g, opts())


def test_the_proof_refuses_a_change_nobody_asked_for_and_prints_it():
    g = gathered(2, 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n', dump(2, {"runc": RUNC}, enable_cdi=True))
    plan = r.plan(g, opts())
    staged = {"rc": 0, "dump": dump(2, {"runc": RUNC, "nvidia": dict(NVIDIA, privileged_without_host_devices=False)},
                                    enable_cdi=False),
              "imports": [{"matches": [ETC + "/conf.d/zz-gpurt-nvidia.toml"]}], "dump_warnings": []}
    problems, changes = r.prove(plan, g, staged)
    assert 'plugins."io.containerd.cri.v1.runtime".enable_cdi: true -> false' in [p.strip() for p in problems]
    assert not any("nvidia" in p for p in problems)  # the new runtime's whole table was asked for
    problems, _changes = r.prove(plan, g, staged, accept=['plugins."io.containerd.cri.v1.runtime".enable_cdi'])
    assert problems == []
    problems, _changes = r.prove(plan, g, dict(staged, imports=[{"matches": []}]),
                                 accept=['plugins."io.containerd.cri.v1.runtime".*'])
    assert problems == ["no imports entry loads /etc/containerd/conf.d/zz-gpurt-nvidia.toml"]


def test_the_proof_names_the_file_that_wins_over_the_roles():
    other = ('version = 3\n[plugins."%s".containerd.runtimes.nvidia.options]\n  BinaryName = "/other"\n' % V3)
    g = gathered(2, 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n',
                 dump(2, {"runc": RUNC, "nvidia": {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": "/other"}}}),
                 files=[(ETC + "/conf.d/zzz-nvidia.toml", other, "imported")])
    plan = r.plan(g, opts())
    staged = {"rc": 0, "dump": g["dump"], "dump_warnings": [],
              "imports": [{"matches": [ETC + "/conf.d/zz-gpurt-nvidia.toml"]}]}
    problems, _changes = r.prove(plan, g, staged)
    assert problems == ['plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options.BinaryName would load as '
                        '"/other", not "/usr/bin/nvidia-container-runtime" (also set in /etc/containerd/conf.d/zzz-nvidia.toml, '
                        'which containerd merges after the role\'s file)']


def test_the_proof_fails_closed_when_containerd_refuses_the_staged_files():
    g = gathered(2, "version = 3\n", dump(2, {"runc": RUNC}))
    plan = r.plan(g, opts())
    problems, changes = r.prove(plan, g, {"rc": 1, "dump": None, "stderr_tail": "containerd: bad"})
    assert problems == ["containerd refuses the proposed files: containerd: bad"] and changes == []


def test_the_default_runtime_is_kept_unless_asked_and_then_needs_consent():
    loaded = dump(2, {"runc": RUNC, "nvidia": NVIDIA}, default="nvidia")
    g = gathered(2, 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml"]\n', loaded)
    assert r.plan(g, opts())["noop"]  # an EKS-style nvidia default stays
    plan = r.plan(g, opts(default_runtime_name="runc"))
    assert plan["wanted_default"] == "runc" and plan["writes"][0]["path"].endswith("zz-gpurt_cri.toml")
    with pytest.raises(r.Refusal, match="allow_non_runc_default"):
        r.plan(gathered(2, "version = 3\n", dump(2, {"runc": RUNC, "nvidia": NVIDIA})), opts(default_runtime_name="nvidia"))


def test_the_main_edit_keeps_everything_but_the_new_entry():
    text = '# head\nversion = 2  # v\nroot = "/r"\n\n[grpc]\n  address = "/s"  # sock\n'
    new, doc = toml_edit.edit_main(text, toml_codec.loads(text), add_import="/etc/containerd/conf.d/*.toml")
    assert new.replace('imports = ["/etc/containerd/conf.d/*.toml"]\n', "") == text
    assert doc["imports"] == ["/etc/containerd/conf.d/*.toml"]


def test_unreadable_or_unknown_main_configs_are_refused():
    g = gathered(1, None, dump(1, {"runc": RUNC}), minor=7)
    g["config_exists"] = True
    g["files"][0]["error"] = "not UTF-8 text (bad byte at offset 31)"
    with pytest.raises(r.Refusal, match="cannot be read as text"):
        r.plan(g, opts())
    with pytest.raises(r.Refusal, match="names plugin 'nosuch', which this containerd knows under no URI"):
        r.plan(gathered(1, '[plugins.nosuch]\n  x = 1\n', dump(1, {"runc": RUNC}), minor=7), opts())
    with pytest.raises(r.Refusal, match="io.containerd.cri.v1.images which containerd 1.x has no version 2 key"):
        r.plan(gathered(1, 'version = 3\n[plugins."io.containerd.cri.v1.images"]\n  use_local_image_pull = true\n',
                        dump(1, {"runc": RUNC}), minor=6), opts())


def test_a_main_config_the_node_ignores_part_of_is_converted_to_what_it_reads():
    """ignored_plugin_section closed: version 1 on 1.7 (plugin ids), version 3 on 1.6 (cri.v1.* folded back into one
    io.containerd.grpc.v1.cri); the keys the file declares are what the proof allows to change."""
    v1 = '[plugins.cri]\n  sandbox_image = "x"\n'
    plan = r.plan(gathered(1, v1, dump(1, {"runc": RUNC}), minor=7), opts())
    main = toml_codec.loads(plan["writes"][0]["content"])
    assert main["version"] == 2 and main["plugins"] == {V2: {"sandbox_image": "x"}}
    assert ("plugins", V2, "sandbox_image") in [tuple(p) for p in plan["allowed"]]
    assert any("converted to version 2" in n for n in plan["warnings"])
    v3 = ('version = 3\n[plugins."io.containerd.cri.v1.images".pinned_images]\n  sandbox = "p"\n'
          '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n'
          '[plugins."io.containerd.grpc.v1.cri"]\n  stream_server_port = "0"\n')
    plan = r.plan(gathered(1, v3, dump(1, {"runc": RUNC}), minor=6), opts())
    main = toml_codec.loads(plan["writes"][0]["content"])
    assert main["version"] == 2 and set(main["plugins"]) == {V2}
    assert main["plugins"][V2] == {"sandbox_image": "p", "stream_server_port": "0",
                                   "containerd": {"runtimes": {"runc": {"options": {"SystemdCgroup": True}}}}}
    [cri] = [w for w in plan["writes"] if w["path"].endswith("zz-gpurt_cri.toml")]
    carried = toml_codec.loads(cri["content"])["plugins"][V2]
    assert carried["sandbox_image"] == "p" and carried["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"]


@pytest.mark.parametrize("driver, comes_back", [(None, True), ("systemd", True), ("cgroupfs", False)])
def test_declared_cgroup_is_announced_or_kept(driver, comes_back):
    """A conversion brings back runc's declared SystemdCgroup (true; the node loaded false) unless the
    kubelet's cgroupDriver contradicts it; a change is named as disruptive, never as 'not changed'."""
    v3 = ('version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]\n'
          '  SystemdCgroup = true\n')
    g = gathered(1, v3, dump(1, {"runc": RUNC}), minor=6)
    if driver:
        g["kubelet_config"] = {"path": KUBELET, "exists": True,
                               "content": "kind: KubeletConfiguration\ncgroupDriver: %s\n" % driver}
    plan = r.plan(g, opts())
    for write in plan["writes"]:
        runc = toml_codec.loads(write["content"])["plugins"][V2]["containerd"]["runtimes"]["runc"]
        assert runc["options"]["SystemdCgroup"] is comes_back, write["path"]
    said = " ".join(plan["warnings"] + plan.get("notes", []))
    if comes_back:
        assert plan["disruptive"] == ["SystemdCgroup of runc changes"]
        assert "SystemdCgroup of runc changes from false to true as the files declare it" in said
        assert ("as the kubelet's cgroupDriver asks" in said) is bool(driver)
        assert "not changed: SystemdCgroup" not in said
    else:
        assert plan["disruptive"] == []
        assert "not changed: SystemdCgroup" not in said  # loaded false agrees with cgroupfs


def test_the_conversions_move_each_cri_key_where_the_node_reads_it():
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import convert
    v3 = {"version": 3, "plugins": {V2: {"sandbox_image": "s", "stream_server_port": "1",
                                         "containerd": {"snapshotter": "o", "runtimes": {"n": {"runtime_type": "t"}}}}}}
    assert convert.needs_conversion(v3, 2).startswith("version 3 with CRI keys under the old plugin name")
    moved = convert.old_name_to_v3(v3, "f")
    assert moved["plugins"] == {V2: {"stream_server_port": "1"},
                                "io.containerd.cri.v1.images": {"pinned_images": {"sandbox": "s"}, "snapshotter": "o"},
                                "io.containerd.cri.v1.runtime": {"containerd": {"runtimes": {"n": {"runtime_type": "t"}}}}}
    assert convert.v3_to_v2(moved, "f")["plugins"] == v3["plugins"]  # the two maps are each other's inverse
    assert convert.needs_conversion({"version": 2, "plugins": {V2: {}}}, 1) is None
    assert convert.needs_conversion({"version": 3, "plugins": {V2: {"stream_server_port": "1"}}}, 2) is None
    v1 = {"disabled_plugins": ["restart"], "plugins": {"cri": {"x": 1}}}
    out = convert.v1_to_v2(v1, {"io.containerd.internal.v1.restart", V2}, "f")
    assert out == {"version": 2, "disabled_plugins": ["io.containerd.internal.v1.restart"], "plugins": {V2: {"x": 1}}}


def test_a_restart_that_did_not_happen_is_pending_on_the_running_view():
    specs = r.normalize_runtimes([{"name": "nvidia", "binary_name": "/usr/bin/nvidia-container-runtime"}], None)
    own = ETC + "/conf.d/zz-gpurt-nvidia.toml"
    g = gathered(2, "version = 3\n", dump(2, {"runc": RUNC, "nvidia": NVIDIA}),
                 files=[(own, r.OWN_MARKER + "\nversion = 3\n", "imported"), (ETC + "/conf.d/99-x.toml", "", "imported")])
    g["running"] = {"source": "crictl", "runtimes": ["runc"], "runtime_details": {"runc": {}}}
    assert "nvidia is not running" in r.restart_pending(g, specs, opts())
    g["running"] = {"source": "crictl", "runtimes": ["nvidia", "runc"],
                    "runtime_details": {"nvidia": {"binary_name": "/old/nvidia"}}}
    assert "nvidia runs /old/nvidia, not /usr/bin/nvidia-container-runtime" in r.restart_pending(g, specs, opts())
    g["running"]["runtime_details"]["nvidia"]["binary_name"] = "/usr/bin/nvidia-container-runtime"
    assert r.restart_pending(g, specs, opts()) is None
    # Without crictl: the daemon's start against the role's own drop-ins, never against other files.
    g["running"] = {"source": "process", "daemon_started": 1000.0}
    g["file_states"][own]["mtime"] = 900.0
    g["file_states"][ETC + "/conf.d/99-x.toml"]["mtime"] = 5000.0
    assert r.restart_pending(g, specs, opts()) is None
    g["file_states"][own]["mtime"] = 1100.0
    assert "did not happen" in r.restart_pending(g, specs, opts())
    g["running"] = {"source": "none"}
    assert r.restart_pending(g, specs, opts()) is None


def test_the_loaded_diff_shows_changed_keys_not_the_defaults_of_an_added_runtime():
    """Issue 26 item 2: --diff showed ~30 lines of containerd's defaults per node for two added runtimes."""
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import toml_edit
    absent = toml_edit.ABSENT
    runtime = ("plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", "nvidia")
    changes = [(runtime + ("runtime_type",), absent, "io.containerd.runc.v2"),
               (runtime + ("options", "BinaryName"), absent, "/usr/bin/nvidia-container-runtime"),
               (runtime + ("cni_conf_dir",), absent, ""), (runtime + ("cni_max_conf_num",), absent, 0),
               (runtime + ("pod_annotations",), absent, []),
               (runtime + ("privileged_without_host_devices",), absent, False),
               (("plugins", "io.containerd.grpc.v1.cri", "enable_cdi"), True, False),
               (("plugins", "io.containerd.grpc.v1.cri", "sandbox_image"), "pause:3.9", "")]
    diff = toml_edit.loaded_diff(changes)
    after = diff["after"].splitlines()
    assert len(after) == 5 and after[-1].startswith("# and 4 key(s)"), after
    assert not any("cni_conf_dir" in line or "pod_annotations" in line for line in after)
    # a real change to an empty or false value is kept, before and after
    assert 'enable_cdi = false' in diff["after"] and 'sandbox_image = ""' in diff["after"]
    assert diff["before"].count("\n") == 2

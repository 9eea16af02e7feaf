"""Every audit check on the releases that write config version 4 (2.3 and 2.4; single-quoted dumps):
one node per check (named -23 on both), loaded by the real binary of the release and judged by the
real `ansible-playbook audit.yml --check`; the refusal of a drop-in above the root's version on 2.3.4,
the last release that refuses it; plus the plugin-name table of containerd_config measured against
the real binaries of all six releases.

restart_pending on 2.x runs against a real daemon in test_running_view.py. file_loaded_drift has
no 2.x cause left (2.x merges key by key; the mixed plugin names are ignored_plugin_section): it
runs here and finds nothing.
"""
import itertools
import json
from functools import partial
import os
import subprocess
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from tests.integration.test_audit_checks import (
    CDI_LABEL, DROPINS, KATA_LABEL, KUBELET_SYSTEMD, NV, RC_CRUN, RC_KATA, RC_OVERHEAD, RC_TYPO, RUNTIMECLASSES, V1, V2, V3,
    config, good_v3, runtime, setup_cdi_disabled, setup_cdi_stale, setup_dev_zero_import, setup_dropin_above_root,
    setup_kata_shim, setup_missing_handler, setup_mixed_v2, setup_no_config, setup_orphan, setup_plain_v3, setup_unreadable,
    snapshot)
from tests.integration import test_audit_checks as lab21
from tests.lib import ansible_run, containerd_bins
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration

PLAYBOOK = os.path.join(ansible_run.REPO, "playbooks", "audit.yml")
# The releases whose `config default` writes version 4.
RELEASES = ("2.3", "2.4")


def plain(n, **kw):
    setup_plain_v3(n, version=4, **kw)


def setup_healthy(n):
    lab21.setup_healthy(n, version=4)
    n.write("etc/containerd/conf.d/60-extra.toml", "version = 4\n" + runtime(V3, "nvidia-extra", NV))


def setup_dead_glob(n):
    plain(n, imports=[DROPINS])
    os.makedirs(n.path("etc/containerd/conf.d"))


def setup_no_imports(n):
    # no imports line: 2.3.4 dumps imports = ['/etc/containerd/conf.d/*.toml'] anyway, and loads nothing
    plain(n)
    n.write("etc/containerd/conf.d/99-nvidia.toml", "version = 4\n" + runtime(V3, "nvidia-dropin", NV))


def setup_v3_oldname(n):
    # measured: 2.3 migrates a version 3 file, the old plugin name included: no finding
    n.write("etc/containerd/config.toml", config(3, V2, [runtime(V2, "runc"), runtime(V2, "nvidia", NV)]))
    n.runtime_binary()
    n.write("var/lib/kubelet/config.yaml", KUBELET_SYSTEMD)


def setup_v1(n):
    # measured: 2.3 migrates a version 1 file (2.1 drops its runtimes)
    n.write("etc/containerd/config.toml", config(1, V1, [runtime(V1, "nvidia", NV)], cdi=None, default=None))
    n.runtime_binary()


def setup_docker(n):
    # Docker's containerd.io package's config (disabled_plugins = ["cri"]), kept on a node made a worker
    n.write("etc/containerd/config.toml", '#   Copyright 2018-2022 Docker Inc.\n\ndisabled_plugins = ["cri"]\n')


def setup_ignored_keys(n):
    # kind's and many guides' version 2 keys that 2.x no longer has: loaded without them, one warning line each
    n.write("etc/containerd/config.toml", config(2, V2, [runtime(V2, "runc"), runtime(V2, "nvidia", NV)], cdi=None)
            .replace('[plugins."%s"]\n' % V2, '[plugins."%s"]\n  tolerate_missing_hugepages_controller = true\n' % V2)
            + '[plugins."%s".registry.configs."registry.example.com".tls]\n  insecure_skip_verify = true\n' % V2)
    n.runtime_binary()
    n.write("var/lib/kubelet/config.yaml", KUBELET_SYSTEMD)


NODES = {
    "healthy-23": (setup_healthy, {"gpurt_node_labels": CDI_LABEL}),
    "docker-23": (setup_docker, {}),
    "ignored-keys-23": (setup_ignored_keys, {}),
    "missing-handler-23": (partial(setup_missing_handler, version=4), {"gpurt_node_labels": {"gpurt.test/typo": "true"}}),
    "crun-23": (plain, {"gpurt_node_labels": {"gpurt.test/crun": "true"}}),
    "default-not-loaded-23": (lambda n: plain(n, default="crun"), {}),
    "blast-radius-23": (lambda n: plain(n, default="nvidia"), {}),
    "dead-glob-23": (setup_dead_glob, {}),
    "orphan-23": (partial(setup_orphan, version=4), {}),
    "no-imports-23": (setup_no_imports, {}),
    "v4-oldname-23": (lambda n: plain(n, runtimes=[runtime(V3, "runc"), runtime(V2, "nvidia", NV)]), {}),
    "v3-oldname-23": (setup_v3_oldname, {}),
    "v1-23": (setup_v1, {}),
    "mixed-v2-23": (setup_mixed_v2, {}),
    "runtime-binary-23": (lambda n: n.write("etc/containerd/config.toml", good_v3(version=4)), {}),
    "kata-23": (partial(setup_kata_shim, version=4), {"gpurt_node_labels": KATA_LABEL}),
    "cgroup-23": (lambda n: plain(n, runtimes=[runtime(V3, "runc"), runtime(V3, "nvidia", NV, systemd=False)]), {}),
    "cdi-disabled-23": (partial(setup_cdi_disabled, version=4), {"gpurt_node_labels": CDI_LABEL}),
    "cdi-stale-23": (partial(setup_cdi_stale, version=4), {}),
    "overhead-23": (plain, {"gpurt_node_labels": {"gpurt.test/overhead": "true"}, "gpurt_node_allocatable": {"cpu": "1"}}),
    "pool-a-23": (plain, {}),
    "pool-b-23": (lambda n: plain(n, runtimes=[runtime(V3, "runc")]), {}),
    "unreadable-23": (partial(setup_unreadable, version=4), {}),
    # the GPU Operator's toolkit on 2.3 with a version 2 root writes a version 4 drop-in: 2.3.4 exits 1
    # (the refused-2.3.4 node), 2.3.7 and 2.4.2 load it
    "dropin-above-root-23": (partial(setup_dropin_above_root, dropin_version=4), {}),
    "no-config-23": (setup_no_config, {}),
    "dev-zero-23": (partial(setup_dev_zero_import, version=4), {}),
}
GROUPS = {"gpu_pool_23": ["pool-a-23", "pool-b-23"]}


@pytest.fixture(scope="module", params=RELEASES)
def lab(request, tmp_path_factory):
    release = request.param
    base = tmp_path_factory.mktemp("audit-%s" % release)
    nodes, hosts = {}, {}
    on_release = dict((name, (setup, extra, release)) for name, (setup, extra) in NODES.items())
    if release == "2.3":
        on_release["refused-2.3.4"] = (partial(setup_dropin_above_root, dropin_version=4), {},
                                       containerd_bins.REFUSING_RELEASE)
    for name, (setup, extra, version) in sorted(on_release.items()):
        node = Node(base / "nodes", name, version)
        setup(node)
        nodes[name] = node
        hosts[name] = dict(node.host_vars(gpurt_cdi_spec_dirs=[node.path("etc/cdi")]), **extra)
    manifests = base / "runtimeclasses"
    (manifests / "base").mkdir(parents=True)
    (manifests / "10-nvidia.yaml").write_text(RUNTIMECLASSES)
    (manifests / "20-overhead.yaml").write_text(RC_OVERHEAD)
    (manifests / "30-typo.yaml").write_text(RC_TYPO)
    (manifests / "base" / "crun.yaml").write_text(RC_CRUN)
    (manifests / "base" / "kata.yaml").write_text(RC_KATA)
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts, group_vars={"gpurt_node_labels": {}},
                                            groups=GROUPS)
    before = snapshot(str(base / "nodes"))
    run = ansible_run.playbook(PLAYBOOK, inventory, {
        "gpurt_runtimeclasses_src": str(manifests), "gpurt_report_dir": str(base / "report"),
        "gpurt_pod_requests": {"cpu": "900m"}}, check=True, extra_env={"ANSIBLE_FORKS": "8"}, timeout=600)
    after = snapshot(str(base / "nodes"))
    with open(str(base / "report" / "audit.json")) as handle:
        report = json.load(handle)
    return {"nodes": nodes, "run": run, "report": report, "base": base, "before": before, "after": after,
            "release": release}


def findings(lab, name):
    return lab21.findings(lab["report"], name)


def checks_of(lab, name):
    return lab21.checks_of(lab["report"], name)


def only(lab, name, check):
    return lab21.only(lab["report"], name, check)


dumped = lab21.dumped


def test_the_run_fails_changes_nothing_and_every_node_is_checked(lab):
    run, report = lab["run"], lab["report"]
    assert run.rc == 2, run
    assert lab["before"] == lab["after"]
    assert run.changed() == 0
    assert report["summary"]["not_checked"] == 0
    for name, entry in report["nodes"].items():
        assert entry["containerd_version"] == containerd_bins.full_version(lab["nodes"][name].binary), name
        assert entry["containerd_version"].startswith(lab["release"] + ".") or name == "refused-2.3.4", name
    assert report["collection_version"] == "0.1.0"


def test_dumps_are_version_4_and_single_quoted(lab):
    rc, _runtimes, doc, _err = dumped(lab["nodes"]["healthy-23"])
    assert rc == 0 and doc["version"] == 4
    _rc, out, _err = lab["nodes"]["healthy-23"].dump()
    assert "imports = ['" in out and "[plugins.'%s'.containerd.runtimes.nvidia]" % V3 in out


def test_healthy_node_is_ok_and_every_host_check_ran(lab):
    rc, runtimes, _doc, _err = dumped(lab["nodes"]["healthy-23"])
    assert rc == 0 and sorted(runtimes) == ["nvidia", "nvidia-cdi", "nvidia-extra", "runc"]
    entry = lab["report"]["nodes"]["healthy-23"]
    assert entry["status"] == "OK", entry["findings"]
    assert sorted(entry["checks_skipped"]) == ["node_drift", "overhead_unschedulable", "restart_pending"]
    assert "file_loaded_drift" in entry["checks_run"] and "dropin_version_above_root" in entry["checks_run"]


def test_missing_handler_and_its_suggestion(lab):
    item = only(lab, "missing-handler-23", "missing_handler")
    assert (item["subject"], item["evidence"]["suggestion"]) == ("nvidia-legcy", "nvidia-legacy")
    crun = only(lab, "crun-23", "missing_handler")
    assert (crun["subject"], crun["evidence"]["suggestion"]) == ("crun", None)


def test_default_runtime_not_loaded_is_config_refused(lab):
    assert checks_of(lab, "default-not-loaded-23") == ["config_refused", "default_runtime_blast_radius"]
    item = only(lab, "default-not-loaded-23", "config_refused")
    assert "failed to load plugin io.containerd.cri.v1.runtime" in item["evidence"]["cause"]


def test_blast_radius(lab):
    assert checks_of(lab, "blast-radius-23") == ["default_runtime_blast_radius"]


def test_dead_glob_and_orphans(lab):
    assert checks_of(lab, "dead-glob-23") == ["dead_imports_glob"]
    assert checks_of(lab, "orphan-23") == ["orphan_dropin"]
    severities = dict((f["subject"].rsplit("/", 2)[-2] + "/" + f["subject"].rsplit("/", 1)[-1], f["severity"])
                      for f in findings(lab, "orphan-23"))
    assert severities == {"conf.d/30-nvidia-cdi.conf": "error", "config.d/99-nvidia.toml": "error"}
    assert only(lab, "dead-glob-23", "dead_imports_glob")["severity"] == "info"  # conf.d exists, empty: a slot


def test_no_imports_on_23_dumps_the_default_but_loads_no_dropin(lab):
    """Measured with 2.3.4: a file without `imports` dumps imports = ['/etc/containerd/conf.d/*.toml']
    although nothing was imported; the host-side computation from the files is what counts."""
    node = lab["nodes"]["no-imports-23"]
    rc, runtimes, doc, _err = dumped(node)
    assert rc == 0 and doc["imports"] == ["/etc/containerd/conf.d/*.toml"] and "nvidia-dropin" not in runtimes
    item = only(lab, "no-imports-23", "orphan_dropin")
    assert item["severity"] == "error" and item["evidence"]["not_loaded"] == ["nvidia-dropin"]
    assert "containerd 2.3 dumps imports = ['/etc/containerd/conf.d/*.toml'] by default" in item["message"]


def test_old_plugin_name_on_23(lab):
    rc, runtimes, _doc, err = dumped(lab["nodes"]["v4-oldname-23"])
    assert rc == 0 and "nvidia" not in runtimes and "Ignoring unknown key in TOML for plugin" in err
    assert checks_of(lab, "v4-oldname-23") == ["ignored_plugin_section", "missing_handler"]
    # a version 3 file with the old name is migrated by 2.3: loaded, no finding
    rc, runtimes, _doc, err = dumped(lab["nodes"]["v3-oldname-23"])
    assert rc == 0 and "nvidia" in runtimes and "Configuration migrated from version 3" in err
    assert lab["report"]["nodes"]["v3-oldname-23"]["status"] == "OK"


def test_version_1_file_is_migrated_by_23(lab):
    rc, runtimes, _doc, _err = dumped(lab["nodes"]["v1-23"])
    assert rc == 0 and "nvidia" in runtimes
    assert "ignored_plugin_section" not in checks_of(lab, "v1-23")


def test_mixed_plugin_names_in_a_v2_file(lab):
    rc, runtimes, _doc, _err = dumped(lab["nodes"]["mixed-v2-23"])
    assert rc == 0 and "kata-old" not in runtimes
    assert checks_of(lab, "mixed-v2-23") == ["ignored_plugin_section"]
    assert only(lab, "mixed-v2-23", "ignored_plugin_section")["evidence"]["not_loaded"] == ["kata-old"]


def test_runtime_binary_and_files(lab):
    assert checks_of(lab, "runtime-binary-23") == ["runtime_binary"]
    assert [(f["check"], f["severity"]) for f in findings(lab, "kata-23")] == [
        ("runtime_binary", "error"), ("runtime_file", "error")]


def test_cgroup_and_cdi(lab):
    assert [(f["check"], f["severity"], f["subject"]) for f in findings(lab, "cgroup-23")] == [
        ("cgroup_driver", "error", "nvidia")]
    assert checks_of(lab, "cdi-stale-23") == ["cdi_stale_spec"]


def test_cdi_disabled(lab):
    rc, _runtimes, doc, err = dumped(lab["nodes"]["cdi-disabled-23"])
    assert rc == 0
    cri = doc["plugins"]["io.containerd.cri.v1.runtime"]
    if lab["release"] == "2.4":
        # Measured: 2.4 has no enable_cdi: CDI is always on; the key is ignored with a warning and its
        # dump (and crictl info) has none. So nvidia-cdi gets its devices: no finding is the truth.
        assert "enable_cdi" not in cri and "key=enable_cdi" in err and "Ignoring unknown key" in err
        got = [(f["check"], f["subject"]) for f in findings(lab, "cdi-disabled-23") if f["check"] == "cdi_disabled"]
        assert got == []
    else:
        assert cri["enable_cdi"] is False
        assert [(f["check"], f["subject"]) for f in findings(lab, "cdi-disabled-23")] == [("cdi_disabled", "nvidia-cdi")]


def test_overhead_and_drift(lab):
    assert only(lab, "overhead-23", "overhead_unschedulable")["evidence"]["arithmetic"] == "900m + 250m > 1000m"
    assert lab["report"]["nodes"]["pool-a-23"]["status"] == "OK"
    assert checks_of(lab, "pool-b-23") == ["missing_handler", "node_drift"]


def test_unreadable_dropin(lab):
    assert checks_of(lab, "unreadable-23") == ["config_unreadable"]


def test_dropin_above_root_is_refused_by_234(lab):
    if lab["release"] != "2.3":
        pytest.skip("the 2.3.4 node is in the 2.3 lab")
    node = lab["nodes"]["refused-2.3.4"]
    rc, _runtimes, _doc, err = dumped(node)
    assert rc == 1 and "drop-in config version 4 higher than root config version 2" in err
    assert checks_of(lab, "refused-2.3.4") == ["config_refused"]
    item = only(lab, "refused-2.3.4", "config_refused")
    assert item["message"] == ("containerd will not start with this config: containerd: drop-in config version 4 "
                               "higher than root config version 2")
    assert item["evidence"]["dropins_above_root"] == [
        {"file": node.path("etc/containerd/conf.d/99-nvidia.toml"), "version": 4, "root_version": 2}]
    # on 2.3 the upgrade warning has nothing left to warn about
    assert "dropin_version_above_root" in lab["report"]["nodes"]["refused-2.3.4"]["checks_run"]


def test_dropin_above_root_loads_on_the_newest_releases(lab):
    """Measured: 2.3.7 and 2.4.2 load a version 4 drop-in over a version 2 root (both migrated,
    with a warning each): the node runs the drop-in's runtimes, and the audit raises no alarm."""
    rc, runtimes, _doc, err = dumped(lab["nodes"]["dropin-above-root-23"])
    assert rc == 0 and "nvidia" in runtimes, err
    assert "Configuration migrated from version 2" in err and "higher than root" not in err
    assert findings(lab, "dropin-above-root-23") == []


def test_no_config_runs_on_defaults(lab):
    rc, out, _err = lab["nodes"]["no-config-23"].dump()
    assert rc == 0 and "imports = ['/etc/containerd/conf.d/*.toml']" in out  # 2.1 dumps imports = []
    assert checks_of(lab, "no-config-23") == ["config_defaults", "missing_handler"]
    assert "without a config file no drop-in is loaded" in only(lab, "no-config-23", "config_defaults")["message"]


def test_imports_dev_zero_keeps_the_cause_line(lab):
    cause = only(lab, "dev-zero-23", "config_refused")["evidence"]["cause"]
    assert cause.startswith("fatal error: ") and "out of memory" in cause


def test_dockers_config_serves_no_cri(lab):
    rc, out, _err = lab["nodes"]["docker-23"].dump()
    assert rc == 0 and "disabled_plugins = ['io.containerd.grpc.v1.cri']" in out and "runtimes.runc]" in out
    item = only(lab, "docker-23", "cri_plugin_disabled")
    assert item["severity"] == "error" and item["subject"] == "io.containerd.grpc.v1.cri"
    assert '%s sets disabled_plugins = ["cri"]' % lab["nodes"]["docker-23"].config_path in item["message"]


def test_keys_2x_ignores_are_warnings_naming_key_and_file(lab):
    node = lab["nodes"]["ignored-keys-23"]
    _rc, _out, err = node.dump()
    assert "key=tolerate_missing_hugepages_controller" in err
    assert 'key="registry configs registry.example.com tls"' in err
    got = sorted((f["severity"], f["subject"]) for f in findings(lab, "ignored-keys-23")
                 if f["check"] == "config_load_warning")
    assert got == [("warning", '%s:plugins."%s".registry.configs."registry.example.com".tls' % (node.config_path, V2)),
                   ("warning", '%s:plugins."%s".tolerate_missing_hugepages_controller' % (node.config_path, V2))]


def test_every_audit_check_was_exercised_on_23(lab):
    seen = set(f["check"] for e in lab["report"]["nodes"].values() for f in e["findings"])
    # restart_pending: test_running_view.py (real 2.x daemons); dropin_version_above_root fires
    # below 2.3 only; file_loaded_drift has no 2.x cause; handlers_not_reported is cluster mode.
    # The registry says which: what 2.3 gives no cause for, and what needs a running daemon.
    assert (set(checks.check_ids("hosts")) | set(checks.check_ids("group"))) - seen == set(
        c.id for c in checks.REGISTRY if set(c.modes) & {"hosts", "group"}
        and (not c.fires_on(tuple(int(part) for part in lab["release"].split("."))) or "running" in c.needs))


def test_junit_is_valid(lab):
    root = ET.parse(str(lab["base"] / "report" / "audit.junit.xml")).getroot()
    assert int(root.get("tests")) == len(list(root.iter("testcase")))


# --- the plugin-name table, against the real binaries -----------------------------------------

RUNTIME_OF = {V1: "k1", V2: "k2", V3: "k3"}


def combos():
    for version in (1, 2, 3, 4):
        for size in (1, 2, 3):
            for plugins in itertools.combinations((V1, V2, V3), size):
                yield version, plugins


def refused_by(release, version, plugins):
    """Measured: 1.7 refuses version 3+, 1.x refuses plugins.cri in a version 2+ file, 2.1 and 2.2
    refuse version 4 (1.6 reads a version 3 or 4 file as a version 2 one)."""
    major, minor = (int(x) for x in release.split("."))
    return ((major, minor) == (1, 7) and version >= 3) or (major == 1 and version >= 2 and V1 in plugins) or (
        (major, minor) in ((2, 1), (2, 2)) and version == 4)


@pytest.mark.parametrize("release", containerd_bins.ALL_VERSIONS)
def test_plugin_table_matches_the_real_binaries(release, tmp_path):
    """containerd_config's plugin-name table against every version x plugin-name combination,
    loaded by the real binary: the runtimes it predicts are exactly the ones containerd loads."""
    binary = containerd_bins.binary(release)
    major, minor = (int(x) for x in release.split("."))
    mismatches = []
    for version, plugins in combos():
        text = "version = %d\n" % version + "".join(runtime(p, RUNTIME_OF[p], systemd=None) for p in plugins)
        path = tmp_path / "c.toml"
        path.write_text(text)
        proc = subprocess.run([binary, "--config", str(path), "config", "dump"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, check=False, cwd="/")
        if proc.returncode != 0 or refused_by(release, version, plugins):
            assert (proc.returncode != 0) == refused_by(release, version, plugins), (version, plugins, proc.stderr[-300:])
            continue
        loaded = set(parse_gathered.summarize_dump(proc.stdout)["runtime_names"]) - {"runc"}
        gathered = {"version": release, "version_major": major, "version_minor": minor, "loaded": None,
                    "files": [{"path": str(path), "role": "main", "content": text, "error": None}]}
        gathered["files"][0]["parsed"] = parse_gathered.summarize_file(gathered["files"][0])
        ctx = checks.Context("n", gathered)
        (_entry, _version, reasons), = checks.file_readings(ctx)
        predicted = set(RUNTIME_OF[p] for p, why in reasons.items() if why is None)
        if (major, minor) >= (2, 3) and version == 1 and plugins == (V1, V2):
            # measured: 2.3.4 keeps plugins.cri or io.containerd.grpc.v1.cri at random; the finding says so
            assert loaded in ({"k1"}, {"k2"}) and "at random" not in reasons[V1] and "one start to the next" in reasons[V1]
            continue
        if predicted != loaded:
            mismatches.append((version, [p.split(".")[-1] for p in plugins], sorted(loaded), sorted(predicted)))
    assert mismatches == []


# --- the real /etc/containerd/conf.d, in a private mount namespace -----------------------------

UNSHARE_SCRIPT = r'''
set -e
mount --make-rprivate /
mount -t overlay overlay -o lowerdir=/etc,upperdir="$SCRATCH/upper",workdir="$SCRATCH/work" /etc
mkdir -p /etc/containerd/conf.d
printf "version = $DROPIN_VERSION\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.from-conf-d]\n" > /etc/containerd/conf.d/x.toml
printf "  runtime_type = 'io.containerd.runc.v2'\n" >> /etc/containerd/conf.d/x.toml
for config in "$@"; do
  echo "== $config"
  "$CONTAINERD" --config "$config" config dump 2>/dev/null | grep -E "^imports|runtimes\.[a-z-]+\]" || true
done
'''


@pytest.mark.parametrize("release, text, loaded", [
    (release, text, loaded) for release in ("2.2",) + RELEASES for text, loaded in (
        ("version = 4\n", False),
        ("version = 3\n", False),
        ("version = 2\n", False),
        ("version = %d\nimports = ['/etc/containerd/conf.d/*.toml']\n" % (3 if release == "2.2" else 4), True),
        (None, False),  # no config file at all
    ) if not (release == "2.2" and text == "version = 4\n")])  # 2.2 refuses version 4
def test_23_dump_imports_are_no_evidence_of_what_was_imported(release, tmp_path, text, loaded):
    """Measured (2.2.9, 2.3.4, 2.3.7, 2.4.2): 2.2+ dumps imports = ['/etc/containerd/conf.d/*.toml'] (its default) although a
    file without an imports key imports nothing; an explicit imports entry loads the drop-in. Run
    in a private mount namespace with an overlay on /etc, so the real conf.d is the test's."""
    (tmp_path / "upper").mkdir()
    (tmp_path / "work").mkdir()
    config = tmp_path / "config.toml"
    if text is not None:
        config.write_text(text)
    env = dict(os.environ, SCRATCH=str(tmp_path), CONTAINERD=containerd_bins.binary(release),
               DROPIN_VERSION="3" if release == "2.2" else "4")
    proc = subprocess.run(["unshare", "-m", "sh", "-c", UNSHARE_SCRIPT, "sh", str(config)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if proc.returncode != 0 and ("Operation not permitted" in proc.stderr or "unshare failed" in proc.stderr):
        pytest.skip("no private mount namespace here (unshare -m needs CAP_SYS_ADMIN): %s" % proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    assert "imports = ['/etc/containerd/conf.d/*.toml'" in proc.stdout
    assert "runtimes.runc]" in proc.stdout, proc.stdout  # the dump was read
    assert ("runtimes.from-conf-d]" in proc.stdout) is loaded, proc.stdout
    assert not os.path.exists("/etc/containerd/conf.d/x.toml")  # the overlay stayed in its namespace

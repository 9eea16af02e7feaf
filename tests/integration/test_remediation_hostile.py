"""Issue 8, items 4, 6, 7 and 8: hostile inputs, other owners' files, backups and rollback, with the
real containerd and the real ansible-playbook. Every refusal happens before a byte changes."""
import glob
import os
import shutil
import stat

import pytest

from tests.lib import ansible_run
from tests.lib import shapes
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration

V2_MAIN = ('# site config\nversion = 2\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n'
           '[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "registry.example/pause:3.9"\n'
           '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
           '    runtime_type = "io.containerd.runc.v2"\n')
V3_MAIN = ('version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n'
           '[plugins."io.containerd.cri.v1.images".pinned_images]\n  sandbox = "registry.example/pause:3.9"\n')


def one_node(tmp_path, version="2.1", main=V3_MAIN, **extra):
    node = Node(tmp_path / "nodes", "n1", version)
    if main is not None:
        node.write("etc/containerd/config.toml", main)
    facts = node.host_vars(
        containerd_runtime_runtimes=[{"name": "nvidia", "binary_name": node.runtime_binary()}],
        containerd_runtime_backup_dir=node.path("var/backups/gpurt"),
        containerd_runtime_restart_command=["sh", "-c", "echo restarted >> %s" % node.path("restarts.log")],
        containerd_runtime_restart_proof="config",  # no daemon runs here: the proof is the config's load
    )
    facts.update(extra)
    inventory = ansible_run.write_inventory(str(tmp_path / "inv.json"), {"n1": facts})
    playbook = tmp_path / "role.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  roles:\n    - gpurt.runtime_gate.containerd_runtime\n")
    return node, inventory, str(playbook)


def run(playbook, inventory, check=False, **extra_vars):
    return ansible_run.playbook(playbook, inventory, extra_vars=extra_vars or None, check=check,
                                extra_env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})


def words(result):
    return " ".join(result.text.replace("\\n", " ").split())


@pytest.mark.parametrize("variable, value, expected", [
    ("containerd_runtime_config_path", "etc/containerd/config.toml", "config_path must be an absolute path"),
    ("containerd_runtime_config_path", "/etc/containerd/*.toml", "must be a normalised path without glob characters"),
    ("containerd_runtime_config_path", "/etc/containerd/../containerd/config.toml", "must be a normalised path"),
    ("containerd_runtime_dropin_prefix", "../x-", "dropin_prefix '../x-' must not contain '/', '..'"),
    ("containerd_runtime_dropin_suffix", "/.toml", "dropin_suffix '/.toml' must not contain '/'"),
    ("containerd_runtime_dropin_glob", "*.conf", "dropin_glob '*.conf' does not match the drop-in names"),
    ("containerd_runtime_dropin_glob", "../*.toml", "must be one file name pattern"),
])
def test_bad_paths_and_names_are_refused_before_anything_runs(tmp_path, containerd, variable, value, expected):
    node, inventory, playbook = one_node(tmp_path)
    before = shapes.tree(node.root)
    result = run(playbook, inventory, **{variable: value})
    assert result.rc == 2, result
    assert expected in words(result), result
    assert "Traceback" not in result.text
    assert shapes.tree(node.root) == before


def test_backup_dir_an_imports_glob_could_load_is_refused(tmp_path, containerd):
    node, inventory, playbook = one_node(tmp_path)
    result = run(playbook, inventory, containerd_runtime_backup_dir=node.path("etc/containerd/conf.d/backups"))
    assert result.rc == 2 and "backup_dir" in words(result) and "must be outside" in words(result), result
    assert not os.path.exists(node.path("etc/containerd/conf.d"))


def test_a_containerd_path_with_a_space_works(tmp_path, containerd):
    node, inventory, playbook = one_node(tmp_path)
    spaced = tmp_path / "opt dir" / "containerd"
    spaced.parent.mkdir()
    shutil.copy(node.binary, spaced)
    result = run(playbook, inventory, gpurt_containerd_bin=str(spaced))
    assert result.rc == 0, result
    assert os.path.exists(node.path("etc/containerd/conf.d/zz-gpurt-nvidia.toml"))


def test_a_hanging_containerd_times_out_and_leaves_nothing(tmp_path, containerd):
    node, inventory, playbook = one_node(tmp_path)
    hang = tmp_path / "containerd-hangs"
    hang.write_text('#!/bin/sh\ncase "$*" in *"config default"*) exec sleep 300;; esac\nexec "%s" "$@"\n' % node.binary)
    hang.chmod(0o755)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    before = shapes.tree(node.root)
    result = ansible_run.playbook(playbook, inventory, extra_vars={"gpurt_containerd_bin": str(hang),
                                                                   "containerd_runtime_timeout": 2},
                                  extra_env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "TMPDIR": str(private_tmp)})
    assert result.rc == 2
    assert "did not finish within 2 s" in words(result), result
    assert shapes.tree(node.root) == before
    assert os.listdir(private_tmp) == []


def test_a_main_config_over_the_size_limit_is_refused_not_replaced(tmp_path, containerd):
    big = V2_MAIN + "".join('# padding line %06d .......................................\n' % i for i in range(40000))
    node, inventory, playbook = one_node(tmp_path, "1.7", main=big)
    assert os.path.getsize(node.config_path) > 2 * 1024 * 1024
    before = shapes.tree(node.root)
    result = run(playbook, inventory)
    assert result.rc == 2, result
    assert "cannot be read as text (file is" in words(result) and "Nothing was written" in words(result)
    assert shapes.tree(node.root) == before


def test_a_file_of_another_owner_at_the_role_name_is_never_overwritten(tmp_path, containerd):
    node, inventory, playbook = one_node(tmp_path)
    theirs = node.write("etc/containerd/conf.d/zz-gpurt-nvidia.toml", 'version = 3\n# written by hand\n')
    before = shapes.tree(node.root)
    result = run(playbook, inventory)
    assert result.rc == 2
    assert "is not a file of this role" in words(result) and theirs in words(result), result
    assert shapes.tree(node.root) == before


def test_a_failed_post_write_load_puts_every_file_back(tmp_path, containerd):
    """The staged load is proved; the real one then loads differently (a containerd that only fails for
    the real path stands in for whatever changed in between): every byte goes back, the task fails."""
    node, inventory, playbook = one_node(tmp_path, "2.1", main=V3_MAIN.replace("{root}", "{root}"))
    flaky = tmp_path / "containerd-flaky"
    flaky.write_text('#!/bin/sh\ncase "$*" in *"%s config dump"*) [ -f "%s" ] && { echo "containerd: boom" >&2; exit 1; };; esac\n'
                     'exec "%s" "$@"\n' % (node.config_path, node.path("etc/containerd/conf.d/zz-gpurt-nvidia.toml"),
                                           node.binary))
    flaky.chmod(0o755)
    before = shapes.tree(node.root)
    result = run(playbook, inventory, gpurt_containerd_bin=str(flaky))
    assert result.rc == 2, result
    text = words(result)
    assert "the written config does not load: containerd: boom" in text and "every file was put back" in text, result
    after = shapes.tree(node.root)
    changed = dict((p, v) for p, v in after.items() if before.get(p) != v)
    assert all("/var/backups/gpurt/" in p for p in changed), changed  # only the backups are new
    assert not os.path.exists(node.path("restarts.log"))


def test_stale_own_drop_ins_are_kept_unless_removal_is_asked(tmp_path, containerd):
    node, inventory, playbook = one_node(tmp_path)
    cdi = {"name": "nvidia-cdi", "binary_name": node.runtime_binary("usr/bin/nvidia-container-runtime.cdi")}
    assert run(playbook, inventory, containerd_runtime_enable_nvidia_cdi=True, containerd_runtime_nvidia_cdi=cdi).rc == 0
    own = node.path("etc/containerd/conf.d/zz-gpurt-nvidia-cdi.toml")
    assert os.path.exists(own)
    result = run(playbook, inventory)
    assert result.rc == 0 and result.changed() == 0, result
    assert os.path.exists(own), "a runtime no longer listed is kept: pods may still use it"
    result = run(playbook, inventory, containerd_runtime_remove_runtimes=["nvidia-cdi"])
    assert result.rc == 0 and result.changed() >= 1, result
    assert not os.path.exists(own)
    backups = glob.glob(node.path("var/backups/gpurt/*") + own)
    assert len(backups) == 1
    result = run(playbook, inventory, containerd_runtime_remove_runtimes=["nvidia-cdi"])
    assert result.changed() == 0 and glob.glob(node.path("var/backups/gpurt/*") + own) == backups


def test_a_changed_binary_with_a_star_glob_loads_the_new_one(tmp_path, containerd):
    """dropin_glob='*' imports every file of the dir: the backups live elsewhere, so the old BinaryName
    cannot come back from a backup imported after the new file."""
    node, inventory, playbook = one_node(tmp_path, main=V3_MAIN.replace("conf.d/*.toml", "conf.d/*"))
    assert run(playbook, inventory, containerd_runtime_dropin_glob="*").rc == 0
    other = node.runtime_binary("opt/nvidia/nvidia-container-runtime")
    result = run(playbook, inventory, containerd_runtime_dropin_glob="*",
                 containerd_runtime_runtimes=[{"name": "nvidia", "binary_name": other}])
    assert result.rc == 0, result
    rc, out, _err = node.dump()
    assert rc == 0 and other in out
    assert sorted(os.listdir(node.path("etc/containerd/conf.d"))) == ["zz-gpurt-nvidia.toml"]


def test_a_non_runc_default_needs_consent_and_prints_its_blast_radius(tmp_path, containerd):
    node, inventory, playbook = one_node(tmp_path)
    result = run(playbook, inventory, containerd_runtime_default_runtime_name="nvidia")
    assert result.rc == 2 and "would send every pod of the node" in words(result)
    result = run(playbook, inventory, containerd_runtime_default_runtime_name="nvidia",
                 containerd_runtime_allow_non_runc_default=True)
    assert result.rc == 0, result
    assert "every pod of this node, GPU or not, runs through nvidia" in words(result)
    rc, out, _err = node.dump()
    assert "default_runtime_name = 'nvidia'" in out or 'default_runtime_name = "nvidia"' in out


def test_an_eks_node_goes_back_to_runc_only_when_asked(tmp_path, containerd):
    node = shapes.install(tmp_path / "nodes", "eks", "eks-al2023-gpu", "2.1")
    facts = node.host_vars(
        gpurt_containerd_config_path=node.path("etc/containerd/config.toml"),
        gpurt_kubelet_config_path=node.path(node.kubelet_rel),
        containerd_runtime_runtimes=[{"name": "nvidia", "binary_name": node.path("usr/bin/nvidia-container-runtime")}],
        containerd_runtime_backup_dir=node.path("var/backups/gpurt"),
        containerd_runtime_restart_command=["true"], containerd_runtime_restart_proof="config",
        containerd_runtime_default_runtime_name="runc",
    )
    inventory = ansible_run.write_inventory(str(tmp_path / "inv.json"), {"eks": facts})
    playbook = tmp_path / "role.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  roles:\n    - gpurt.runtime_gate.containerd_runtime\n")
    result = run(str(playbook), inventory)
    assert result.rc == 0, result
    assert "default_runtime_name goes from nvidia back to runc" in words(result)
    rc, out, _err = node.dump()
    assert "default_runtime_name = 'runc'" in out or 'default_runtime_name = "runc"' in out
    assert "base_runtime_spec" in out


def test_check_mode_of_a_migration_writes_nothing_next_to_the_config(tmp_path, containerd_23):
    node = shapes.install(tmp_path / "nodes", "v1", "version1-file", "2.3")
    facts = node.host_vars(containerd_runtime_runtimes=[{"name": "nvidia", "binary_name": node.runtime_binary()}],
                           containerd_runtime_backup_dir=node.path("var/backups/gpurt"),
                           containerd_runtime_restart_command=["true"], containerd_runtime_restart_proof="config")
    inventory = ansible_run.write_inventory(str(tmp_path / "inv.json"), {"v1": facts})
    playbook = tmp_path / "role.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  roles:\n    - gpurt.runtime_gate.containerd_runtime\n")
    os.chmod(node.path("etc/containerd"), stat.S_IRUSR | stat.S_IXUSR)  # read-only: check mode must not need it
    try:
        before = shapes.tree(node.root)
        result = run(str(playbook), inventory, check=True)
    finally:
        os.chmod(node.path("etc/containerd"), 0o755)
    assert result.rc == 0 and result.changed() >= 1, result
    assert "migrated the version 1 main config to version 4" in words(result)
    assert shapes.tree(node.root) == before


def test_a_kubelet_driver_the_kubelet_does_not_know_is_refused_until_the_variable_says(tmp_path, containerd):
    node, inventory, playbook = one_node(tmp_path)
    node.write("var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\ncgroupDriver: Systemd\n")
    before = dict((p, open(p).read()) for p in glob.glob(node.path("etc/containerd/**"), recursive=True)
                  if os.path.isfile(p))
    result = run(playbook, inventory)
    assert result.rc == 2, result
    said = words(result)
    assert "has cgroupDriver 'Systemd', neither systemd nor cgroupfs" in said
    assert "set containerd_runtime_systemd_cgroup to say it" in said  # the role's variable, named once
    assert dict((p, open(p).read()) for p in glob.glob(node.path("etc/containerd/**"), recursive=True)
                if os.path.isfile(p)) == before
    assert not os.path.exists(node.path("restarts.log"))
    result = run(playbook, inventory, containerd_runtime_systemd_cgroup=True)
    assert result.rc == 0, result
    rc, out, _err = node.dump()
    assert rc == 0 and "SystemdCgroup = true" in out


@pytest.mark.parametrize("variable, value, expected", [
    ("containerd_runtime_before_restart_tasks", "/nonexistent/drain.yml",
     "containerd_runtime_before_restart_tasks: /nonexistent/drain.yml is not a readable file on the controller"),
    ("containerd_runtime_timeout", "soon", "'containerd_runtime_timeout' is of type str"),
    ("containerd_runtime_migrate", "sometimes", "containerd_runtime_migrate must be one of: auto, always, never"),
    ("containerd_runtime_restart_timeout", "later", "'containerd_runtime_restart_timeout' is of type str"),
])
def test_remediate_refuses_a_bad_role_variable_before_anything_runs(tmp_path, containerd, variable, value, expected):
    """remediate.yml skips the role's automatic validation (the action checks the variables against the
    same spec, once): a bad value still stops the host before a byte changes, named by its variable,
    the restart handler's own variables included."""
    node, inventory, _unused = one_node(tmp_path)
    before = shapes.tree(node.root)
    result = run(os.path.join(ansible_run.REPO, "playbooks", "remediate.yml"), inventory, gpurt_reaudit=False, gpurt_list_nodes=False,
                 **{variable: value})
    assert result.rc == 2, result
    # once, on the node's line (issue 35): REFUSED means nothing was written
    assert "n1: REFUSED (" in words(result) and expected in words(result), result
    assert "Traceback" not in result.text
    assert shapes.tree(node.root) == before


def test_the_restart_hooks_run_around_a_restart_and_nowhere_else(tmp_path, containerd):
    """containerd_runtime_before_restart_tasks / _after_restart_tasks: handlers, so only a host whose restart
    is notified runs them, before the restart and after its proof; never in check mode or on a settled
    node. A failing "before" leaves containerd unrestarted and the host failed."""
    log = tmp_path / "nodes" / "n1" / "restarts.log"
    hooks = {}
    for when in ("before", "after"):
        hooks[when] = tmp_path / ("%s.yml" % when)
        hooks[when].write_text("- name: Note the %s hook\n  ansible.builtin.shell: echo %s >> %s\n  changed_when: false\n"
                               % (when, when, log))
    node, inventory, playbook = one_node(tmp_path, containerd_runtime_before_restart_tasks=str(hooks["before"]),
                                         containerd_runtime_after_restart_tasks=str(hooks["after"]))
    assert run(playbook, inventory, check=True).rc == 0
    assert not log.exists()  # check mode: no restart, no hook
    result = run(playbook, inventory)
    assert result.rc == 0, result
    assert log.read_text().split() == ["before", "restarted", "after"], result
    assert run(playbook, inventory).rc == 0
    assert log.read_text().split() == ["before", "restarted", "after"]  # settled: no handler, no hook

    failing = tmp_path / "failing.yml"
    failing.write_text("- name: Refuse the restart\n  ansible.builtin.fail:\n    msg: not now\n")
    other = tmp_path / "other"
    other.mkdir()
    node, inventory, playbook = one_node(other, containerd_runtime_before_restart_tasks=str(failing),
                                         containerd_runtime_after_restart_tasks=str(hooks["after"]))
    result = run(playbook, inventory)
    assert result.rc == 2 and "not now" in result.text, result
    assert not os.path.exists(node.path("restarts.log")), result  # neither restarted nor "after"


def test_a_dangling_drop_in_dir_symlink_is_refused_as_one(tmp_path, containerd):
    """Issue 37: a conf.d that is a symlink to a directory that is gone was refused on a writable root with
    "its owner is whoever mounted / read-only". The refusal names the symlink and its target instead."""
    node, inventory, _unused = one_node(tmp_path)
    gone = node.path("mnt/gpu-config/conf.d")
    os.symlink(gone, node.path("etc/containerd/conf.d"))
    with open(node.config_path) as handle:
        before = handle.read()
    result = run(os.path.join(ansible_run.REPO, "playbooks", "remediate.yml"), inventory, gpurt_reaudit=False,
                 gpurt_list_nodes=False)
    text = words(result)
    assert result.rc != 0 and "Traceback" not in result.text, result
    link = node.path("etc/containerd/conf.d")
    assert "%s is a dangling symlink: it points to %s, which does not exist" % (link, gone) in text, result
    assert "whoever mounted" not in text and "read-only" not in text, result
    assert ("Its owner is whoever made the symlink %s; the documented way: create %s, or point %s at the directory "
            "that should hold the file, then run again" % (link, gone, link)) in text, result
    with open(node.config_path) as handle:
        assert handle.read() == before
    assert os.readlink(link) == gone and not os.path.lexists(gone)

"""A check's inputs, built small, for the unit tests of plugins/plugin_utils/_checks
(tests/unit/plugins/plugin_utils/test_checks_*.py): RuntimeClasses, a loaded config's summary, gathered files,
a node's judging context, and one check run as the registry runs it."""
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
    """missing_handler on a node that loads these handlers."""
    return run("missing_handler", ctx({"loaded": loaded(names=handlers)}, rcs, labels))


def gathered_imports():
    """A node whose config imports a glob that matches nothing (beside a .conf fragment) and another that
    matches, with a drop-in in config.d/ that nothing imports."""
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


def gathered_with(files, dump, version=(2, 1), warnings=()):
    """A gather result as parse_gathered leaves it: files [(path, role, text)], dump as containerd printed it."""
    result = {
        "version": "%d.%d.9" % version,
        "version_major": version[0],
        "version_minor": version[1],
        "config_path": files[0][0],
        "config_exists": True,
        "dump": dump,
        "refused": None,
        "dump_warnings": list(warnings),
        "imports": [],
        "files": [{"path": p, "role": r, "content": t, "error": None} for p, r, t in files],
    }
    return parse_gathered.parse_gathered(result)


def findings_of(gathered, check):
    out, ran, _skipped = checks.check_node("n1", gathered, [], {})
    assert check in ran
    return [f for f in out if f["check"] == check]


# Docker's packaged /etc/containerd/config.toml: the CRI plugin disabled.
DOCKER = '#   Copyright 2018-2022 Docker Inc.\n\ndisabled_plugins = ["cri"]\n\n#root = "/var/lib/containerd"\n'


# A 2.1 dump with the CRI plugin disabled (as 2.1.9 dumps DOCKER) and runc loaded.
DUMP_21 = (
    "version = 3\nroot = '/var/lib/containerd'\ndisabled_plugins = ['io.containerd.grpc.v1.cri']\n"
    "[plugins.'io.containerd.cri.v1.runtime'.containerd]\n  default_runtime_name = 'runc'\n"
    "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n  runtime_type = 'io.containerd.runc.v2'\n"
)

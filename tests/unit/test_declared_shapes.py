"""The declared shapes hold: `gathered` (module_utils/_gathered) and the remediation plan
(_remediation/plan_shape). Real gathers, run by the real containerd on a test node, and real plans of
them have exactly the declared keys; and every key plugins/ reads of a gathered or of a plan is declared."""
import ast
import os

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _gathered as gathered_shape
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_gather as node_gather
from ansible_collections.gpurt.runtime_gate.plugins.modules import register_runtimes_node as node_module
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _remediation as remediation
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import plan_shape
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import speculation
from tests.unit.test_one_definition import PLUGINS, python_files

NVIDIA_DUMP_KEY = 'runtimes.nvidia'


def required(shape):
    return set(shape.__required_keys__)


def declared(shape):
    return set(shape.__required_keys__) | set(shape.__optional_keys__)


def _validated(spec, args):
    checked = ArgumentSpecValidator(spec).validate(args)
    assert not checked.error_messages, checked.error_messages
    return checked.validated_parameters


def _opts(node):
    """The register_runtimes options of a run that registers nvidia on the node."""
    return remediation.validated_options(_validated(remediation.ARGUMENT_SPEC, dict(
        containerd_bin=node.binary, config_path=node.config_path, kubelet_config_path=node.kubelet_config_path,
        state_dir=node.path("var/lib/gpurt"), crictl_bin=node.path("no/crictl"),
        runtimes=[{"name": "nvidia", "binary_name": node.runtime_binary()}])))


def _node_args(node, opts):
    return dict(containerd_bin=node.binary, config_path=node.config_path, kubelet_config_path=node.kubelet_config_path,
                state_dir=opts["state_dir"], crictl_bin=opts["crictl_bin"], dropin_dirs=[opts["dropin_dir"]],
                cdi_spec_dirs=[node.path("etc/cdi")])


def _gather_params(node, opts, **extra):
    """containerd_config_info's params (the gather options' defaults filled in)."""
    params = _validated(containerd_facts.GATHER_SPEC, _node_args(node, opts))
    params.update(dict(on_refused="fail", gather_running=True, shim_dirs=None), **extra)
    return params


def _node_params(node, opts, **extra):
    """register_runtimes_node's params at step=gather, as the action sends them (its own defaults filled in)."""
    args = dict(_node_args(node, opts), step="gather", dropin_dir=opts["dropin_dir"],
                extra_paths=[r["binary_name"] for r in opts["runtimes"]], **extra)
    return _validated(node_module.ARGUMENT_SPEC, args)


@pytest.fixture(params=["1.6", "2.1"])
def node(request, make_node):
    node = make_node("n", request.param)
    node.write("etc/containerd/config.toml", "version = 2\n")
    node.write("var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\ncgroupDriver: systemd\n")
    return node


# --- gathered: real gathers have exactly the declared keys ---------------------------------------------

def test_a_real_gather_has_exactly_the_declared_keys(node):
    params = _gather_params(node, _opts(node), gather_running=False)
    assert set(node_gather.gather(params)) == required(gathered_shape.Gathered)
    with_running = node_gather.gather(dict(params, gather_running=True))
    assert set(with_running) == required(gathered_shape.Gathered) | {"running"}
    assert set(with_running) == declared(gathered_shape.Gathered)
    # what the controller adds before it judges
    parsed = parse_gathered.parse_gathered(with_running)
    assert set(parsed) == declared(gathered_shape.Gathered) | {"loaded", "load_warnings"}


def test_a_refused_config_is_gathered_with_the_same_keys(make_node):
    node = make_node("refused", "1.7")
    node.write("etc/containerd/config.toml", "version = 3\n")  # 1.7 refuses version 3 (exit 1)
    params = _gather_params(node, _opts(node), gather_running=False, on_refused="report")
    result = node_gather.gather(params)
    assert result["refused"] and result["dump"] is None
    assert set(result) == required(gathered_shape.Gathered)


def test_the_plans_gather_has_exactly_the_declared_keys(node):
    opts = _opts(node)
    result = node_module._gather(_node_params(node, opts))
    assert set(result) == required(gathered_shape.PlanGathered) | {"running"}
    proposed = speculation.proposals(opts)
    assert proposed
    speculated = node_module._gather(_node_params(node, opts, speculate=proposed))
    assert set(speculated) == declared(gathered_shape.PlanGathered)


def test_the_controllers_keys_are_the_only_ones_no_gather_returns():
    """loaded and load_warnings come from parse_gathered (above); node_object stands for a gather in cluster
    audits; failed, msg and unreachable are Ansible's own."""
    controller = declared(gathered_shape.JudgedGathered) - declared(gathered_shape.PlanGathered)
    assert controller == {"loaded", "load_warnings", "node_object", "failed", "msg", "unreachable"}


# --- the plan: real plans of real gathers have exactly the declared keys -------------------------------

def test_real_plans_have_exactly_the_declared_keys(node):
    opts = _opts(node)
    the_plan = remediation.plan(node_module._gather(_node_params(node, opts)), opts)
    assert the_plan["noop"] is False
    writes = required(plan_shape.WritePlan) | ({"pinned"} if node.version.startswith("1.") else set())
    assert set(the_plan) == writes and writes <= declared(plan_shape.WritePlan)
    for item in the_plan["writes"] + the_plan["removes"]:
        assert set(item) == required(plan_shape.PlannedFile)
    # written as planned, the node loads nvidia: the next plan is a no-op
    for item in the_plan["writes"]:
        os.makedirs(os.path.dirname(item["path"]), exist_ok=True)
        with open(item["path"], "w") as handle:
            handle.write(item["content"])
    gathered = node_module._gather(_node_params(node, opts))
    assert NVIDIA_DUMP_KEY in gathered["dump"]
    again = remediation.plan(gathered, opts)
    assert again["noop"] is True
    assert set(again) == required(plan_shape.Plan)


# --- no code in plugins/ reads a key the declarations lack ---------------------------------------------

_READS = ("get", "pop", "setdefault")


def _is_named(node, name):
    return (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name)


def _text(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def key_uses(tree, name, key_functions=()):
    """(line, key) of every string key used on an expression called `name` (`gathered`, `ctx.gathered`):
    name[key], name.get/pop/setdefault(key), key in name; and key_function(key, ...) calls."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_named(node.value, name) and _text(node.slice):
            out.append((node.lineno, _text(node.slice)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _READS \
                and _is_named(node.func.value, name) and node.args and _text(node.args[0]):
            out.append((node.lineno, _text(node.args[0])))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in key_functions \
                and node.args and _text(node.args[0]):
            out.append((node.lineno, _text(node.args[0])))
        elif isinstance(node, ast.Compare) and _text(node.left) and len(node.ops) == 1 and \
                isinstance(node.ops[0], (ast.In, ast.NotIn)) and _is_named(node.comparators[0], name):
            out.append((node.lineno, _text(node.left)))
    return out


def uses_in_plugins(name, key_functions=()):
    found = []
    for path in python_files():
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        found += [(os.path.relpath(path, PLUGINS), line, key) for line, key in key_uses(tree, name, key_functions)]
    return found


def test_every_key_read_of_a_gathered_is_declared():
    uses = uses_in_plugins("gathered", key_functions=("gathered_key",))
    # the scan sees the reads (a scan that finds nothing proves nothing)
    assert {"loaded", "files", "imports", "version_major", "default_text", "node_object", "cdi_specs"} <= \
        set(k for _p, _l, k in uses)
    undeclared = ["%s:%d %s" % use for use in uses if use[2] not in declared(gathered_shape.JudgedGathered)]
    assert undeclared == [], "declare these keys in plugins/module_utils/_gathered.py"


def test_every_key_read_of_a_plan_is_declared():
    uses = uses_in_plugins("the_plan")
    assert {"writes", "notes", "noop", "pinned", "input_paths", "staged_main"} <= set(k for _p, _l, k in uses)
    undeclared = ["%s:%d %s" % use for use in uses if use[2] not in declared(plan_shape.WritePlan)]
    assert undeclared == [], "declare these keys in plugins/plugin_utils/_remediation/plan_shape.py"


def test_the_scan_finds_every_form_of_a_key_read():
    tree = ast.parse("gathered['a']\nctx.gathered.get('b')\n'c' in node.gathered\ngathered.pop('d', None)\n"
                     "gathered_key('e', 'why')\nother['x']\ngathered[name]\n")
    assert sorted(k for _l, k in key_uses(tree, "gathered", ("gathered_key",))) == ["a", "b", "c", "d", "e"]

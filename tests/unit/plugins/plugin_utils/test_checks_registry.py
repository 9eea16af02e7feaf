"""_checks/registry.py: each check, declared once with its needs and remediation, flows everywhere: the runner,
skip_checks, bootstrap validation's skip list, docs/checks.md's table, the Prometheus series. The example check
below is declared here, as a family module declares its checks, and nothing else is touched."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.filter.checks import bootstrap_skip_checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _report as report
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks import registry


@pytest.fixture
def example_check():
    """Declares example_fan_speed (with a need of its own) for one test, then takes it out again."""
    saved = (list(registry.REGISTRY), dict(registry.BY_ID), dict(registry.CHECKS), dict(registry.NEEDS))

    @registry.need("fans")
    def need_fans(ctx):
        return None if "fans" in ctx.gathered else "the node reported no fans"

    @registry.check("example_fan_speed", ("warning",), "warning", "a fan turns slower than 1000 rpm", ("fans",),
                    registry.not_fixed("the role does not touch fans"), booted_node=True)
    def check_fan_speed(ctx):
        return [checks.finding(ctx.node, "example_fan_speed", "warning", fan, "fan %s turns at %d rpm" % (fan, rpm),
                               "replace fan %s" % fan) for fan, rpm in sorted(ctx.gathered["fans"].items()) if rpm < 1000]

    yield check_fan_speed
    registry.REGISTRY[:] = saved[0]
    for table, old in zip((registry.BY_ID, registry.CHECKS, registry.NEEDS), saved[1:]):
        table.clear()
        table.update(old)


def test_an_example_check_runs_when_its_need_is_met(example_check):
    found, ran, skipped = checks.check_node("n1", {"loaded": {"runtime_names": ["runc"]}, "fans": {"a": 900, "b": 4000}},
                                            [])
    assert [(f["check"], f["subject"]) for f in found] == [("example_fan_speed", "a")]
    assert "example_fan_speed" in ran
    _found, ran, skipped = checks.check_node("n1", {"loaded": {"runtime_names": ["runc"]}}, [])
    assert skipped["example_fan_speed"] == "the node reported no fans" and "example_fan_speed" not in ran


def test_an_example_check_is_a_skip_checks_id_and_in_the_bootstrap_skip_list(example_check):
    checks.validate_skip(["example_fan_speed"])
    _found, ran, skipped = checks.check_node("n1", {"loaded": {"runtime_names": ["runc"]}, "fans": {"a": 1}}, [],
                                             options={"skip_checks": ["example_fan_speed"]})
    assert skipped["example_fan_speed"] == "skip_checks"
    assert bootstrap_skip_checks(["cgroup_driver"]) == ["runtime_binary", "cdi_stale_spec", "example_fan_speed",
                                                        "cgroup_driver"]


def test_an_example_check_is_in_the_docs_table_and_the_metrics(example_check):
    row = checks.checks_table().splitlines()[-1]
    assert row == ("| `example_fan_speed` | warning | a fan turns slower than 1000 rpm | fans | "
                   "none: the role does not touch fans |")
    entry = report.node_entry("n1", [], checks_run=["example_fan_speed"])
    metrics = report.to_prometheus(report.build([entry]))
    assert 'gpurt_runtime_gate_findings{node="n1",check="example_fan_speed",severity="warning"} 0' in metrics


def test_without_the_example_the_registry_is_as_declared():
    assert "example_fan_speed" not in checks.BY_ID and "fans" not in checks.NEEDS
    assert bootstrap_skip_checks([]) == ["runtime_binary", "cdi_stale_spec"]


def test_every_check_says_what_the_remediation_role_does_about_it():
    for item in checks.REGISTRY:
        assert isinstance(item.remediation, registry.Remediation) and item.remediation.text, item.id
    assert checks.BY_ID["missing_handler"].remediation.fixed
    assert not checks.BY_ID["runtime_binary"].remediation.fixed


def test_every_error_check_is_fixed_by_the_role_or_says_why_not():
    """The closure table: an error the audit reports on a node is either fixed by the role (after the same
    proof) or its remediation says why not and what fixes it instead."""
    errors = [c for c in checks.REGISTRY if "error" in c.severities]
    assert len(errors) >= 10
    for item in errors:
        assert isinstance(item.remediation, registry.Remediation), item.id
        assert len(item.remediation.text) > 30, (item.id, item.remediation.text)
        if not item.remediation.fixed:
            assert any(w in item.remediation.text for w in ("`", "(", ";")), (item.id, item.remediation.text)
    for fixed in ("ignored_plugin_section", "file_loaded_drift", "cgroup_driver", "missing_handler"):
        assert checks.BY_ID[fixed].remediation.fixed, fixed
    assert "containerd_runtime_align_runc_cgroup" in checks.BY_ID["cgroup_driver"].remediation.text
    assert "gpurt_drain" in checks.BY_ID["cgroup_driver"].remediation.text
    table = checks.checks_table()
    for item in errors:
        assert str(item.remediation).split(": ", 1)[1][:40] in table, item.id


def test_a_check_is_declared_once_and_with_a_remediation():
    with pytest.raises(ValueError, match="missing_handler is declared twice"):
        registry.declare("missing_handler", ("error",), "error", "c", (), registry.not_fixed("x"))
    with pytest.raises(ValueError, match="declares no remediation"):
        registry.declare("x_check", ("error",), "error", "c", (), None)
    assert "x_check" not in checks.BY_ID


def test_every_check_is_declared_once_with_its_needs():
    assert len(checks.BY_ID) == len(checks.REGISTRY)
    for check in checks.REGISTRY:
        assert set(check.needs) <= set(checks.NEEDS), check.id
        assert set(check.severities) <= set(checks.SEVERITIES), check.id
        assert (check.run is None) == (check.modes == ("group",)), check.id
    assert sorted(checks.CHECKS) == sorted(checks.BY_ID)


def test_unknown_skip_id_raises():
    with pytest.raises(ValueError, match="unknown check id.*no_such"):
        checks.validate_skip(["missing_handler", "no_such"])
    checks.validate_skip(sorted(checks.CHECKS))
    checks.validate_skip(None)

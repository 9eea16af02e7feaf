import json
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import findings as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import report


def f(node, check, severity, subject="s", message=None):
    return checks.finding(node, check, severity, subject, message or "%s on %s" % (check, node), "fix " + check,
                          {"k": subject})


ALL_RUN = ["missing_handler", "dead_imports_glob", "default_runtime_blast_radius", "cdi_stale_spec"]


def entries(fail_on="error"):
    return [
        report.node_entry("ok-node", [], fail_on=fail_on, checks_run=ALL_RUN, runtimes=["runc", "nvidia"]),
        report.node_entry("warn-node", [f("warn-node", "dead_imports_glob", "warning", "/etc/c/*.toml")],
                          fail_on=fail_on, checks_run=ALL_RUN, runtimes=["runc"]),
        report.node_entry("err-node", [f("err-node", "missing_handler", "error", "nvidia"),
                                       f("err-node", "missing_handler", "error", "kata"),
                                       f("err-node", "default_runtime_blast_radius", "warning", "nvidia"),
                                       f("err-node", "cdi_stale_spec", "info", "/etc/cdi/x.yaml")],
                          fail_on=fail_on, checks_run=ALL_RUN, runtimes=["runc"]),
        report.node_entry("down-node", not_checked_reason="down-node: unreachable: ssh timeout", fail_on=fail_on),
    ]


class TestNodeEntry(object):
    def test_ok(self):
        e = report.node_entry("n", [], checks_run=["b", "a"], runtimes=["runc", "nvidia"])
        assert e["status"] == report.OK == "OK"
        assert e["failing"] is False
        assert e["counts"] == {"error": 0, "warning": 0, "info": 0}
        assert e["checks_run"] == ["a", "b"]
        assert e["runtimes"] == ["nvidia", "runc"]
        assert e["missing"] == [] and e["reason"] is None

    def test_findings(self):
        e = report.node_entry("n", [f("n", "dead_imports_glob", "warning"), f("n", "missing_handler", "error", "nvidia")])
        assert e["status"] == "FINDINGS"
        assert e["counts"] == {"error": 1, "warning": 1, "info": 0}
        assert e["missing"] == ["MISSING=nvidia"]
        assert [x["check"] for x in e["findings"]] == ["missing_handler", "dead_imports_glob"]  # errors first

    @pytest.mark.parametrize("fail_on", list(checks.FAIL_ON_CHOICES))
    def test_not_checked_is_never_ok_and_always_failing(self, fail_on):
        e = report.node_entry("n", not_checked_reason="gather failed", fail_on=fail_on)
        assert e["status"] == "NOT CHECKED"
        assert e["failing"] is True
        assert e["reason"] == "gather failed"
        assert e["runtimes"] is None

    def test_not_checked_wins_over_findings(self):
        e = report.node_entry("n", [f("n", "missing_handler", "error")], not_checked_reason="x", fail_on="none")
        assert e["status"] == "NOT CHECKED" and e["failing"] is True

    def test_empty_reason_still_not_checked(self):
        assert report.node_entry("n", not_checked_reason="")["status"] == "NOT CHECKED"

    @pytest.mark.parametrize("fail_on, severities, failing", [
        ("error", ["error"], True),
        ("error", ["warning", "info"], False),
        ("warning", ["warning"], True),
        ("warning", ["info"], False),
        ("info", ["info"], True),
        ("none", ["error", "warning", "info"], False),
        ("none", [], False),
    ])
    def test_fail_on_thresholds(self, fail_on, severities, failing):
        items = [f("n", "dead_imports_glob", s, subject=str(i)) for i, s in enumerate(severities)]
        assert report.node_entry("n", items, fail_on=fail_on)["failing"] is failing


class TestBuild(object):
    def test_summary(self):
        built = report.build(entries(), fail_on="error", runtimeclasses=[
            {"name": "nvidia", "handler": "nvidia"}, {"name": "a", "handler": "kata"}])
        assert built["summary"] == {"nodes": 4, "checked": 3, "ok": 1, "with_findings": 2, "not_checked": 1,
                                    "failing": 2, "findings": {"error": 2, "warning": 2, "info": 1}}
        assert list(built["nodes"]) == ["down-node", "err-node", "ok-node", "warn-node"]
        assert built["runtimeclasses"] == [("a", "kata"), ("nvidia", "nvidia")]
        assert built["fail_on"] == "error" and built["mode"] == "hosts" and built["format"] == 1

    def test_failing_count_follows_fail_on(self):
        assert report.build(entries("warning"), fail_on="warning")["summary"]["failing"] == 3
        assert report.build(entries("info"), fail_on="info")["summary"]["failing"] == 3
        # NOT CHECKED fails even at none
        assert report.build(entries("none"), fail_on="none")["summary"]["failing"] == 1

    def test_json_is_stable(self):
        first = report.to_json(report.build(entries()))
        second = report.to_json(report.build(list(reversed(entries()))))
        assert first == second
        doc = json.loads(first)
        assert doc["nodes"]["down-node"]["status"] == "NOT CHECKED"
        assert doc["nodes"]["err-node"]["missing"] == ["MISSING=kata", "MISSING=nvidia"]
        assert first.endswith("}\n")

    def test_json_stable_whatever_the_finding_order(self):
        items = [f("n", "missing_handler", "error", "b"), f("n", "dead_imports_glob", "warning"),
                 f("n", "missing_handler", "error", "a")]
        one = report.to_json(report.build([report.node_entry("n", items)]))
        two = report.to_json(report.build([report.node_entry("n", list(reversed(items)))]))
        assert one == two


class TestJunit(object):
    def parse(self, built):
        return ET.fromstring(report.to_junit(built).encode("utf-8"))

    def test_structure(self):
        root = self.parse(report.build(entries(), fail_on="error"))
        assert root.tag == "testsuites"
        suites = dict((s.get("name"), s) for s in root.findall("testsuite"))
        assert sorted(suites) == ["down-node", "err-node", "ok-node", "warn-node"]
        # OK: one passing testcase per check that ran
        ok = suites["ok-node"]
        assert sorted(c.get("name") for c in ok.findall("testcase")) == sorted(ALL_RUN)
        assert ok.findall("testcase/failure") == [] and ok.get("failures") == "0"
        # errors reach fail_on=error: one failure per failing check, lesser findings in system-out
        err = suites["err-node"]
        failures = [c for c in err.findall("testcase") if c.find("failure") is not None]
        assert [c.get("name") for c in failures] == ["missing_handler"]
        failure = failures[0].find("failure")
        assert failure.get("type") == "error"
        assert "kata" in failure.text and "nvidia" in failure.text
        outs = dict((c.get("name"), c.find("system-out").text) for c in err.findall("testcase")
                    if c.find("system-out") is not None)
        assert sorted(outs) == ["cdi_stale_spec", "default_runtime_blast_radius"]
        assert outs["default_runtime_blast_radius"].startswith("[warning] nvidia:")
        assert err.get("failures") == "1" and err.get("errors") == "0"
        # warnings alone do not fail at fail_on=error
        assert suites["warn-node"].findall("testcase/failure") == []
        # NOT CHECKED is an error
        down = suites["down-node"]
        assert [e.get("message") for e in down.findall("testcase/error")] == ["down-node: unreachable: ssh timeout"]
        assert down.get("errors") == "1"
        assert root.get("failures") == "1" and root.get("errors") == "1"
        assert int(root.get("tests")) == sum(len(s.findall("testcase")) for s in suites.values())

    def test_fail_on_warning_turns_warnings_into_failures(self):
        root = self.parse(report.build(entries("warning"), fail_on="warning"))
        suites = dict((s.get("name"), s) for s in root.findall("testsuite"))
        assert [c.get("name") for c in suites["warn-node"].findall("testcase") if c.find("failure") is not None] == [
            "dead_imports_glob"]
        assert root.get("failures") == "3"

    def test_fail_on_none_has_no_failures_but_keeps_errors(self):
        root = self.parse(report.build(entries("none"), fail_on="none"))
        assert root.findall(".//failure") == []
        assert len(root.findall(".//error")) == 1

    def test_markup_in_messages_is_escaped(self):
        items = [f("n<&>", "missing_handler", "error", 'x"<y>&', message='handler "<b>" & \'q\'\nline two')]
        root = self.parse(report.build([report.node_entry("n<&>", items, checks_run=["missing_handler"])]))
        failure = root.find(".//failure")
        assert failure.get("message") == 'handler "<b>" & \'q\'\nline two'
        assert root.find("testsuite").get("name") == "n<&>"

    def test_finding_of_a_check_not_in_checks_run_still_appears(self):
        e = report.node_entry("n", [f("n", "node_drift", "warning", "g")], checks_run=["missing_handler"])
        root = self.parse(report.build([e]))
        assert sorted(c.get("name") for c in root.iter("testcase")) == ["missing_handler", "node_drift"]


class TestSummaryLines(object):
    def test_lines(self):
        built = report.build(entries(), fail_on="error")
        lines = report.summary_lines(built, details=False)
        assert lines == [
            "down-node: NOT CHECKED (down-node: unreachable: ssh timeout)",
            "err-node: 4 findings (2 error, 1 warning, 1 info)",
            "ok-node: OK",
            "warn-node: 1 finding (1 warning)",
            "checked 3 of 4 node(s): 1 OK, 2 with findings, 1 not checked; 2 failing (fail_on=error)",
        ]

    def test_details(self):
        built = report.build(entries(), fail_on="error")
        lines = report.summary_lines(built)
        i = lines.index("warn-node: 1 finding (1 warning)")
        assert lines[i + 1] == "  [warning] dead_imports_glob: dead_imports_glob on warn-node"
        assert lines[i + 2] == "      fix: fix dead_imports_glob"
        assert len(lines) == 5 + 2 * 5

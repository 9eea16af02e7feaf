import json
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _report as report


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
                                    "failing": 2, "findings": {"error": 2, "warning": 2, "info": 1}, "passed": False}
        assert list(built["nodes"]) == ["down-node", "err-node", "ok-node", "warn-node"]
        assert built["runtimeclasses"] == [("a", "kata"), ("nvidia", "nvidia")]
        assert built["fail_on"] == "error" and built["mode"] == "hosts" and built["format"] == 2
        assert built["collection_version"] == "0.1.0" and built["run_failures"] == []

    def test_passed_needs_nodes_and_no_run_failure(self):
        ok = [report.node_entry("ok-node", [], checks_run=ALL_RUN)]
        assert report.build(ok)["summary"]["passed"] is True
        built = report.build(ok, run_failures=["no RuntimeClass was read"])
        assert built["summary"]["passed"] is False and built["run_failures"] == ["no RuntimeClass was read"]
        assert report.summary_lines(built, details=False)[-2] == "FAILED: no RuntimeClass was read"

    def test_collection_version_from_an_installed_manifest(self, tmp_path):
        (tmp_path / "MANIFEST.json").write_text(json.dumps({"collection_info": {"version": "1.2.3"}}))
        assert report.collection_version(str(tmp_path)) == "1.2.3"
        (tmp_path / "MANIFEST.json").unlink()
        (tmp_path / "galaxy.yml").write_text("namespace: gpurt\nversion: '0.9.1'\n")
        assert report.collection_version(str(tmp_path)) == "0.9.1"
        (tmp_path / "galaxy.yml").unlink()
        assert report.collection_version(str(tmp_path)) is None

    def test_node_carries_its_containerd_and_running_view(self):
        running = {"source": "crictl", "runtimes": ["nvidia", "runc"]}
        e = report.node_entry("n", [], checks_run=ALL_RUN, node_info={"containerd_version": "2.3.4", "running": running})
        doc = json.loads(report.to_json(report.build([e])))
        assert doc["nodes"]["n"]["containerd_version"] == "2.3.4"
        assert doc["nodes"]["n"]["running"] == running

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

    def cases(self, suite):
        return [(c.get("name"), [child.tag for child in c]) for c in suite.findall("testcase")]

    def test_structure(self):
        root = self.parse(report.build(entries(), fail_on="error"))
        assert root.tag == "testsuites"
        suites = dict((s.get("name"), s) for s in root.findall("testsuite"))
        assert sorted(suites) == ["down-node", "err-node", "ok-node", "warn-node"]
        # OK: one passing testcase per check that ran
        ok = suites["ok-node"]
        assert sorted(self.cases(ok)) == sorted((c, []) for c in ALL_RUN)
        assert ok.get("failures") == "0"
        # one testcase per finding: errors reaching fail_on=error fail, lesser ones pass with their text
        err = suites["err-node"]
        assert self.cases(err) == [
            ("[error] missing_handler: kata", ["failure"]),
            ("[error] missing_handler: nvidia", ["failure"]),
            ("[warning] default_runtime_blast_radius: nvidia", ["system-out"]),
            ("[info] cdi_stale_spec: /etc/cdi/x.yaml", ["system-out"]),
            ("dead_imports_glob", []),
        ]
        failure = err.find("testcase/failure")
        assert failure.get("type") == "error" and "kata" in failure.text and "fix: fix missing_handler" in failure.text
        outs = [c.find("system-out").text for c in err.findall("testcase") if c.find("system-out") is not None]
        assert outs[0].startswith("[warning] nvidia:")
        assert err.get("failures") == "2" and err.get("errors") == "0" and err.get("tests") == "5"
        # warnings alone do not fail at fail_on=error, but show in the testcase name
        assert [n for n, _c in self.cases(suites["warn-node"])][0] == "[warning] dead_imports_glob: /etc/c/*.toml"
        assert suites["warn-node"].findall("testcase/failure") == []
        # NOT CHECKED is an error
        down = suites["down-node"]
        assert [e.get("message") for e in down.findall("testcase/error")] == ["down-node: unreachable: ssh timeout"]
        assert down.get("errors") == "1"
        assert root.get("failures") == "2" and root.get("errors") == "1"
        assert int(root.get("tests")) == sum(len(s.findall("testcase")) for s in suites.values())
        props = dict((p.get("name"), p.get("value")) for p in ok.findall("properties/property"))
        assert props == {"status": "OK", "containerd_version": ""}

    def test_skipped_checks_are_skipped_testcases_never_passes(self):
        e = report.node_entry("n", [], checks_run=["missing_handler"],
                              checks_skipped={"cgroup_driver": "kubelet config /k is not YAML: x",
                                              "orphan_dropin": "skip_checks"})
        root = self.parse(report.build([e]))
        suite = root.find("testsuite")
        assert self.cases(suite) == [("missing_handler", []), ("cgroup_driver", ["skipped"]),
                                     ("orphan_dropin", ["skipped"])]
        assert suite.find("testcase/skipped").get("message") == "kubelet config /k is not YAML: x"
        assert suite.get("skipped") == "2" and root.get("skipped") == "2"

    def test_fail_on_warning_turns_warnings_into_failures(self):
        root = self.parse(report.build(entries("warning"), fail_on="warning"))
        suites = dict((s.get("name"), s) for s in root.findall("testsuite"))
        assert [c.get("name") for c in suites["warn-node"].findall("testcase") if c.find("failure") is not None] == [
            "[warning] dead_imports_glob: /etc/c/*.toml"]
        assert root.get("failures") == "4"

    def test_fail_on_none_has_no_failures_but_keeps_errors(self):
        root = self.parse(report.build(entries("none"), fail_on="none"))
        assert root.findall(".//failure") == []
        assert len(root.findall(".//error")) == 1

    def test_markup_in_messages_is_escaped(self):
        items = [f("n<&>", "missing_handler", "error", 'x"<y>&', message='handler "<b>" & \'q\'\nline two')]
        root = self.parse(report.build([report.node_entry("n<&>", items, checks_run=["missing_handler"])]))
        failure = root.find(".//failure")
        assert failure.get("message") == 'handler "<b>" & \'q\'\\nline two'
        assert root.find("testsuite").get("name") == "n<&>"

    @pytest.mark.parametrize("text", ["\x1b[31mnvidia\x1b[0m", "a\x00b\x01\x08\x0b\x0c\x7f", "\ud800x",
                                      u"\ufffe\uffff", "\x85\x9b"])
    def test_control_bytes_and_ansi_keep_the_xml_valid(self, text):
        items = [f("n" + text, "missing_handler", "error", text, message="handler %s missing" % text)]
        e = report.node_entry("n" + text, items, checks_run=["missing_handler"], fail_on="error",
                              checks_skipped={"cgroup_driver": "kubelet says " + text},
                              not_checked_reason=None)
        down = report.node_entry("down" + text, not_checked_reason="unreachable: " + text)
        xml = report.to_junit(report.build([e, down], run_failures=["no host " + text]))
        root = ET.fromstring(xml.encode("utf-8"))  # raises on invalid XML
        assert len(root.findall("testsuite")) == 3
        assert "\x1b" not in xml and "\x00" not in xml

    def test_run_failures_are_errors(self):
        root = self.parse(report.build([], run_failures=["no host to judge"]))
        assert [e.get("message") for e in root.iter("error")] == ["no host to judge"]
        assert root.get("errors") == "1"

    def test_finding_of_a_check_not_in_checks_run_still_appears(self):
        e = report.node_entry("n", [f("n", "node_drift", "warning", "g")], checks_run=["missing_handler"])
        root = self.parse(report.build([e]))
        assert sorted(c.get("name") for c in root.iter("testcase")) == ["[warning] node_drift: g", "missing_handler"]


class TestPrometheus(object):
    def samples(self, text):
        out = {}
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
        return out

    def test_metrics(self):
        text = report.to_prometheus(report.build(entries(), fail_on="error"))
        got = self.samples(text)
        assert got['gpurt_runtime_gate_node_status{node="ok-node",status="ok"}'] == 1
        assert got['gpurt_runtime_gate_node_status{node="ok-node",status="findings"}'] == 0
        assert got['gpurt_runtime_gate_node_status{node="down-node",status="not_checked"}'] == 1
        assert got['gpurt_runtime_gate_node_failing{node="err-node"}'] == 1
        assert got['gpurt_runtime_gate_node_failing{node="warn-node"}'] == 0
        assert got['gpurt_runtime_gate_findings{node="err-node",check="missing_handler",severity="error"}'] == 2
        assert got['gpurt_runtime_gate_findings{node="ok-node",check="missing_handler",severity="error"}'] == 0
        assert got['gpurt_runtime_gate_findings{node="err-node",check="cdi_stale_spec",severity="warning"}'] == 0
        # a check that did not run has no findings series (it is not a zero)
        assert not [k for k in got if 'node="ok-node",check="cgroup_driver"' in k]
        assert not [k for k in got if "findings{" in k and 'node="down-node"' in k]
        assert got['gpurt_runtime_gate_nodes{status="not_checked"}'] == 1
        assert got["gpurt_runtime_gate_run_passed"] == 0
        assert got['gpurt_runtime_gate_info{version="0.1.0",mode="hosts",fail_on="error"}'] == 1
        for family in ("node_status", "node_failing", "node_info", "findings", "check_skipped", "run_passed", "nodes",
                       "info"):
            assert "# TYPE gpurt_runtime_gate_%s gauge" % family in text
        assert text.endswith("\n")

    def test_node_info_carries_the_containerd_version(self):
        gathered = report.node_entry("gpu-1", [], checks_run=["missing_handler"],
                                     node_info={"containerd_version": "2.1.9"})
        listed = report.node_entry("gpu-2", [], checks_run=["missing_handler"],
                                   node_info={"containerd_version": "containerd://1.7.24-k3s1"})
        down = report.node_entry("gpu-3", not_checked_reason="unreachable")
        got = self.samples(report.to_prometheus(report.build([gathered, listed, down])))
        info = dict((k, v) for k, v in got.items() if k.startswith("gpurt_runtime_gate_node_info{"))
        assert info == {'gpurt_runtime_gate_node_info{node="gpu-1",containerd_version="2.1.9"}': 1,
                        'gpurt_runtime_gate_node_info{node="gpu-2",containerd_version="1.7.24-k3s1"}': 1,
                        'gpurt_runtime_gate_node_info{node="gpu-3",containerd_version=""}': 1}

    def test_label_values_are_escaped(self):
        e = report.node_entry('we"ird\\node\n', [], checks_run=["missing_handler"],
                              checks_skipped={"cgroup_driver": "x"})
        text = report.to_prometheus(report.build([e]))
        assert 'node="we\\"ird\\\\node\\\\n"' in text
        assert 'gpurt_runtime_gate_check_skipped{node="we\\"ird\\\\node\\\\n",check="cgroup_driver"} 1' in text
        assert len([l for l in text.splitlines() if l.startswith("gpurt_runtime_gate_node_failing")]) == 1


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
        assert lines[i + 1] == "  WARNING dead_imports_glob: dead_imports_glob on warn-node (fix: fix dead_imports_glob)"
        assert len(lines) == 5 + 5

    def test_readable_lines(self):
        """Issue 35 item 1: per node one line with its MISSING handlers, then each distinct error and warning
        once with its fix and the nodes it applies to, errors first; info and the skipped checks only with -v."""
        built = report.build(entries(), fail_on="error")
        built["nodes"]["err-node"]["checks_skipped"]["drift"] = "one node in its group"
        lines = report.readable_lines(built)
        assert lines[:4] == ["down-node: NOT CHECKED (down-node: unreachable: ssh timeout)",
                             "err-node: 4 findings (2 error, 1 warning, 1 info); MISSING=kata MISSING=nvidia",
                             "ok-node: OK", "warn-node: 1 finding (1 warning)"], lines
        assert [line.split(":")[0] for line in lines[4:8]] == [
            "ERROR missing_handler on err-node", "ERROR missing_handler on err-node",
            "WARNING dead_imports_glob on warn-node", "WARNING default_runtime_blast_radius on err-node"], lines
        assert lines[4].endswith("(fix: fix missing_handler)")
        assert not any(line.startswith(("INFO", "skipped")) for line in lines), lines
        assert "1 info finding(s) and the checks each node skipped not shown: run with -v to see them" in lines
        verbose = report.readable_lines(built, verbose=True)
        assert "INFO cdi_stale_spec on err-node: cdi_stale_spec on err-node (fix: fix cdi_stale_spec)" in verbose
        assert "skipped drift on err-node: one node in its group" in verbose
        assert not any("-v" in line for line in verbose)
        assert sum(1 for line in verbose if "missing_handler" in line) == 2  # each finding once

    def test_readable_lines_own_lines(self):
        """The failing nodes' lines are their failed tasks' (node_lines): here only the totals count them."""
        built = report.build(entries(), fail_on="error")
        lines = report.readable_lines(built, own_lines=True)
        assert lines[:2] == ["ok-node: OK", "warn-node: 1 finding (1 warning)"], lines
        result = report.result_of(built, [], own_lines=True)
        assert result["gpurt_summary_lines"] == lines
        assert result["node_lines"]["err-node"] == ("err-node: 4 findings (2 error, 1 warning, 1 info); "
                                                    "MISSING=kata MISSING=nvidia")

    def test_a_finding_alike_on_many_nodes_is_printed_once(self):
        """Issue 35 item 1: the same finding on 50 nodes (its node's name aside) is one line, with a count and
        a few names; a finding whose text differs beyond the node's name stays its own."""
        names = ["gpu-%03d" % i for i in range(50)]
        nodes = [report.node_entry(n, [checks.finding(n, "missing_handler", "error", "nvidia",
                                                      "the loaded containerd config of %s lacks nvidia" % n,
                                                      "register nvidia on %s" % n)]) for n in names]
        nodes.append(report.node_entry("gpu-0001", [checks.finding("gpu-0001", "missing_handler", "error", "nvidia",
                                                                   "/srv/gpu-0001/config.toml lacks nvidia", "x")]))
        lines = report.readable_lines(report.build(nodes), own_lines=True)
        assert lines == [
            "ERROR missing_handler on 50 nodes (gpu-000, gpu-001, gpu-002 and 47 more): the loaded containerd "
            "config of each node lacks nvidia (fix: register nvidia on each node)",
            "ERROR missing_handler on gpu-0001: /srv/gpu-0001/config.toml lacks nvidia (fix: x)",
            "checked 51 of 51 node(s): 0 OK, 51 with findings, 0 not checked; 51 failing (fail_on=error)"], lines


class TestCoverage(object):
    """Issue 9 item 3: the hosts of a run against the cluster's Nodes."""

    def test_hosts_without_a_node_object_and_nodes_no_host_covers(self):
        cov = report.coverage({"gpu-1": "gpu-1", "gpu-2": "gpu-2.ec2.internal", "gpu-3": "gpu-3x"},
                              ["gpu-1", "gpu-2", "gpu-3", "cpu-1", "cpu-2"], inventory_nodes=["cpu-2"])
        assert cov["nodes_listed"] is True and cov["cluster_nodes"] == 5
        assert cov["hosts_without_node"] == {"gpu-2": {"node_name": "gpu-2.ec2.internal", "closest": "gpu-2"},
                                             "gpu-3": {"node_name": "gpu-3x", "closest": "gpu-3"}}
        assert cov["nodes_not_checked"] == ["cpu-1", "cpu-2", "gpu-2", "gpu-3"]
        assert cov["nodes_not_checked_in_inventory"] == ["cpu-2"]
        lines = report.coverage_warnings(cov)
        assert lines[0].startswith("gpu-2: no Node object named gpu-2.ec2.internal in the cluster: its labels are unknown")
        assert lines[0].endswith("set gpurt_node_name to its Node's name (did you mean gpu-2?)")
        assert lines[2] == ("not checked: 4 of the cluster's 5 Node(s) are covered by no host of this run: cpu-1, cpu-2, "
                            "gpu-2, gpu-3; in the inventory but outside this run (host pattern or --limit): cpu-2")

    def test_no_node_list_says_so_and_invents_nothing(self):
        cov = report.coverage({"gpu-1": "gpu-1"}, None)
        assert cov == {"nodes_listed": False, "why": cov["why"]} and "were not listed" in cov["why"]
        built = report.build([report.node_entry("gpu-1", [])], coverage=cov)
        assert cov["why"] in report.summary_lines(built)
        root = ET.fromstring(report.to_junit(built).encode("utf-8"))
        case = root.find("testsuite[@name='coverage']/testcase")
        assert case.get("name") == "cluster Nodes" and case.find("skipped").get("message") == cov["why"]

    def test_long_lists_are_cut_in_lines_not_in_the_report(self):
        cov = report.coverage({}, ["n%03d" % i for i in range(30)])
        line = report.coverage_warnings(cov)[-1]
        assert line.endswith("n019 and 10 more (the report lists all)") and len(cov["nodes_not_checked"]) == 30

    def test_junit_coverage_suite(self):
        cov = report.coverage({"a": "a-x"}, ["b"])
        built = report.build([report.node_entry("a", [])], coverage=cov)
        suite = ET.fromstring(report.to_junit(built).encode("utf-8")).find("testsuite[@name='coverage']")
        cases = dict((c.get("name"), c) for c in suite.findall("testcase"))
        assert "no Node object named a-x" in cases["Node object of a"].find("system-out").text
        assert cases["Node b"].find("skipped").get("message") == "not checked: no host of the inventory stands for it"
        assert suite.get("skipped") == "1"


class TestOutcomes(object):
    """Issue 11 item 5: what a CI job reads first."""

    def test_outcome_of_a_judged_run(self):
        assert report.build([report.node_entry("a", [])])["outcome"] == "passed"
        assert report.build(entries())["outcome"] == "failed"
        assert report.build([report.node_entry("a", [])], run_failures=["x"])["outcome"] == "failed"
        assert report.build([])["summary"]["passed"] is False  # nothing judged never passes

    def test_a_not_judged_report_replaces_the_previous_one(self):
        built = report.not_judged("hosts")
        assert built["outcome"] == "not_judged" and built["nodes"] == {} and not built["summary"]["passed"]
        root = ET.fromstring(report.to_junit(built).encode("utf-8"))
        assert root.get("errors") == "1"
        assert root.find("testsuite/testcase/error").get("message").startswith("not judged: this report was written when")

    def test_write_replaces_whole_files(self, tmp_path):
        path = str(tmp_path / "d" / "r.json")
        report.write(path, "one\n")
        report.write(path, "two\n")
        assert open(path).read() == "two\n" and sorted(p.name for p in (tmp_path / "d").iterdir()) == ["r.json"]


class TestRemediationReport(object):
    def entries(self):
        rem = {"outcome": "changed", "changed": True, "msg": "wrote /etc/containerd/conf.d/zz-gpurt-nvidia.toml",
               "loaded_changes": ["runtimes.nvidia: (absent) -> {}"]}
        return [
            report.node_entry("a", [], extra={"remediation": rem}),
            report.node_entry("b", status=report.REFUSED, not_checked_reason="sandbox image: x -> y",
                              extra={"remediation": {"outcome": "refused", "reasons": ["sandbox image: x -> y"]}}),
            report.node_entry("c", status=report.FAILED, not_checked_reason="unreachable: ssh",
                              node_info={"unreachable": True}, extra={"remediation": {"outcome": "failed"}}),
            report.node_entry("d", status=report.NOT_PROCESSED, not_checked_reason="the rollout stopped after batch 2",
                              extra={"remediation": {"outcome": "not_processed"}}),
        ]

    def test_summary_lines_and_counts(self):
        built = report.build(self.entries(), mode="remediation", notes=["STOPPED: the rollout stopped after batch 2"])
        s = built["summary"]
        assert (s["refused"], s["failed"], s["not_processed"], s["changed"], s["failing"]) == (1, 1, 1, 1, 3)
        lines = report.summary_lines(built, details=True)
        assert lines[:2] == ["a: OK (wrote /etc/containerd/conf.d/zz-gpurt-nvidia.toml)",
                             "b: REFUSED (sandbox image: x -> y)"]
        assert "d: NOT PROCESSED (the rollout stopped after batch 2)" in lines
        assert lines[-2] == "STOPPED: the rollout stopped after batch 2"
        assert lines[-1] == ("remediation: 1 changed, 0 unchanged; re-audited 1 of 4 node(s): 1 OK, 0 with findings, "
                             "0 not checked, 1 refused, 1 failed, 1 not processed; 3 failing (fail_on=error)")
        assert built["nodes"]["c"]["unreachable"] is True

    def test_junit(self):
        built = report.build(self.entries(), mode="remediation")
        root = ET.fromstring(report.to_junit(built).encode("utf-8"))
        assert root.get("name") == "gpurt.runtime_gate remediation"
        assert (root.get("failures"), root.get("errors")) == ("1", "2")
        suites = dict((s.get("name"), s) for s in root.findall("testsuite"))
        assert "loaded change: runtimes.nvidia" in suites["a"].find("testcase[@name='remediation']/system-out").text
        assert suites["b"].find("testcase/failure").get("type") == "REFUSED"
        assert suites["d"].find("testcase/error").get("message") == "the rollout stopped after batch 2"

    def test_not_validated(self):
        entry = report.node_entry("bootstrap", status=report.NOT_VALIDATED, not_checked_reason="a; b",
                                  extra={"reasons": ["a", "b"]})
        built = report.build([entry], mode="bootstrap")
        assert built["summary"]["not_validated"] == 1 and entry["failing"]
        assert report.summary_lines(built)[-1].endswith("0 not checked, 1 not validated; 1 failing (fail_on=error)")
        failure = ET.fromstring(report.to_junit(built).encode("utf-8")).find("testsuite/testcase/failure")
        assert failure.text == "a\nb"
        with pytest.raises(ValueError):
            report.node_entry("x", status="BOGUS")

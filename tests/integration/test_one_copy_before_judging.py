"""Issue 35 item 2 on prevent.yml, crosscheck.yml and validate_bootstrap.yml: a run that stops before judging (a value
refused, no kubeconfig, an apiserver that refuses at 127.0.0.1:1) prints its reason once, on the summary's NOT JUDGED
line (the callback's, else a task's), then fails with a fixed short message; real ansible-playbook runs, the real
containerd loading validate_bootstrap's template."""
import json
import os

import pytest

from tests.integration.test_one_copy import REFUSING, assert_not_judged_once
from tests.integration.test_validate_bootstrap import bins, template_vars
from tests.lib import ansible_run

pytestmark = pytest.mark.integration
BAD_BOOL = "The value 'maybe' is not a valid boolean"
NO_KUBECONFIG = "no kubeconfig found"
REFUSED = "cannot connect to https://127.0.0.1:1"
CHECK = "Check the controller and the run's variables"
REPORTS = {"crosscheck": "crosscheck.json", "validate_bootstrap": "validate-bootstrap.json"}


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    base = tmp_path_factory.mktemp("before-judging")
    (base / "home").mkdir()
    (base / "refusing.kubeconfig").write_text(REFUSING)
    (base / "empty.cfg").write_text("[defaults]\n")
    (base / "dump.toml").write_text("version = 3\n")
    return base


def _run(place, name, variables, callback, kubeconfig=True):
    """NAME.yml on localhost with VARIABLES, the summary callback on or off (an ansible.cfg of nothing)."""
    env = {"HOME": str(place / "home")}
    if kubeconfig:
        env["KUBECONFIG"] = ""
    if not callback:
        env["ANSIBLE_CONFIG"] = str(place / "empty.cfg")
    return ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", name + ".yml"), "localhost,", variables,
                                extra_env=env)


def _variables(name, case, place, containerd):
    """The run's variables, the task the NOT JUDGED line names, and the reason printed once."""
    if name == "validate_bootstrap":
        variables = template_vars(gpurt_bootstrap_containerd_bins=bins(containerd))
        del variables["gpurt_runtimeclasses_src"]
        listing = "List the RuntimeClasses"
    elif name == "crosscheck":
        variables = {"gpurt_dump_file": str(place / "dump.toml")}
        listing = "List the RuntimeClasses"
    else:
        variables = {}
        listing = "List the RuntimeClasses and the Nodes once"
    if name in REPORTS:
        variables["gpurt_report_dir"] = str(place / ("reports-%s-%s" % (name, case.replace(" ", "-"))))
    if case == "bad bool":
        variables["gpurt_k8s_validate_certs"] = "maybe"
        return variables, CHECK, BAD_BOOL
    if case == "bad mode":
        variables["gpurt_admission_mode"] = "bogus"
        return (variables, "Validate the run's values before anything is read or written",
                "gpurt_admission_mode must be one of off, warn, deny (got 'bogus')")
    if case == "no dump":
        del variables["gpurt_dump_file"]
        return variables, "Require a dump file", "pass the dump: -e gpurt_dump_file=PATH"
    if case == "no source":
        for key in ("gpurt_bootstrap_template", "gpurt_bootstrap_files"):
            del variables[key]
        return variables, "Require a bootstrap source", "pass -e gpurt_bootstrap_template=FILE"
    if case == "refusing apiserver":
        variables["gpurt_kubeconfig"] = str(place / "refusing.kubeconfig")
        return variables, listing, REFUSED
    return variables, listing, NO_KUBECONFIG


CASES = [(name, case) for name in ("prevent", "crosscheck", "validate_bootstrap")
         for case in ("bad bool", "no kubeconfig", "refusing apiserver")]
CASES += [("prevent", "bad mode"), ("crosscheck", "no dump"), ("validate_bootstrap", "no source")]


@pytest.mark.parametrize("callback", [True, False])
@pytest.mark.parametrize("name, case", CASES)
def test_a_run_stopped_before_judging_says_why_once(place, containerd, name, case, callback):
    """The reason once (on the callback's NOT JUDGED line, else a task's), the fixed message at most twice (ansible-core
    2.19 prints a failure twice), one fatal line, exit 2, localhost charged, the report left not judged."""
    variables, task, why = _variables(name, case, place, containerd)
    run = _run(place, name, variables, callback)
    assert_not_judged_once(run, callback, task, why, "localhost", "localhost")
    if name in REPORTS:
        with open(os.path.join(variables["gpurt_report_dir"], REPORTS[name])) as handle:
            doc = json.load(handle)
        assert doc["outcome"] == "not_judged" and doc["nodes"] == {}, doc


# fleet_verdict.yml and fence.yml (issue 35's rule on the two playbooks it did not name): (variables, the task the
# NOT JUDGED line names, the reason printed once)
OTHERS = {
    ("fleet_verdict", "bad value"): ({"gpurt_slices_expected": "bogus"}, CHECK, "cannot be converted to an int"),
    ("fleet_verdict", "no slice count"): ({}, "Merge the slices and judge the fleet once",
                                          "expected_slices (gpurt_slices_expected) is required"),
    ("fence", "bad bool"): ({"gpurt_fence_nodes": ["gpu-a"], "gpurt_k8s_validate_certs": "maybe"}, CHECK, BAD_BOOL),
    ("fence", "no Nodes"): ({}, "Require the Nodes to fence", "gpurt_fence_nodes is required"),
    ("fence", "no kubeconfig"): ({"gpurt_fence_nodes": ["gpu-a"]}, "Fence the Nodes", NO_KUBECONFIG),
    ("fence", "refusing apiserver"): ({"gpurt_fence_nodes": ["gpu-a"], "gpurt_kubeconfig": "REFUSING"},
                                      "Fence the Nodes", REFUSED),
}


@pytest.mark.parametrize("callback", [True, False])
@pytest.mark.parametrize("name, case", sorted(OTHERS))
def test_fleet_verdict_and_fence_stopped_before_judging_say_why_once(place, name, case, callback):
    """As the playbooks above: the reason once, on the NOT JUDGED line, then the fixed short message; was three
    copies (the [ERROR] block, the fatal line, the summary's NOT JUDGED line)."""
    variables, task, why = OTHERS[(name, case)]
    variables = dict((key, str(place / "refusing.kubeconfig") if value == "REFUSING" else value)
                     for key, value in variables.items())
    run = _run(place, name, variables, callback)
    assert_not_judged_once(run, callback, task, why, "localhost", "localhost")


@pytest.mark.parametrize("callback", [True, False])
def test_a_refused_merge_says_why_once(place, callback):
    """Slices that cannot be merged: each reason once (the summary's FAILED line, else the Summary task's), the
    coverage unknown, the failed task's message fixed and short, exit 2."""
    reports = str(place / ("refused-merge-%s" % callback))
    run = _run(place, "fleet_verdict", {"gpurt_slices_expected": 2, "gpurt_slice_reports": [str(place / "dump.toml")],
                                        "gpurt_report_dir": reports}, callback, kubeconfig=False)
    assert run.rc == 2 and "Traceback" not in run.text, run
    for why in ("expected 2 slice(s), got 0: 2 slice(s) missing", "dump.toml is not an audit report"):
        assert run.out.count(why) == 1, run
    assert run.out.count("coverage unknown: the slices were not merged") == 1, run
    fixed = "the slices could not be merged, so the gate fails: the summary's FAILED line says why"
    assert 1 <= run.out.count(fixed) <= 2 and run.out.count("fatal: [localhost]: FAILED! => ") == 1, run
    assert max(len(line) for line in run.out.splitlines()) < 700, run
    with open(os.path.join(reports, "audit.json")) as handle:
        assert json.load(handle)["outcome"] == "failed"

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
    env = {"HOME": str(place / "home"), "KUBECONFIG": ""}
    if not callback:
        env["ANSIBLE_CONFIG"] = str(place / "empty.cfg")
    run = ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", name + ".yml"), "localhost,", variables,
                               extra_env=env)
    assert_not_judged_once(run, callback, task, why, "localhost", "localhost")
    if name in REPORTS:
        with open(os.path.join(variables["gpurt_report_dir"], REPORTS[name])) as handle:
            doc = json.load(handle)
        assert doc["outcome"] == "not_judged" and doc["nodes"] == {}, doc

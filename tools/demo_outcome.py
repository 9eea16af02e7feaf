"""The last line of `make demo`: what the demo's remediation ended with, read from its report and the exit code of
ansible-playbook, so that it names the real cause (a refusal that stopped the rollout is not a node that fails its
re-audit).

    python3 tools/demo_outcome.py REPORT_JSON EXIT_CODE
"""
import json
import sys


def _names(nodes, status):
    return sorted(name for name, entry in nodes.items() if entry.get("status") == status)


def _hosts(names):
    return ", ".join(names) + (" were" if len(names) > 1 else " was")


def cause(report, rc):
    """Why the run ended with exit code rc, in one line."""
    if rc == 0:
        return "every node passed"
    if rc == 4:
        return "a node could not be reached"
    if not report or report.get("outcome") == "not_judged" or rc != 2:
        return "ansible-playbook stopped before judging the nodes: its last lines say why"
    nodes = report.get("nodes") or {}
    refused, failed = _names(nodes, "REFUSED"), _names(nodes, "FAILED")
    skipped = _names(nodes, "NOT PROCESSED")
    reaudit = sorted(name for name, entry in nodes.items() if entry.get("failing") and entry.get("status") in (
        None, "FINDINGS", "NOT CHECKED"))
    parts = []
    if refused:
        parts.append("%s REFUSED (nothing written; the reason is on its line above)" % _hosts(refused))
    if failed:
        parts.append("%s FAILED (its line above says at which step)" % _hosts(failed))
    line = "; ".join(parts)
    if skipped:
        line += ", which stopped the rollout, so %s NOT PROCESSED" % _hosts(skipped)
    if reaudit:
        verb = " fail" if len(reaudit) > 1 else " fails"
        line += "%s%s its re-audit" % ("; " if line else "", ", ".join(reaudit) + verb)
    for reason in report.get("run_failures") or []:
        line += "%s%s" % ("; " if line else "", reason)
    return line or "the remediation failed: the RUNTIME GATE lines say why"


def main(argv):
    path, rc = argv[1], int(argv[2])
    try:
        with open(path) as handle:
            report = json.load(handle)
    except (IOError, OSError, ValueError):
        report = None
    print("== remediation exit code %d (%s; reports in %s)" % (rc, cause(report, rc), path.rsplit("/", 1)[0] + "/"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A finding and its one formatter: what a check reports, as data and as one printable line."""

import re

SEVERITIES = ("error", "warning", "info")
FAIL_ON_CHOICES = SEVERITIES + ("none",)


class NotRun(Exception):
    """A check could not run on this node; the message says why (reported as skipped)."""


# --- text: one line, printable, valid in XML ---------------------------------------------

_UNPRINTABLE = re.compile(u"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


def one_line(text):
    """text with every control character (newline, ESC of ANSI sequences, ...) shown as an
    escape, so that a handler named "a\\nOK" can never print a line of its own, and the text is
    valid in XML 1.0."""
    if text is None:
        return ""
    text = text if isinstance(text, str) else str(text)

    def escape(match):
        char = match.group(0)
        known = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
        if char in known:
            return known[char]
        code = ord(char)
        return "\\x%02x" % code if code < 0x100 else "\\u%04x" % code
    return _UNPRINTABLE.sub(escape, text)


# --- findings ----------------------------------------------------------------------------

def finding(node, check, severity, subject, message, fix, evidence=None):
    return {
        "node": node,
        "check": check,
        "severity": severity,
        "subject": subject,
        "message": message,
        "fix": fix,
        "evidence": evidence or {},
    }


def sort_findings(items):
    rank = dict((s, i) for i, s in enumerate(SEVERITIES))
    return sorted(items, key=lambda f: (f["node"], rank[f["severity"]], f["check"], f["subject"], f["message"]))


def reaches(severity, fail_on):
    """Whether a finding of severity fails a run whose threshold is fail_on."""
    if fail_on == "none":
        return False
    return SEVERITIES.index(severity) <= SEVERITIES.index(fail_on)


def finding_line(item, with_node=False, nodes=None):
    """The one formatter of a finding as a line: `ERROR check: message (fix: fix)`; the audit,
    crosscheck, the re-audit and the summary callback all print findings with it. nodes: the nodes
    a finding found alike on each applies to, named after the check (a count and a few names)."""
    where = " " + on_nodes(nodes) if nodes else ""
    line = "%s %s%s: %s (fix: %s)" % (item["severity"].upper(), item["check"], where, one_line(item["message"]),
                                      one_line(item["fix"]))
    return on_node(item["node"], line) if with_node else line


# Nodes named in a line about many (a finding, a group's drift) before "and N more".
SHOWN_NODES = 3


def on_nodes(nodes):
    """`on node-1`, or `on 50 nodes (a, b, c and 47 more)`: what a line about many nodes says of them (the
    reports list every node)."""
    if len(nodes) == 1:
        return "on %s" % one_line(nodes[0])
    shown = ", ".join(one_line(n) for n in nodes[:SHOWN_NODES])
    more = len(nodes) - SHOWN_NODES
    return "on %d nodes (%s%s)" % (len(nodes), shown, " and %d more" % more if more > 0 else "")


def names_text(names, shown=SHOWN_NODES):
    """A list of names as text: all of them up to `shown`, else the first ones and how many more."""
    names = [one_line(n) for n in names]
    if len(names) <= shown:
        return ", ".join(names)
    return "%s and %d more (the report lists all)" % (", ".join(names[:shown]), len(names) - shown)


def missing_lines(findings):
    """The seed lab's contract: one MISSING=<handler> line per missing handler."""
    return sorted(set("MISSING=%s" % one_line(f["subject"]) for f in findings if f["check"] == "missing_handler"))


def not_checked_line(reason):
    return "NOT CHECKED: %s" % one_line(reason)


def on_node(node, line):
    """A line of one node's, prefixed with its name: the one shape of `node: line`."""
    return "%s: %s" % (one_line(node), line)

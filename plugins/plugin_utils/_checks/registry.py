# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry of checks and of what they need from a node. A family module declares each
check once, next to its function (``@check(...)``), and each need it adds (``@need(...)``); the
runner, skip_checks, bootstrap validation's skip list and docs/checks.md's table read them here."""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks import model

# The options every judging action takes (audit_report, rollout's re-audit, runtime_check).
JUDGE_SPEC = dict(
    pod_requests=dict(type="dict"),
    kubelet_cgroup_driver=dict(type="str", choices=["systemd", "cgroupfs"]),
    skip_checks=dict(type="list", elements="str", default=[]),
    fail_on=dict(type="str", default="error", choices=list(model.FAIL_ON_CHOICES)),
)


class Remediation(object):
    """What the remediation role (containerd_runtime) does about a check's findings: the fix it
    applies, or why it applies none."""

    def __init__(self, fixed, text):
        self.fixed = fixed
        self.text = text

    def __str__(self):
        return "%s: %s" % ("fixes" if self.fixed else "none", self.text)


def fixed_by(text):
    return Remediation(True, text)


def not_fixed(why):
    return Remediation(False, why)


class Check(object):
    """One check, declared once: id, what it needs, its function, its severity rule, and what the
    remediation role does about it.

    needs: names of NEEDS; modes: "hosts" (a gathered node), "cluster" (a Node object's
    status.runtimeHandlers), "group" (across the nodes of an inventory group); booted_node: it
    judges what only a booted node has (binaries, CDI specs), so bootstrap validation skips it;
    fires_below: the (major, minor) of containerd from which on nothing causes it.
    """

    def __init__(self, check_id, severities, severity_rule, condition, needs, run, modes=("hosts",),
                 remediation=None, booted_node=False, fires_below=None):
        self.id = check_id
        self.severities = tuple(severities)
        self.severity_rule = severity_rule
        self.condition = condition
        self.needs = tuple(needs)
        self.run = run
        self.modes = tuple(modes)
        self.remediation = remediation
        self.booted_node = booted_node
        self.fires_below = fires_below

    def fires_on(self, version):
        """Whether anything on containerd (major, minor) can cause this check's findings."""
        return self.fires_below is None or tuple(version) < tuple(self.fires_below)


# In declaration order: the families are imported in a fixed order (the package's __init__), so
# docs/checks.md's table and the Prometheus series keep theirs.
REGISTRY = []
BY_ID = {}
CHECKS = {}
# need name -> function(ctx) returning None when the node has it, else why not
NEEDS = {}


def register(item):
    if item.id in BY_ID:
        raise ValueError("check %s is declared twice" % item.id)
    if not isinstance(item.remediation, Remediation):
        raise ValueError("check %s declares no remediation (fixed_by or not_fixed)" % item.id)
    REGISTRY.append(item)
    BY_ID[item.id] = item
    CHECKS[item.id] = item.condition
    return item


def declare(check_id, severities, severity_rule, condition, needs, remediation, modes=("hosts",), run=None, **more):
    """A check that the runner does not call itself (node_drift: audit.add_drift judges a group)."""
    return register(Check(check_id, severities, severity_rule, condition, needs, run, modes, remediation, **more))


def check(check_id, severities, severity_rule, condition, needs, remediation, modes=("hosts",), **more):
    """Decorator: declares the function below as check check_id; the function stays as it is."""
    def declared(run):
        declare(check_id, severities, severity_rule, condition, needs, remediation, modes, run, **more)
        return run
    return declared


def need(name):
    """Decorator: declares what a check may need from a node; the function says why it is not there."""
    def declared(function):
        if name in NEEDS:
            raise ValueError("need %s is declared twice" % name)
        NEEDS[name] = function
        return function
    return declared


def check_ids(mode=None):
    return [c.id for c in REGISTRY if mode is None or mode in c.modes]


def validate_skip(skip):
    unknown = sorted(set(skip or []) - set(BY_ID))
    if unknown:
        raise ValueError("unknown check id(s) in skip_checks: %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(BY_ID))))


def booted_node_checks():
    """The checks that judge what only a booted node has: bootstrap validation skips them."""
    return [c.id for c in REGISTRY if c.booted_node]

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's own drop-ins: their names and marker line. Who owns any other file is decided from the
node's evidence (plugin_utils/_ownership_decision, applied by ownership_gate)."""

OWN_MARKER = "# Managed by gpurt.runtime_gate"
CRI_FILE = "gpurt_cri"  # '_' cannot occur in a runtime name (a DNS label), so it never collides


def own_name(opts, runtime):
    """The role's drop-in for one runtime: <prefix>gpurt-<runtime><suffix>."""
    return "%sgpurt-%s%s" % (opts["dropin_prefix"], runtime, opts["dropin_suffix"])


def own_cri_name(opts):
    """The role's drop-in for CRI-wide keys (2.x), or for the whole CRI section (1.x)."""
    return "%s%s%s" % (opts["dropin_prefix"], CRI_FILE, opts["dropin_suffix"])


def is_own(content):
    return content is not None and content.lstrip().startswith(OWN_MARKER)


def header(lines):
    return "\n".join([OWN_MARKER + ".containerd_runtime; edits here are overwritten."] +
                     ["# " + line for line in lines]) + "\n"

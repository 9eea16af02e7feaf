# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbooks' one vocabulary: which gpurt_* variables each playbook reads
(playbooks/vars/argument_specs.yml), a warning naming the closest known name for one no playbook
reads, an error for a name a playbook no longer reads, and the spec that
ansible.builtin.validate_argument_spec checks the values against. Controller only; standard
library and PyYAML (which ansible-core ships)."""

import difflib
import os

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _safe_yaml as safe_yaml
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._collection import COLLECTION_ROOT

SPEC_PATH = os.path.join(COLLECTION_ROOT, "playbooks", "vars", "argument_specs.yml")
PREFIX = "gpurt_"
# Set by the playbooks themselves (registered results, facts); seen when one ansible-playbook run
# chains playbooks, so never a user's typo.
INTERNAL = frozenset((
    "gpurt_runtimeclasses", "gpurt_nodes", "gpurt_loaded", "gpurt_report", "gpurt_audit_matched",
    "gpurt_crosscheck", "gpurt_bootstrap", "gpurt_bootstrap_root", "gpurt_bootstrap_rendered",
    "gpurt_bootstrap_loaded", "gpurt_bootstrap_check", "gpurt_gate_nodes", "gpurt_live_runtimeclasses",
    "gpurt_runtimeclass_gate", "gpurt_reaudit_result", "gpurt_audit_failing", "gpurt_audit_judged_on",
    "gpurt_audit_run_failures", "gpurt_label_failures",
))
# The top-level key of an audit run's set_stats artifact is this prefix and the run's id (AWX merges the
# artifacts of a workflow node's parents, every slice of a sliced job, by top-level key): fleet_verdict.yml
# reads every variable so named.
ARTIFACT_PREFIX = "gpurt_audit_slice_"
# Only what validate_argument_spec reads of an option (descriptions stay out of its error output).
_VALIDATED_KEYS = ("type", "elements", "choices", "aliases", "no_log", "required", "default", "options")


class SpecError(ValueError):
    pass


def load(path=SPEC_PATH):
    import yaml  # controller only: ansible-core ships PyYAML
    try:
        with open(path) as handle:
            doc = safe_yaml.safe_load(handle)
    except (IOError, OSError) as exc:
        raise SpecError("cannot read the playbooks' argument specs %s: %s" % (path, exc.strerror or exc))
    except yaml.YAMLError as exc:
        raise SpecError("cannot parse the playbooks' argument specs %s: %s" % (path, exc))
    if not isinstance(doc, dict) or not isinstance(doc.get("argument_specs"), dict):
        raise SpecError("%s has no argument_specs mapping" % path)
    return doc


def playbooks(doc):
    return sorted(doc["argument_specs"])


def options(doc, playbook):
    try:
        return doc["argument_specs"][playbook]["options"]
    except KeyError:
        raise SpecError("no argument spec for playbook %r (known: %s)" % (playbook, ", ".join(playbooks(doc))))


def known_names(doc):
    """Every variable some playbook reads, with the documented aliases."""
    names = set()
    for entry in doc["argument_specs"].values():
        for name, spec in (entry.get("options") or {}).items():
            names.add(name)
            names.update((spec or {}).get("aliases") or [])
    return names


def validation_options(specs):
    """{name: spec} as ansible's argument spec validation takes it: descriptions left out."""
    return dict((name, dict((k, v) for k, v in (spec or {}).items() if k in _VALIDATED_KEYS))
                for name, spec in specs.items())


def validation_spec(doc, playbook):
    """The playbook's options as ansible.builtin.validate_argument_spec takes them."""
    return validation_options(options(doc, playbook))


def closest(name, candidates):
    found = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.75)
    return found[0] if found else None


def unknown_warnings(doc, defined):
    """A warning for each gpurt_* variable no playbook reads, naming the closest known one."""
    known = known_names(doc)
    out = []
    for name in sorted(set(defined)):
        if not name.startswith(PREFIX) or name in known or name in INTERNAL or name.startswith(ARTIFACT_PREFIX):
            continue
        near = closest(name, [k for k in known if k.startswith(PREFIX)])
        out.append("unknown variable %s: no gpurt.runtime_gate playbook reads it%s" % (
            name, "; did you mean %s?" % near if near else ""))
    return out


def retired_errors(doc, playbook, defined):
    """An error for each name this playbook read before it had the gpurt_* vocabulary."""
    retired = (doc.get("retired") or {}).get(playbook) or {}
    return ["%s is not read any more by %s.yml: set %s instead" % (old, playbook, retired[old])
            for old in sorted(set(defined) & set(retired))]


def check(playbook, defined, doc=None):
    """(warnings, errors, spec for validate_argument_spec) of a run of `playbook` whose variables
    are named `defined`. The spec holds the options the run sets (by name or alias): the others
    have nothing to validate (none is required), and validate_argument_spec prints the whole spec
    it was given when a value is wrong."""
    doc = doc if doc is not None else load()
    defined = set(defined)
    spec = dict((name, option) for name, option in validation_spec(doc, playbook).items()
                if name in defined or defined & set(option.get("aliases") or []))
    return unknown_warnings(doc, defined), retired_errors(doc, playbook, defined), spec

"""Module documentation as ansible-doc renders it (fragments included), compared with what a
module takes (an argument spec) and what it returns (a real result)."""
import json
import os
import re
import subprocess

from tests.lib import ansible_run

NAMESPACE = "gpurt.runtime_gate"
MODULES_DIR = os.path.join(ansible_run.REPO, "plugins", "modules")
ACTIONS_DIR = os.path.join(ansible_run.REPO, "plugins", "action")

# Keys every module may return without documenting them ("Common return values" of the Ansible
# docs, and what the executor adds to a result).
COMMON_RETURN = frozenset(("changed", "failed", "skipped", "msg", "invocation", "warnings", "deprecations",
                           "diff", "exception", "skip_reason", "unreachable", "_ansible_no_log",
                           "_ansible_verbose_always", "_ansible_delegated_vars", "ansible_facts",
                           # the run's custom stats, as ansible.builtin.set_stats returns them (audit_report's artifact)
                           "ansible_stats"))


def module_names():
    return sorted(name[:-3] for name in os.listdir(MODULES_DIR) if name.endswith(".py") and name != "__init__.py")


def action_names():
    """The collection's action plugins (plugins/action/*.py)."""
    return sorted(name[:-3] for name in os.listdir(ACTIONS_DIR) if name.endswith(".py"))


def load_docs(names=None):
    """{module: ansible-doc's JSON (doc, return, ...)} for every module of the collection."""
    names = names or module_names()
    proc = subprocess.run([os.path.join(ansible_run.BIN, "ansible-doc"), "-t", "module", "-j"]
                          + ["%s.%s" % (NAMESPACE, name) for name in names],
                          env=ansible_run.env(), cwd=ansible_run.REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    docs = json.loads(proc.stdout)
    return dict((fqcn.rsplit(".", 1)[1], doc) for fqcn, doc in docs.items())


def _normalized(options, nested):
    """{name: comparable fields} of options, those under each option's `nested` key included."""
    out = {}
    for name, option in (options or {}).items():
        out[name] = {
            "type": option.get("type", "str"),
            "elements": option.get("elements"),
            "default": option.get("default"),
            "choices": sorted(option["choices"]) if option.get("choices") is not None else None,
            "required": bool(option.get("required", False)),
            "aliases": sorted(option.get("aliases") or []),
            "suboptions": _normalized(option[nested], nested) if option.get(nested) else None,
        }
    return out


def normalized_spec(spec):
    """The comparable fields of an argument spec (suboptions under `options`)."""
    return _normalized(spec, "options")


def normalized_doc_options(options):
    """The same fields from the options of ansible-doc's JSON (suboptions under `suboptions`)."""
    return _normalized(options, "suboptions")


def undocumented_keys(result, documented, where=""):
    """Paths of the keys of a result (recursively, where RETURN says what a dict or list of dicts
    contains) that its RETURN does not document."""
    missing = []
    for key, value in result.items():
        path = "%s.%s" % (where, key) if where else key
        if not where and key in COMMON_RETURN:
            continue
        if key not in documented:
            missing.append(path)
            continue
        contains = documented[key].get("contains")
        if not contains:
            continue
        if isinstance(value, dict):
            missing.extend(undocumented_keys(value, contains, path))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, dict):
                    missing.extend(undocumented_keys(item, contains, "%s[%d]" % (path, index)))
    return sorted(set(_unindexed(p) for p in missing))


def _unindexed(path):
    return re.sub(r"\[\d+\]", "[]", path)

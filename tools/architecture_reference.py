"""Regenerate docs/architecture.md's map of the tree: every plugin directory and file with its one-line
job, taken from the file itself (a Python file's docstring, a module's or filter's short_description,
a playbook's or rulebook's leading comment), so the page cannot name a file that is gone or miss a new one;
and the unit tests of the checks, one file per _checks module (test_checks_<module>.py), each with what it covers,
so a check family without its tests stops the generator.

    python3 tools/architecture_reference.py          rewrite the map (files:start / files:end) and the checks'
                                                     tests (check-tests:start / check-tests:end)
    python3 tools/architecture_reference.py --check  exit 1 when either is stale
"""
import ast
import glob
import json
import os
import re
import sys

import yaml

import doc_sections

DOC = os.path.join(doc_sections.REPO, "docs", "architecture.md")
COMMAND = "python3 tools/architecture_reference.py"

# Each directory of the map and the side its code runs on. A directory that holds code and is not here
# stops the generator: say where the new room's code runs first.
ROOMS = (
    ("plugins/modules", "node (or docs of an action plugin)"),
    ("plugins/action", "controller"),
    ("plugins/module_utils", "node; the controller imports it too"),
    ("plugins/module_utils/_k8s", "wherever its module runs (node or controller)"),
    ("plugins/plugin_utils", "controller"),
    ("plugins/plugin_utils/_checks", "controller"),
    ("plugins/plugin_utils/_remediation", "controller"),
    ("plugins/plugin_utils/_report", "controller"),
    ("plugins/plugin_utils/_gate_watch", "controller (the event source)"),
    ("plugins/filter", "controller"),
    ("plugins/callback", "controller"),
    ("plugins/doc_fragments", "docs only"),
    ("extensions/eda/plugins/event_source", "controller (ansible-rulebook)"),
    ("extensions/eda/rulebooks", "controller (ansible-rulebook)"),
    ("extensions/ee", "AWX / Automation Controller"),
    ("extensions/monitoring", "Prometheus and Grafana"),
    ("playbooks", "controller, and the nodes its plays target"),
    ("playbooks/plays", "controller, and the nodes its plays target"),
    ("playbooks/tasks", "the nodes remediate.yml drains"),
    ("playbooks/files", "the cluster"),
    ("playbooks/vars", "controller"),
    ("roles", "the nodes"),
)
_CODE = (".py", ".yml", ".yaml", ".json")
# A sentence ends at ". " (not after e.g. or i.e.); a list that follows a colon ends it too.
_SENTENCE_END = re.compile(r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?])\s+|:\s+-\s|:$")


_LONG = 160


def _first_sentence(text):
    """The job in one line: the first sentence, or its head before a colon when the sentence is long."""
    text = " ".join((text or "").split())
    sentence = _SENTENCE_END.split(text, 1)[0].strip()
    head = sentence.split(": ", 1)[0]
    return head if len(sentence) > _LONG and len(head) >= 20 else sentence


def _comment_block(text):
    """The leading comment of a YAML file, up to its first blank comment line or a line that ends in a colon."""
    lines = []
    for line in text.splitlines():
        if line.strip() == "---" and not lines:
            continue
        if not line.startswith("#"):
            break
        body = line[1:].strip()
        if not body:
            if lines:
                break
            continue
        lines.append(body)
        if body.endswith(":"):
            break
    return " ".join(lines)


def _short_description(text):
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return ""
    return (doc or {}).get("short_description", "") if isinstance(doc, dict) else ""


def python_job(path):
    with open(path) as handle:
        tree = ast.parse(handle.read())
    doc = ast.get_docstring(tree)
    if doc:
        return _first_sentence(doc)
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["DOCUMENTATION"]:
            return _first_sentence(_short_description(node.value.value))
    return ""


def yaml_job(path):
    with open(path) as handle:
        text = handle.read()
    try:
        doc = next(yaml.safe_load_all(text), None)
    except yaml.YAMLError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("DOCUMENTATION"), dict):
        return _first_sentence(doc["DOCUMENTATION"].get("short_description", ""))
    return _first_sentence(_comment_block(text))


def json_job(path):
    with open(path) as handle:
        return _first_sentence(json.load(handle).get("description", ""))


def role_job(role_dir):
    with open(os.path.join(role_dir, "meta", "argument_specs.yml")) as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    return _first_sentence(specs["main"].get("short_description", ""))


def entries(room):
    """[(name, job)] of the files (or roles) of one room, sorted."""
    root = os.path.join(doc_sections.REPO, room)
    if room == "roles":
        return [(name + "/", role_job(os.path.join(root, name))) for name in sorted(os.listdir(root))]
    out = []
    for path in sorted(glob.glob(os.path.join(root, "*"))):
        name = os.path.basename(path)
        if not os.path.isfile(path) or not name.endswith(_CODE):
            continue
        if name.endswith(".py"):
            job = python_job(path)
        elif name.endswith(".json"):
            job = json_job(path)
        else:
            job = yaml_job(path)
        out.append((name, job))
    return out


def unmapped_rooms():
    """Directories under plugins/, extensions/ and playbooks/ that hold code and are not a room."""
    known = set(room for room, _side in ROOMS)
    out = []
    for top in ("plugins", "extensions", "playbooks"):
        for directory, dirs, files in os.walk(os.path.join(doc_sections.REPO, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            rel = os.path.relpath(directory, doc_sections.REPO)
            if rel not in known and any(f.endswith(_CODE) for f in files):
                out.append(rel)
    return sorted(out)


def files_map():
    """The generated section: one table per room, one row per file, and the files that lack a job."""
    parts, jobless = [], []
    for room, side in ROOMS:
        rows = entries(room)
        parts.append("**`%s/`** (%s)\n\n| file | job |\n|---|---|" % (room, side))
        for name, job in rows:
            if not job:
                jobless.append("%s/%s" % (room, name))
            parts[-1] += "\n| `%s` | %s |" % (name, job.replace("|", "\\|"))
    return "\n\n".join(parts), jobless


CHECKS = "plugins/plugin_utils/_checks"
CHECK_TESTS = "tests/unit/plugins/plugin_utils"
_DECLARES_A_CHECK = re.compile(r"^(@check|declare)\(", re.M)


def check_tests():
    """The section of the checks' unit tests: a row per test_checks_<module>.py (its module, what it covers), and
    the problems: a family module (one that declares a check) without its test file, a test file of no module."""
    modules = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(doc_sections.REPO, CHECKS, "*.py")))
    rows, problems = ["| code | its unit tests | what they cover |", "|---|---|---|"], []
    for module in modules:
        with open(os.path.join(doc_sections.REPO, CHECKS, module + ".py")) as handle:
            family = _DECLARES_A_CHECK.search(handle.read())
        test = "%s/test_checks_%s.py" % (CHECK_TESTS, module)
        if not os.path.exists(os.path.join(doc_sections.REPO, test)):
            if family:
                problems.append("%s/%s.py declares checks and has no %s" % (CHECKS, module, test))
            continue
        prefix = "_checks/%s.py: " % module
        with open(os.path.join(doc_sections.REPO, test)) as handle:
            covers = " ".join((ast.get_docstring(ast.parse(handle.read())) or "").split())
        if not covers.startswith(prefix):
            problems.append("%s's docstring does not begin with %r" % (test, prefix))
        rows.append("| `_checks/%s.py` | `%s` | %s |" % (module, test, covers[len(prefix):].replace("|", "\\|")))
    for path in sorted(glob.glob(os.path.join(doc_sections.REPO, CHECK_TESTS, "test_checks_*.py"))):
        module = os.path.basename(path)[len("test_checks_"):-3]
        if module not in modules:
            problems.append("%s tests no module of %s" % (os.path.relpath(path, doc_sections.REPO), CHECKS))
    return "\n".join(rows), problems


def main():
    rooms = unmapped_rooms()
    if rooms:
        sys.exit("code in directories %s has no room in tools/architecture_reference.py ROOMS" % ", ".join(rooms))
    body, jobless = files_map()
    if jobless:
        sys.exit("these files say no job (a docstring, short_description or leading comment): %s"
                 % ", ".join(jobless))
    tests, problems = check_tests()
    if problems:
        sys.exit("the checks' unit tests: %s" % "; ".join(problems))
    doc_sections.update(DOC, "files", body, COMMAND)
    doc_sections.update(DOC, "check-tests", tests, COMMAND)


if __name__ == "__main__":
    main()

"""The docs a user reads: the README stays a first page, every relative link of README.md and
docs/*.md resolves in the checkout, docs/checks.md's generated table is the check registry, and every
variable a playbook reads is in docs/variables.md's generated table."""
import glob
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _playbook_inputs as inputs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
# [text](target) outside code: inline links only (the docs use no reference-style links).
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def relative_links(path):
    with open(path) as handle:
        text = FENCE.sub("", handle.read())
    text = re.sub(r"`[^`\n]*`", "", text)
    return [target for target in LINK.findall(text) if not re.match(r"^[a-z][a-z0-9+.-]*:|^#", target)]


@pytest.mark.parametrize("path", PAGES, ids=[os.path.relpath(p, REPO) for p in PAGES])
def test_every_relative_link_resolves(path):
    missing = [target for target in relative_links(path)
               if not os.path.exists(os.path.join(os.path.dirname(path), target.split("#")[0]))]
    assert not missing, "%s links to what the checkout lacks: %s" % (os.path.relpath(path, REPO), missing)


def test_the_link_finder_sees_links():
    """The README's reading list is links; a finder that matched none would pass every page."""
    readme = relative_links(PAGES[0])
    assert "docs/checks.md" in readme and "docs/awx.md" in readme, readme
    assert relative_links(os.path.join(REPO, "docs", "ci.md")), "docs/ci.md links awx.md and monitoring.md"


def test_readme_is_a_first_page():
    with open(os.path.join(REPO, "README.md")) as handle:
        lines = handle.read().splitlines()
    assert len(lines) <= 200, "README.md has %d lines: reference goes to docs/" % len(lines)
    for words in ("issue ", "phase ", "this round"):
        assert not [l for l in lines if words in l.lower()], "project-history wording in README.md: %r" % words


def test_checks_page_table_is_the_registry():
    with open(os.path.join(REPO, "docs", "checks.md")) as handle:
        text = handle.read()
    start, end = "<!-- checks:start -->\n", "\n<!-- checks:end -->"
    assert start in text and end in text, "docs/checks.md lacks the generated check table markers"
    assert text[text.index(start) + len(start):text.index(end)] == checks.checks_table(), (
        "docs/checks.md's check table is stale: run python3 tools/checks_reference.py")
    for check in checks.REGISTRY:
        assert "| `%s` |" % check.id in text, check.id


def test_checks_reference_check_mode_agrees():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "checks_reference.py"), "--check"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout


# ---- every variable a playbook reads is documented --------------------------------------------------

PLAYBOOKS = os.path.join(REPO, "playbooks")
VARIABLE = re.compile(r"\bgpurt_[a-z0-9_]+\b")
# Keys whose values are Jinja expressions without braces.
RAW_JINJA = ("when", "that", "failed_when", "changed_when", "until", "loop")


def _names_in(node, key, read, defined):
    """Walk a playbook: the gpurt_* names its expressions read, and those it sets itself (register, set_fact,
    vars, loop_var, the groups add_host and group_by make)."""
    if isinstance(node, dict):
        for name, value in node.items():
            if name == "register" and isinstance(value, str):
                defined.add(value)
            elif name in ("ansible.builtin.set_fact", "set_fact", "vars") and isinstance(value, dict):
                defined.update(value)
            elif name == "loop_control" and isinstance(value, dict) and value.get("loop_var"):
                defined.add(value["loop_var"])
            elif name in ("ansible.builtin.add_host", "ansible.builtin.group_by") and isinstance(value, dict):
                defined.update(str(value.get(k)) for k in ("groups", "key") if value.get(k))
            _names_in(value, name, read, defined)
    elif isinstance(node, list):
        for item in node:
            _names_in(item, key, read, defined)
    elif isinstance(node, str):
        if key in RAW_JINJA:
            read.update(VARIABLE.findall(node))
        for expression in re.findall(r"\{\{(.*?)\}\}|\{%(.*?)%\}", node, re.S):
            read.update(VARIABLE.findall(" ".join(expression)))


def playbook_reads():
    """The gpurt_* variables the playbooks (playbooks/**/*.yml) read and do not set themselves."""
    import yaml
    read, defined = set(), set()
    for path in sorted(glob.glob(os.path.join(PLAYBOOKS, "**", "*.yml"), recursive=True)):
        if os.path.basename(path) != "argument_specs.yml":
            with open(path) as handle:
                _names_in(yaml.safe_load(handle), None, read, defined)
    return read - defined - inputs.INTERNAL


def test_every_variable_a_playbook_reads_is_in_its_argument_spec():
    """What a playbook reads and no spec lists would be warned about as unknown, and left out of the docs' table."""
    read = playbook_reads()
    assert {"gpurt_kubeconfig", "gpurt_bootstrap_template", "gpurt_drain_options", "gpurt_fail_on"} <= read, read
    assert "gpurt_report" not in read and "gpurt_remediate_failing" not in read, "set by the playbooks themselves"
    missing = sorted(read - inputs.known_names(inputs.load()))
    assert not missing, "playbooks read variables playbooks/vars/argument_specs.yml lacks: %s" % missing


def test_every_playbook_variable_is_in_the_docs():
    """Each variable of playbooks/vars/argument_specs.yml (and each its playbooks read) is named in docs/."""
    text = ""
    for path in PAGES[1:]:
        with open(path) as handle:
            text += handle.read()
    names = inputs.known_names(inputs.load()) | playbook_reads()
    undocumented = sorted(n for n in names if n.startswith("gpurt_") and "`%s`" % n not in text)
    assert not undocumented, "variables no page of docs/ names: %s" % undocumented


def test_variables_table_is_the_argument_specs():
    with open(os.path.join(REPO, "docs", "variables.md")) as handle:
        text = handle.read()
    start, end = "<!-- variables:start -->\n", "\n<!-- variables:end -->"
    assert start in text and end in text, "docs/variables.md lacks the generated variables table markers"
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "variables_reference.py"), "--check"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    for name in ("gpurt_host_root", "gpurt_bootstrap_template", "gpurt_bootstrap_vars", "gpurt_dump_file"):
        assert "| `%s`" % name in text, name


def test_every_docs_page_is_linked_from_another_page():
    """Issue 35: docs/output.md was linked from nowhere: a page no other page links is a page nobody finds."""
    linked = set()
    for path in PAGES:
        for target in relative_links(path):
            full = os.path.normpath(os.path.join(os.path.dirname(path), target.split("#")[0]))
            if full != path:
                linked.add(full)
    orphans = sorted(os.path.relpath(p, REPO) for p in PAGES[1:] if p not in linked)
    assert not orphans, "pages no other page links: %s" % orphans


def test_no_paragraph_starts_mid_sentence():
    """Issue 35: a paragraph of docs/variables.md started with the end of a sentence ('[architecture.md](...)):
    one retry...'). A paragraph that closes a parenthesis it never opened starts mid-sentence (code left out)."""
    broken = []
    for path in PAGES:
        with open(path) as handle:
            text = re.sub(r"`[^`]*`", "", FENCE.sub("\n", handle.read()))
        for paragraph in re.split(r"\n\s*\n", text):
            depth = 0
            for char in paragraph:
                depth += {"(": 1, ")": -1}.get(char, 0)
                if depth < 0:
                    broken.append("%s: %s" % (os.path.relpath(path, REPO), paragraph.strip()[:80]))
                    break
    assert not broken, broken


def test_the_readme_counts_the_demo_nodes():
    """Issue 35: the README said the demo has three nodes; it has four (inventory/demo/hosts.yml)."""
    with open(os.path.join(REPO, "README.md")) as handle:
        said = re.findall(r"`make demo` audits and then repairs (\w+) demo nodes", " ".join(handle.read().split()))
    with open(os.path.join(REPO, "inventory", "demo", "hosts.yml")) as handle:
        inventory = yaml.safe_load(handle)

    def hosts(group):
        found = set((group or {}).get("hosts") or {})
        for child in ((group or {}).get("children") or {}).values():
            found |= hosts(child)
        return found
    words = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
    assert len(said) == 1 and words.get(said[0]) == len(hosts(inventory["all"])) == 4, said

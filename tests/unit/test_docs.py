"""The docs a user reads: the README stays a first page, every relative link of README.md and
docs/*.md resolves in the checkout, and docs/checks.md's generated table is the check registry."""
import glob
import os
import re
import subprocess
import sys

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks

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

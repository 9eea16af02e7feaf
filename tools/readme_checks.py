"""Regenerate README.md's check table from the check registry (plugins/plugin_utils/findings.py).

    python3 tools/readme_checks.py          rewrite the table between the checks:start / checks:end markers
    python3 tools/readme_checks.py --check  exit 1 when the README's table is stale
"""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(REPO, ".collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "gpurt", "runtime_gate")
if not os.path.exists(LINK):  # as tests/conftest.py does: this checkout as the collection
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(os.path.relpath(REPO, os.path.dirname(LINK)), LINK)
sys.path.insert(0, COLLECTIONS)
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import findings  # noqa: E402

START, END = "<!-- checks:start -->\n", "\n<!-- checks:end -->"


def main():
    path = os.path.join(REPO, "README.md")
    with open(path) as handle:
        text = handle.read()
    if START not in text or END not in text:
        sys.exit("README.md lacks the %r and %r markers" % (START.strip(), END.strip()))
    head, rest = text.split(START, 1)
    _old, tail = rest.split(END, 1)
    new = head + START + findings.readme_table() + END + tail
    if "--check" in sys.argv[1:]:
        sys.exit(0 if new == text else "README.md's check table is stale: run python3 tools/readme_checks.py")
    if new != text:
        with open(path, "w") as handle:
            handle.write(new)


if __name__ == "__main__":
    main()

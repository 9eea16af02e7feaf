"""Generated sections of the docs: the text between two markers, rewritten or checked by a tool
(tools/checks_reference.py, tools/metrics_reference.py), and this checkout made importable as the
collection so the tools build the text with the collection's own code."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def import_collection():
    """Make ansible_collections.gpurt.runtime_gate importable from this checkout (as tests/conftest.py does)."""
    collections = os.path.join(REPO, ".collections")
    link = os.path.join(collections, "ansible_collections", "gpurt", "runtime_gate")
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.relpath(REPO, os.path.dirname(link)), link)
    if collections not in sys.path:
        sys.path.insert(0, collections)


def update(path, name, body, command):
    """Put body between the `<!-- NAME:start -->` and `<!-- NAME:end -->` lines of path; with --check
    on the command line, only exit 1 when the file's section differs, naming the command to run (and return
    when it is current, so a tool may check several sections)."""
    start, end = "<!-- %s:start -->\n" % name, "\n<!-- %s:end -->" % name
    with open(path) as handle:
        text = handle.read()
    shown = os.path.relpath(path, REPO)
    if start not in text or end not in text:
        sys.exit("%s lacks the %r and %r markers" % (shown, start.strip(), end.strip()))
    head, rest = text.split(start, 1)
    _old, tail = rest.split(end, 1)
    new = head + start + body + end + tail
    if "--check" in sys.argv[1:]:
        if new != text:
            sys.exit("%s's %s section is stale: run %s" % (shown, name, command))
        return
    if new != text:
        with open(path, "w") as handle:
            handle.write(new)

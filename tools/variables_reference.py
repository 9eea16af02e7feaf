"""Regenerate docs/variables.md's table of every playbook input from playbooks/vars/argument_specs.yml.

    python3 tools/variables_reference.py          rewrite the table between the variables:start / variables:end markers
    python3 tools/variables_reference.py --check  exit 1 when the table is stale
"""
import os

import doc_sections

doc_sections.import_collection()
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _playbook_inputs as inputs  # noqa: E402

DOC = os.path.join(doc_sections.REPO, "docs", "variables.md")


def _cell(text):
    return " ".join(str(text).split()).replace("|", "\\|")


def _type(spec):
    kind = spec.get("type") or "str"
    return "list of %s" % spec["elements"] if kind == "list" and spec.get("elements") else kind


def table(doc=None):
    """One row per variable: the playbooks that read it, its type and what it is (each distinct description
    once, prefixed with the playbooks it belongs to when they differ)."""
    doc = doc or inputs.load()
    by_name = {}
    for playbook in inputs.playbooks(doc):
        for name, spec in inputs.options(doc, playbook).items():
            by_name.setdefault(name, []).append((playbook, spec or {}))
    rows = ["| variable | read by | type | what it is |", "|---|---|---|---|"]
    for name in sorted(by_name):
        entries = by_name[name]
        aliases = sorted(set(a for _p, spec in entries for a in spec.get("aliases") or []))
        shown = "`%s`" % name + ("" if not aliases else " (alias %s)" % ", ".join("`%s`" % a for a in aliases))
        texts = []
        for playbook, spec in entries:
            text = _cell(spec.get("description") or "")
            for item in texts:
                if item[1] == text:
                    item[0].append(playbook)
                    break
            else:
                texts.append(([playbook], text))
        what = texts[0][1] if len(texts) == 1 else " ".join(
            "%s: %s" % (", ".join(playbooks), text) for playbooks, text in texts)
        kinds = sorted(set(_type(spec) for _p, spec in entries))
        readers = [p for p, _s in entries]
        readers = "every playbook" if readers == inputs.playbooks(doc) else ", ".join(readers)
        rows.append("| %s | %s | %s | %s |" % (shown, readers, " or ".join(kinds), what))
    return "\n".join(rows)


def main():
    doc_sections.update(DOC, "variables", table(), "python3 tools/variables_reference.py")


if __name__ == "__main__":
    main()

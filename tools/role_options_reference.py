"""Regenerate docs/remediation.md's table of the containerd_runtime role's options from the one place they
are declared, roles/containerd_runtime/meta/argument_specs.yml.

    python3 tools/role_options_reference.py          rewrite the table between the role-options markers
    python3 tools/role_options_reference.py --check  exit 1 when the table is stale
"""
import json
import os
import re

import yaml

import doc_sections

SPEC = os.path.join(doc_sections.REPO, "roles", "containerd_runtime", "meta", "argument_specs.yml")
DOC = os.path.join(doc_sections.REPO, "docs", "remediation.md")
# ansible-doc markup as Markdown: O(x), C(x), V(x) as code; M(x) as the module's name.
_MARKUP = re.compile(r"\b[OCVMP]\(([^)]*)\)")


def _text(value):
    lines = value if isinstance(value, list) else [value]
    return _MARKUP.sub(r"`\1`", " ".join(" ".join(str(line).split()) for line in lines)).replace("|", "\\|")


def _default(option):
    if "default" not in option or option["default"] is None:
        return ""
    return "`%s`" % json.dumps(option["default"], separators=(", ", ": "))


def options_table(path=SPEC):
    with open(path) as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    rows = ["| variable | type | default | what it does |", "|---|---|---|---|"]
    for name in sorted(options):
        option = options[name]
        kind = option.get("type", "str")
        if kind == "list" and option.get("elements"):
            kind = "list of %s" % option["elements"]
        rows.append("| `%s` | %s | %s | %s |" % (name, kind, _default(option), _text(option.get("description", ""))))
    return "\n".join(rows)


def main():
    doc_sections.update(DOC, "role-options", options_table(), "python3 tools/role_options_reference.py")


if __name__ == "__main__":
    main()

"""Issue 35 item 3: no message leaves a placeholder unfilled. Every string literal of plugins/ and
extensions/ with a `{name}` placeholder is filled where it is written (str.format, str.format_map,
str.replace of that very placeholder) or is not a message (a URL path template filled by its one reader,
listed here with it; tests/unit/plugins/module_utils/test_k8s_session.py proves a 404 on it prints no
placeholder)."""
import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
# path templates, each filled by .replace("{namespace}", ...) in the one function that builds a URL
FILLED_ELSEWHERE = {("plugins/module_utils/_k8s/resources.py", "/api/v1/namespaces/{namespace}/configmaps")}


def _sources():
    for top in ("plugins", "extensions"):
        for folder, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    yield os.path.relpath(path, ROOT), path


def _unfilled(tree):
    filled = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("format", "format_map") and isinstance(node.func.value, ast.Constant):
                filled.add(id(node.func.value))
            if node.func.attr == "replace" and node.args and isinstance(node.args[0], ast.Constant):
                filled.add(("replaced", node.args[0].value))
                filled.add(id(node.args[0]))  # the placeholder it fills
    docstrings = set()
    for node in ast.walk(tree):
        # ansible-doc's blocks are documentation, not messages (they may show a generator's ${PLACEHOLDER})
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in ("DOCUMENTATION", "EXAMPLES", "RETURN")
                                                for t in node.targets):
            docstrings.add(id(node.value))
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docstrings:
            continue
        if id(node) in filled:
            continue
        left = [p for p in PLACEHOLDER.findall(node.value) if ("replaced", p) not in filled]
        if left:
            yield node.lineno, node.value


def test_no_message_template_leaves_a_placeholder_unfilled():
    found = []
    for rel, path in _sources():
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        for line, text in _unfilled(tree):
            if (rel, text) not in FILLED_ELSEWHERE:
                found.append("%s:%d: %r" % (rel, line, text[:120]))
    assert found == [], "\n".join(found)

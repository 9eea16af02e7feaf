"""docs/architecture.md is the tree's map: its file tables are generated from the files themselves
(tools/architecture_reference.py), and every path, module attribute and name its hand-written parts
show in backticks exists in the tree, so the page cannot drift from the code unnoticed."""
import ast
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(REPO, "docs", "architecture.md")
CODE_DIRS = ("plugins", "extensions", "playbooks", "roles", "tools")
_PATH = re.compile(r"[\w./-]+\.(py|yml|yaml|md)|[\w./-]+/")
_DOTTED = re.compile(r"_?\w+(\.\w+)+")
_NAME = re.compile(r"([A-Z][A-Z0-9_]{2,})|(\w+)\(\)")
_NOT_PYTHON = ("gpurt.", "ansible.", "kubernetes.", "io.", "runtime-gate", "containerd.", "status.", "meta/")


def tree_files():
    out = []
    for top in CODE_DIRS:
        for directory, dirs, files in os.walk(os.path.join(REPO, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            out.append(directory)
            out.extend(os.path.join(directory, f) for f in files)
    return out


def hand_written_references(text):
    """The backticked tokens of the page outside its generated section."""
    text = re.sub(r"<!-- files:start -->.*<!-- files:end -->", "", text, flags=re.S)
    return sorted(set(t.rstrip("()").strip() if t.endswith("()") and "." in t else t
                      for t in re.findall(r"`([^`\n]+)`", text)))


def _defines(path, name):
    """Whether a module (or package) path defines or imports name at top level, or has it as a submodule."""
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, name + ".py")) or os.path.isdir(os.path.join(path, name)):
            return True
        path = os.path.join(path, "__init__.py")
    with open(path) as handle:
        body = ast.parse(handle.read()).body
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name.split(".")[-1]) == name for a in node.names):
            return True
    return False


def unresolved(tokens, files):
    by_name = {}
    for path in files:
        by_name.setdefault(os.path.basename(path), []).append(path)
    source = "\n".join(open(p).read() for p in files if p.endswith(".py"))
    out = []
    for token in tokens:
        if _PATH.fullmatch(token):
            if not (os.path.exists(os.path.join(REPO, token)) or os.path.basename(token.rstrip("/")) in by_name):
                out.append(token)
        elif _DOTTED.fullmatch(token) and not token.startswith(_NOT_PYTHON):
            module, attr = token.split(".")[0], token.split(".")[-1]
            where = by_name.get(module + ".py", []) + [p for p in by_name.get(module, []) if os.path.isdir(p)]
            if not any(_defines(p, attr) for p in where):
                out.append(token)
        elif _NAME.fullmatch(token):
            name = token.rstrip("()")
            if not re.search(r"^\s*(def|class)\s+%s\b|^\s*%s\s*=" % (name, name), source, re.M):
                out.append(token)
    return out


def test_every_code_reference_of_the_page_exists():
    with open(PAGE) as handle:
        tokens = hand_written_references(handle.read())
    missing = unresolved(tokens, tree_files())
    assert not missing, "docs/architecture.md names what the tree lacks: %s" % missing


def test_the_reference_check_sees_a_stale_name():
    """A renamed constant, a gone module attribute and a gone file are each caught."""
    files = tree_files()
    assert unresolved(["HOST_VARS", "_node_gather.no_such_step", "plugins/action/gone.py"], files) == [
        "HOST_VARS", "_node_gather.no_such_step", "plugins/action/gone.py"]
    assert unresolved(["NODE_OPTIONS", "_node_gather.gather", "_remediation.options", "plugins/action/"], files) == []


def test_generated_file_map_is_current():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "tools", "architecture_reference.py"), "--check"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout

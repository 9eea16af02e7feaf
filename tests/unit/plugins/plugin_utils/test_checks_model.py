"""_checks/model.py: a finding and its one formatter: severities, and one printable line whatever the input."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from tests.lib.check_inputs import missing, rc


def test_reaches():
    assert checks.reaches("error", "error") and not checks.reaches("warning", "error")
    assert checks.reaches("warning", "warning") and checks.reaches("error", "info")
    assert not any(checks.reaches(s, "none") for s in checks.SEVERITIES)


@pytest.mark.parametrize("text, shown", [
    ("nvidia\nOK", "nvidia\\nOK"),
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("a\x00b\x7f\x85c", "a\\x00b\\x7f\\x85c"),
    ("tab\there\r", "tab\\there\\r"),
    (u"line\u2028sep\ufffe", "line\\u2028sep\\ufffe"),
    (u"gr\u00fc\u00df", u"gr\u00fc\u00df"),
])
def test_one_line_escapes_every_control_character(text, shown):
    assert checks.one_line(text) == shown
    assert "\n" not in checks.one_line(text)


def test_a_handler_with_a_newline_never_prints_a_line_of_its_own():
    out = missing(["runc"], [rc("x", handler="nv\nOK")])
    assert checks.missing_lines(out) == ["MISSING=nv\\nOK"]
    line = checks.finding_line(out[0])
    assert "\n" not in line and line.startswith("ERROR missing_handler: RuntimeClass x asks for handler 'nv\\nOK'")
    assert line.endswith("(fix: register runtime 'nv\\nOK' in containerd (role gpurt.runtime_gate.containerd_runtime))")
    assert checks.finding_line(out[0], with_node=True).startswith("n1: ERROR missing_handler: ")

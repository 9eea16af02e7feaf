"""_checks/context.py: what one node's checks read: the RuntimeClasses whose nodeSelector can land on it."""
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks


def test_yaml_typed_label_values_match_string_selectors():
    # An inventory's `gpu: true` / `zone: 1` arrive as bool / int; Kubernetes labels are strings.
    assert checks.selector_matches({"gpu": "true", "zone": "1"}, {"gpu": True, "zone": 1})[0] is True
    assert checks.selector_matches({"gpu": "true"}, {"gpu": False})[0] is False

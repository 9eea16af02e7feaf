# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's safe YAML load, with libyaml when PyYAML has it (ansible-core ships PyYAML)."""


def safe_load(stream):
    """yaml.safe_load of a text or an open file; raises yaml.YAMLError as it does. libyaml takes an
    exact str only, not ansible's subclasses of it (AnsibleUnsafeText on ansible-core 2.16)."""
    import yaml
    if isinstance(stream, str):
        stream = str(stream)
    return yaml.load(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

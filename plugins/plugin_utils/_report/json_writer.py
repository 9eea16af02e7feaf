# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report as JSON (sorted keys, so two runs diff cleanly)."""

import json


def to_json(report):
    return json.dumps(report, indent=2, sort_keys=True) + "\n"

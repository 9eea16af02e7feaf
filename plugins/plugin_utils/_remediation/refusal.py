# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Refusal: the node is refused before anything is written, with the reasons."""


class Refusal(ValueError):
    """The node is refused before anything is written; ``reasons`` says why, line by line."""

    def __init__(self, reasons):
        self.reasons = [reasons] if isinstance(reasons, str) else list(reasons)
        super(Refusal, self).__init__("; ".join(self.reasons))

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate between runs, as pure logic for the event source (extensions/eda): `signals` reads what a
Node says (its live handlers, its verified labels, what changed), `watcher` decides what to fence at
once, what to re-audit once a Node is stable, and how many re-audits run at a time."""

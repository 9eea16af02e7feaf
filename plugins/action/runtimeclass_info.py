# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""runtimeclass_info on the controller without a module start when it can (plugin_utils/_listing_action)."""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._listing_action import ListingAction


class ActionModule(ListingAction):
    NAME = "runtimeclass_info"

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which admission plugins a kube-apiserver ran, read from its own metrics (GET /metrics, the Prometheus text
format). Its stable histogram apiserver_admission_controller_admission_duration_seconds has a series per plugin
(label name), operation and step (type: admit or validate) once that plugin handled a request of that operation
since the apiserver started; a plugin that is off never has one. kube-apiserver's RuntimeClass plugin handles
every create (it returns at once for anything but a Pod), so once any create passed admission it is there or
it is off."""

import re

FAMILY = "apiserver_admission_controller_admission_duration_seconds"
RUNTIMECLASS_PLUGIN = "RuntimeClass"
_COUNT = FAMILY + "_count{"
_NAMED = 3  # plugins a message names
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _labels(text):
    return dict((name, re.sub(r"\\(.)", r"\1", value)) for name, value in _LABEL.findall(text))


def plugins_seen(text):
    """{plugin name: sorted operations it handled} from a /metrics answer; None when the answer has no
    admission metrics at all (not a kube-apiserver's, or its metrics cut)."""
    seen, family = {}, False
    for line in text.splitlines():
        if line.startswith("#"):
            family = family or line.split()[2:3] == [FAMILY]  # its # HELP or # TYPE line
            continue
        if not line.startswith(FAMILY):
            continue
        family = True
        if not line.startswith(_COUNT):
            continue
        labels = _labels(line[len(_COUNT):line.rfind("}")])
        name = labels.get("name")
        if name:
            seen.setdefault(name, set()).add(labels.get("operation", ""))
    if not family:
        return None
    return dict((name, sorted(operations)) for name, operations in seen.items())


def runtimeclass_verdict(seen):
    """(enforced, why) for the RuntimeClass plugin from plugins_seen(): True when it ran; False when another
    plugin handled a create and it did not (it is off); None when no create has passed this apiserver's
    admission yet, or it has no admission metrics (unknown)."""
    if seen is None:
        return None, "its /metrics has no %s (kube-apiserver's stable admission metrics)" % FAMILY
    if RUNTIMECLASS_PLUGIN in seen:
        return True, "its admission metrics show the %s plugin handling %s" % (
            RUNTIMECLASS_PLUGIN, ", ".join(op for op in seen[RUNTIMECLASS_PLUGIN] if op) or "requests")
    creators = sorted(name for name, operations in seen.items() if "CREATE" in operations)
    if creators:
        more = len(creators) - _NAMED
        named = ", ".join(creators[:_NAMED]) + (" and %d more" % more if more > 0 else "")
        return False, ("its admission metrics show creates handled by %d other plugin(s) (%s) but never by the %s "
                       "plugin" % (len(creators), named, RUNTIMECLASS_PLUGIN))
    return None, "its admission metrics show no create handled by any plugin since it started"

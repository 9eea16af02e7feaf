# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Family: handlers. A RuntimeClass handler that can land on the node against its loaded runtimes."""

import difflib

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.model import finding
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.registry import check, fixed_by


# Names of real runtimes: a missing one is missing, not a typo of its neighbour
# (crun is not a misspelt runc, runsc not a misspelt runc, nvidia-cdi not a misspelt nvidia).
KNOWN_HANDLERS = frozenset([
    "runc", "crun", "runsc", "gvisor", "youki", "kata", "nvidia", "nvidia-cdi", "nvidia-legacy",
    "nvidia-experimental", "wasmtime", "wasmedge", "spin", "slight", "lunatic", "sysbox-runc",
])


def edit_distance(a, b):
    """Optimal string alignment distance (a transposition counts as one edit)."""
    previous2 = None
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[len(b)]


def suggestion(handler, loaded, asked=()):
    """The loaded runtime a typo'd handler most likely meant, or None.

    Only a close name (at most two edits, similar overall), never a runtime that a
    RuntimeClass able to land here asks for itself, and never for a handler that is the name
    of a real runtime: NVIDIA's nvidia-cdi is not a misspelt nvidia, crun not a misspelt runc.
    """
    if handler in KNOWN_HANDLERS or handler.startswith("kata-"):
        return None
    candidates = sorted(n for n in loaded if n and n not in asked and n != handler)
    close = [n for n in candidates if edit_distance(handler, n) <= 2]
    matches = difflib.get_close_matches(handler, close, n=1, cutoff=0.6)
    return matches[0] if matches else None


def misspelt_loaded(handler, loaded):
    """The loaded runtime that is most likely a misspelling of `handler`, or None: the other
    direction of suggestion(), for a RuntimeClass that asks for a real runtime's name (`nvidia`)
    on a node whose containerd loads a close name that is no real runtime's (`nvida`)."""
    if handler not in KNOWN_HANDLERS:
        return None
    close = sorted(n for n in loaded if n and n != handler and n not in KNOWN_HANDLERS
                   and edit_distance(handler, n) <= 2)
    matches = difflib.get_close_matches(handler, close, n=1, cutoff=0.6)
    return matches[0] if matches else None


def _loaded_list(loaded):
    names = sorted(n for n in loaded if n)
    return "loaded runtimes: %s" % (", ".join(names) if names else "none")


def _missing_hint(handler, loaded, asked):
    """(message suffix, fix, suggestion, misspelt loaded runtime) of a missing handler."""
    guess = suggestion(handler, loaded, asked)
    if guess:
        return ("; did you mean '%s'?" % guess,
                "fix the RuntimeClass handler to '%s' or register a runtime named '%s'" % (guess, handler), guess, None)
    misspelt = misspelt_loaded(handler, loaded)
    if misspelt:
        return ("; the node loads '%s', likely a misspelt '%s'" % (misspelt, handler),
                "rename runtime '%s' to '%s' in the node's containerd config (or register '%s' with role "
                "gpurt.runtime_gate.containerd_runtime)" % (misspelt, handler, handler), None, misspelt)
    return ("", "register runtime '%s' in containerd (role gpurt.runtime_gate.containerd_runtime)" % handler,
            None, None)


@check("missing_handler", ("error",), "error",
       "a RuntimeClass whose `scheduling.nodeSelector` matches the node (unknown labels: assumed to match) names a "
       "handler that is not a loaded runtime; suggests a loaded name only when it is close (at most two edits), "
       "is not itself asked for by a RuntimeClass that can land here, and the handler is not a real runtime's "
       "name (`nvidai` → did you mean `nvidia`?; never `nvidia` for `nvidia-cdi` or `runc` for `crun`); in the other "
       "direction, a class asking for a real runtime's name on a node that loads a close non-runtime name "
       "(`nvidia` asked, `nvida` loaded) names the loaded one as the likely typo; lists the loaded runtimes",
       ("runtimeclasses", "handlers"),
       fixed_by("registers each runtime of `containerd_runtime_runtimes` in a drop-in of its own (nvidia by "
                "default); a RuntimeClass's typo'd handler is left to its owner"),
       modes=("hosts", "cluster"))
def check_missing_handler(ctx):
    out = []
    for runtimeclass, why in ctx.applicable:
        handler = runtimeclass["handler"]
        if handler in ctx.handlers:
            continue
        hint, fix, guess, misspelt = _missing_hint(handler, ctx.handlers, ctx.asked_here)
        out.append(finding(
            ctx.node, "missing_handler", "error", handler,
            "RuntimeClass %s asks for handler '%s', which %s does not have (%s)%s"
            % (runtimeclass["name"], handler, ctx.source, _loaded_list(ctx.handlers), hint),
            fix,
            {"runtimeclass": runtimeclass["name"], "handler": handler, "loaded_runtimes": sorted(ctx.handlers),
             "scheduling": why, "suggestion": guess, "misspelt_runtime": misspelt},
        ))
    return out

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Messages in the words of the user who reads them: the node code and the Kubernetes client say
"set containerd_bin" or "set kubeconfig or host" (the module's options, right for a user of the
module), while a user of a playbook or role sets gpurt_containerd_bin, gpurt_kubeconfig or
containerd_runtime_containerd_bin. The actions translate with the map of the caller. Controller only."""

import os
import re

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._collection import COLLECTION_ROOT

K8S_AUTH_PATH = os.path.join(COLLECTION_ROOT, "playbooks", "vars", "k8s_auth.yml")
# The module_defaults variable of the playbooks: present in a task's variables when a playbook of
# the collection runs it.
K8S_AUTH_VARIABLE = "_gpurt_k8s_auth"
ROLE_PREFIX = "containerd_runtime_"
# "set kubeconfig or host", "set containerd_bin", "pass src": the verb and the names after it.
_ADVICE = re.compile(r"\b(set|pass|unset)\s+((?:[A-Za-z_][\w]*)(?:(?:,\s*|\s+or\s+|\s+and\s+)[A-Za-z_][\w]*)*)")
_TEMPLATE_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_]\w*)")


def in_user_words(text, names):
    """text with every option named after set/pass/unset replaced by the variable the user sets
    (names: {option: variable}); other words are kept."""
    if not text or not names:
        return text

    def rename(match):
        words = re.sub(r"[A-Za-z_]\w*", lambda w: names.get(w.group(0), w.group(0)), match.group(2))
        return "%s %s" % (match.group(1), words)
    return _ADVICE.sub(rename, str(text))


def k8s_playbook_names(path=K8S_AUTH_PATH):
    """{module option: playbook variable} of the cluster connection, read from the playbooks'
    module_defaults (kubeconfig: "{{ gpurt_kubeconfig | default(omit) }}"), the one place it is said."""
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _safe_yaml as safe_yaml
    try:
        with open(path) as handle:
            doc = safe_yaml.safe_load(handle) or {}
    except (IOError, OSError):
        return {}
    out = {}
    for option, value in (doc.get(K8S_AUTH_VARIABLE) or {}).items():
        match = _TEMPLATE_VARIABLE.search(str(value))
        if match:
            out[option] = match.group(1)
    return out


def k8s_names(task_vars):
    """The map for a Kubernetes action: the playbook's variables when a playbook of the collection runs
    it, else none (a user of the module sets its options)."""
    return k8s_playbook_names() if K8S_AUTH_VARIABLE in (task_vars or {}) else {}


def role_names(task, options):
    """The map for an action run by the containerd_runtime role: each option is the role variable
    containerd_runtime_<option>."""
    role = getattr(task, "_role", None)
    if role is None or not str(getattr(role, "get_name", lambda: "")()).endswith("containerd_runtime"):
        return {}
    return dict((option, ROLE_PREFIX + option) for option in options)

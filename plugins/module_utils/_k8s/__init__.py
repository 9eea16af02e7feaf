# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes client of the collection's modules, one job per file as kubernetes.core's
module_utils/k8s: client (connection, auth, kubeconfig), proxy, scrub (secrets never shown), session
(the request loop: retries, backoff, deadline), resources (the reads and writes we do), errors.
A module run makes one session for all its reads and writes. What the modules use is named here.

The names of client and session are loaded on first use (PEP 562): they import the kubernetes client,
about 0.3 s of CPU, which a process that only reads labels or objects (a filter, the judge) never needs."""

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.errors import KubeError  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.scrub import Secrets, scrub  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.proxy import bypasses_proxy  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.resources import RESOURCES  # noqa: F401

_CLIENT_NAMES = ("AUTH_ARG_SPEC", "AUTH_ENV", "HAS_KUBERNETES", "KUBERNETES_IMPORT_ERROR", "SERVICE_ACCOUNT_DIR",
                 "Connection", "build_connection", "known_secrets", "kubeconfig_paths", "resolve_auth")
_SESSION_NAMES = ("LIST_ARG_SPEC", "REQUEST_ARG_SPEC", "KubeSession", "session_from_params")


def __getattr__(name):
    # The imports are written out (not importlib) so that AnsiballZ ships both files with a module.
    if name in _CLIENT_NAMES:
        from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import client
        return getattr(client, name)
    if name in _SESSION_NAMES:
        from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import session
        return getattr(session, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one session of a module that writes to the cluster: opened from the module's params, every
failure ends the module with the credentials scrubbed and the requests counted (never a traceback),
closed after."""

import contextlib

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube


@contextlib.contextmanager
def module_session(module, result):
    """with module_session(module, result) as session: ... ; result["api_requests"] is set either way."""
    if not kube.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"), **result)
    secrets = kube.known_secrets(module.params)
    session = None
    try:
        session = kube.session_from_params(module.params)
        secrets = session.secrets
        yield session
    except kube.KubeError as exc:
        result["api_requests"] = session.api_requests if session is not None else 0
        module.fail_json(msg=secrets.scrub(str(exc)), **result)
    except Exception as exc:  # a failed result, never a traceback
        result["api_requests"] = session.api_requests if session is not None else 0
        module.fail_json(msg=secrets.scrub("unexpected %s: %s" % (type(exc).__name__, exc)), **result)
    finally:
        if session is not None:
            session.close()
    result["api_requests"] = session.api_requests

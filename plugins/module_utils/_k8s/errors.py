# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeError, the one failure of every Kubernetes call (a one-line, secret-free message), and the
apiserver's Status objects it is built from."""

import json


class KubeError(Exception):
    """Any failure to reach, read from or write to the apiserver, with a one-line, secret-free
    message. status is the HTTP status (0 for TLS, None without an answer); reason and causes
    come from the answer's Status object."""

    def __init__(self, message, status=None, resource=None, attempts=None, reason=None, causes=None):
        super(KubeError, self).__init__(message)
        self.status = status
        self.resource = resource
        self.attempts = attempts
        self.reason = reason
        self.causes = causes or []


def status_object(body):
    """The Status object of an answer's body, or {}."""
    try:
        status = json.loads(body.decode("utf-8") if isinstance(body, bytes) else body) if body else None
    except (TypeError, ValueError, UnicodeDecodeError):
        return {}
    return status if isinstance(status, dict) and status.get("kind") == "Status" else {}


def status_message(body):
    """The one-line message of a Status body, or None."""
    message = status_object(body).get("message")
    return " ".join(str(message).split())[:600] if message else None

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one Kubernetes API session of a module run, for reading and writing: every request goes through
KubeSession.request, with one retry and backoff loop, one overall deadline that no slowly trickling
answer can stretch, one decoding of answers and Status objects, one way of building messages (every
secret scrubbed). Bodies are plain JSON dicts, never the client's models, so an object with missing
fields never crashes a deserializer."""

import json
import threading
import time
import warnings

from http.client import responses as _HTTP_REASONS
from urllib.parse import urlencode

try:
    import urllib3
    from kubernetes import client as k8s_client
except ImportError:
    pass  # client.HAS_KUBERNETES says so before a session is made
else:
    # Several Impersonate-Group lines need a multi-valued header map.
    _HTTPHeaderDict = getattr(urllib3, "HTTPHeaderDict", None) or urllib3._collections.HTTPHeaderDict

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import library_logs
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.client import SERVICE_ACCOUNT_DIR, build_connection
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.errors import KubeError, status_message, status_object
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.resources import (
    READ_HINTS, READ_VERBS, RBAC_HINT, RESOURCES, WRITE_HINTS, ResourceOperations)


# Retry, timeout and deadline of every request, list or write.
REQUEST_ARG_SPEC = dict(
    retries=dict(type="int", default=3),
    retry_delay=dict(type="float", default=0.5),
    request_timeout=dict(type="float", default=30.0),
    deadline=dict(type="float", default=120.0),
)

LIST_ARG_SPEC = dict(page_size=dict(type="int", default=500))

RETRIED_STATUSES = (429,)  # and every 5xx
MAX_RETRY_AFTER_SECONDS = 10.0
USER_AGENT = "gpurt.runtime_gate"
# A worker that is still reading this long after its own read timeout is abandoned.
_JOIN_MARGIN = 0.25


def retry_after_seconds(headers):
    """A 429's Retry-After in seconds, capped; None when absent or unreadable."""
    try:
        value = float((headers or {}).get("Retry-After"))
    except (TypeError, ValueError):
        return None
    return min(max(value, 0.0), MAX_RETRY_AFTER_SECONDS)


def _connection_reason(exc):
    cause = exc.__cause__ or exc.__context__ or getattr(exc, "reason", None)
    detail = getattr(cause, "strerror", None) or str(cause or exc).rsplit(": ", maxsplit=1)[-1]
    return detail


def _tls_detail(exc):
    lines = [line for line in str(exc).splitlines() if line.strip()]
    detail = lines[-1] if lines else "TLS handshake failed"
    if "CERTIFICATE_VERIFY_FAILED" in detail or "certificate verify failed" in detail:
        detail = "certificate verify failed; set ca_cert to the cluster CA, or validate_certs=false"
    return detail[:300]


class _SlowAnswer(Exception):
    """The worker did not finish the request within its time."""


class KubeSession(ResourceOperations):
    """Every request to the apiserver, counted (one per page and per attempt), retried after
    a 5xx, a 429, a timeout or a connection error with exponential backoff, and bounded by one
    overall deadline that no slow answer can stretch."""

    def __init__(self, connection, retries=3, retry_delay=0.5, request_timeout=30.0, deadline=120.0, page_size=500,
                 sleep=time.sleep, clock=time.monotonic):
        if page_size < 1:
            raise KubeError("page_size must be at least 1 (got %d)" % page_size)
        if retries < 0:
            raise KubeError("retries must be 0 or more (got %d)" % retries)
        if retry_delay < 0:
            raise KubeError("retry_delay must be 0 or more seconds (got %s)" % retry_delay)
        if request_timeout <= 0:
            raise KubeError("request_timeout must be a positive number of seconds (got %s)" % request_timeout)
        if deadline <= 0:
            raise KubeError("deadline must be a positive number of seconds (got %s)" % deadline)
        self.connection = connection
        self.configuration = connection.configuration
        self.secrets = connection.secrets
        self.api_client = k8s_client.ApiClient(configuration=self.configuration)
        self.pool = self.api_client.rest_client.pool_manager
        if not self.configuration.verify_ssl:
            # validate_certs=false was asked for; one warning per request is noise. (Set once:
            # catch_warnings() is not safe in the worker threads.)
            warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
        self.retries = retries
        self.retry_delay = retry_delay
        self.request_timeout = request_timeout
        self.deadline = deadline
        self.page_size = page_size
        self.sleep = sleep
        self.clock = clock
        self._started = clock()
        self.api_requests = 0
        self.api_list_calls = 0
        self.last_list_version = None
        # The Warning headers of the last answered request (admission warnings, deprecations).
        self.last_warnings = []

    @property
    def server(self):
        return self.configuration.host

    def counts(self):
        return {"api_requests": self.api_requests, "api_list_calls": self.api_list_calls}

    def close(self):
        try:
            self.pool.clear()
        finally:
            close = getattr(self.api_client, "close", None)
            if close:
                close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def error(self, message, **kwargs):
        return KubeError(self.secrets.scrub(message), **kwargs)

    # ----- the request loop -------------------------------------------------------
    def _remaining(self):
        return self.deadline - (self.clock() - self._started)

    def remaining(self):
        """Seconds left before this session's deadline."""
        return self._remaining()

    def _headers(self, content_type):
        headers = _HTTPHeaderDict()
        headers["Accept"] = "application/json"
        headers["User-Agent"] = USER_AGENT
        if content_type:
            headers["Content-Type"] = content_type
        authorization = self._authorization()
        if authorization:
            headers["Authorization"] = authorization
        if self.connection.impersonate_user:
            headers["Impersonate-User"] = self.connection.impersonate_user
        for group in self.connection.impersonate_groups:
            headers.add("Impersonate-Group", group)
        return headers

    def _authorization(self):
        """The Authorization header: the api_key or in-cluster token, else what the
        kubeconfig's user gives (token, tokenFile, exec plugin, refreshed as it expires)."""
        if self.connection.bearer:
            value = "Bearer %s" % self.connection.bearer
        else:
            position = library_logs.mark()
            try:
                setting = self.configuration.auth_settings().get("BearerToken") or {}
            except Exception as exc:  # an exec plugin or refresh hook failing
                detail = library_logs.exec_failure([str(exc)]) or "%s: %s" % (type(exc).__name__, exc)
                raise self.error("cannot get a token from the kubeconfig's user: %s" % detail)
            refresh_failed = library_logs.exec_failure(library_logs.since(position))
            if refresh_failed:  # the client logs a failed refresh and keeps the expired token
                raise self.error("cannot get a token from the kubeconfig's user: %s" % refresh_failed)
            value = setting.get("value")
        if not value:
            return None
        scheme, _sep, credential = str(value).partition(" ")
        if not credential:
            scheme, credential = "Bearer", scheme
        self.secrets.add(credential)
        credential = credential.strip()
        if not credential:
            return None
        if any(ord(char) < 32 or ord(char) == 127 for char in credential):
            raise self.error("the bearer token has a line break or control character inside it, so no request "
                             "can carry it (the token is not shown); check api_key or the kubeconfig's user")
        return "%s %s" % (scheme, credential)

    def _send(self, method, url, headers, payload, timeout):
        """(status, headers, body) of one request, read whole within timeout seconds.

        urllib3's timeouts apply per socket read, so an answer trickling in one byte at a
        time would never time out; the request runs in a worker thread that is abandoned
        (it is a daemon) when it is not done in time."""
        box = {}

        def work():
            try:
                response = self.pool.request(method, url, body=payload, headers=headers,
                                             timeout=urllib3.Timeout(connect=timeout, read=timeout),
                                             preload_content=False, retries=False, redirect=False)
                try:
                    data = response.read()
                finally:
                    response.release_conn()
                box["answer"] = (response.status, response.headers, data)
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=work, name="gpurt-kube-request")
        worker.daemon = True
        worker.start()
        worker.join(min(timeout + _JOIN_MARGIN, max(self._remaining(), 0.0)))
        if worker.is_alive():
            raise _SlowAnswer()
        if "error" in box:
            raise box["error"]
        return box["answer"]

    def request(self, method, path, doing, verb, resource, query=None, body=None, content_type=None,
                accept=(), name=None, raw=False):
        """(status, decoded JSON object, attempts) of a request that succeeded (2xx) or was
        answered with a status in accept; KubeError for anything else.

        doing: what the message says was being done ("listing nodes"); verb: the RBAC verb;
        resource: a key of RESOURCES; name: the object a 404 may be about; raw: the body's bytes, not
        decoded (an answer that is not JSON, such as /metrics).
        """
        url = self.server + path
        if query:
            url += "?" + urlencode(query)
        payload = json.dumps(body).encode("utf-8") if body is not None else None
        attempt = 0
        while True:
            remaining = self._remaining()
            if remaining <= 0:
                raise self.error("stopped %s: the deadline of %s s for this task's API calls has passed"
                                 % (doing, _seconds(self.deadline)), resource=resource, attempts=attempt)
            attempt += 1
            self.api_requests += 1
            timeout = min(self.request_timeout, remaining)
            # "within 30 s (request_timeout)", or the deadline when it comes first.
            if timeout < self.request_timeout:
                within = "before the deadline of %s s" % _seconds(self.deadline)
            else:
                within = "within %s s (request_timeout)" % _seconds(self.request_timeout)
            retry_after = None
            try:
                status, headers, data = self._send(method, url, self._headers(content_type), payload, timeout)
            except KubeError:
                raise
            except _SlowAnswer:
                reason = "no complete answer from %s %s" % (self.server, within)
            except urllib3.exceptions.SSLError as exc:
                raise self.error("TLS error from %s %s: %s" % (self.server, doing, _tls_detail(exc)),
                                 status=0, resource=resource, attempts=attempt)
            except urllib3.exceptions.ProxyError as exc:
                reason = "cannot go through proxy %s (%s)" % (self.configuration.proxy, _connection_reason(exc))
            except urllib3.exceptions.NewConnectionError as exc:
                reason = "cannot connect to %s (%s)" % (self.server, _connection_reason(exc))
            except urllib3.exceptions.ConnectTimeoutError:
                reason = "no connection to %s %s" % (self.server, within)
            except urllib3.exceptions.ReadTimeoutError:
                reason = "no answer from %s %s" % (self.server, within)
            except (urllib3.exceptions.ProtocolError, urllib3.exceptions.IncompleteRead) as exc:
                reason = "connection to %s dropped (%s)" % (self.server, _connection_reason(exc))
            except urllib3.exceptions.HTTPError as exc:
                raise self.error("%s on %s: %s" % (doing, self.server, type(exc).__name__), resource=resource,
                                 attempts=attempt)
            except (OSError, IOError) as exc:
                reason = "cannot talk to %s (%s)" % (self.server, getattr(exc, "strerror", None) or exc)
            except Exception as exc:  # e.g. http.client refusing a header; scrubbed, never a traceback
                detail = "%s: %s" % (type(exc).__name__, exc)
                raise self.error("cannot send the request %s to %s: %s" % (doing, self.server, detail),
                                 resource=resource, attempts=attempt)
            else:
                self.last_warnings = _warnings(headers)
                if 200 <= status < 300 or status in accept:
                    return status, data if raw else self._decode(data, doing, resource), attempt
                if status not in RETRIED_STATUSES and status < 500:
                    raise self._status_error(status, data, doing, verb, resource, name, attempt)
                reason = self._status_text(status, data)
                retry_after = retry_after_seconds(headers)
            if attempt > self.retries:
                raise self.error("gave up after %s %s: %s" % (_attempts(attempt), doing, reason),
                                 resource=resource, attempts=attempt)
            delay = self.retry_delay * (2 ** (attempt - 1))
            if retry_after is not None:
                delay = max(delay, retry_after)
            if delay >= self._remaining():
                suffix = "" if "deadline" in reason else "; the deadline of %s s leaves no time to retry" % _seconds(
                    self.deadline)
                raise self.error("gave up after %s %s: %s%s" % (_attempts(attempt), doing, reason, suffix),
                                 resource=resource, attempts=attempt)
            self.sleep(delay)

    def _decode(self, data, doing, resource):
        if not data:
            return {}
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise self.error("%s answered %s with a body that is not JSON" % (self.server, doing), resource=resource)
        if not isinstance(obj, dict):
            raise self.error("%s answered %s with JSON that is not an object" % (self.server, doing),
                             resource=resource)
        return obj

    def _status_text(self, status, data):
        """'503 Service Unavailable from URL (the Status message)'."""
        reason = _HTTP_REASONS.get(status, "")
        text = "%d %s from %s" % (status, reason, self.server)
        detail = status_message(data)
        if detail and detail.lower() != reason.lower():
            text += " (%s)" % detail
        return text

    def _impersonated(self):
        who = ["user %s" % self.connection.impersonate_user] if self.connection.impersonate_user else []
        return ", ".join(who + ["group %s" % group for group in self.connection.impersonate_groups])

    def _impersonation_refused(self, message):
        """A 403 for the impersonation itself, not for the verb (the apiserver says "cannot impersonate")."""
        return bool(self._impersonated() and message and "cannot impersonate" in message)

    def _status_error(self, status, data, doing, verb, resource, name, attempt):
        path, qualified, not_served = RESOURCES[resource]
        answer = status_object(data)
        message = status_message(data)
        details = answer.get("details") if isinstance(answer.get("details"), dict) else {}
        head = "%d %s from %s %s" % (status, _HTTP_REASONS.get(status, ""), self.server, doing)
        if status == 401:
            why = "the bearer token or client certificate was rejected"
        elif status == 403 and self._impersonation_refused(message):
            why = ("the identity may not impersonate %s (impersonate_user, impersonate_groups): grant it the verb "
                   "impersonate, or do not impersonate" % self._impersonated())
            if message:
                why += " (apiserver: %s)" % message
        elif status == 403:
            if verb in READ_VERBS:
                hint = READ_HINTS.get(resource, RBAC_HINT[True])
            else:
                hint = WRITE_HINTS.get(resource, RBAC_HINT[False])
            why = "the identity may not %s %s; %s" % (verb, qualified, hint)
            if message:
                why += " (apiserver: %s)" % message
        elif status == 404 and details.get("kind") == "namespaces" and details.get("name"):
            # the namespace the object goes into does not exist (the apiserver names it)
            why = ("namespace %s does not exist: create it (kubectl create namespace %s), or name one that does"
                   % (details["name"], details["name"]))
        elif status == 404 and (name is None or details.get("name") != name):
            why = "%s is not served%s; is host a Kubernetes apiserver?" % (
                path.replace("/namespaces/{namespace}", ""), not_served)
        elif status == 410:
            why = "the continue token expired while paging (the list changed); run again or raise page_size"
        else:
            why = message or "unexpected answer"
        causes = details.get("causes") if isinstance(details.get("causes"), list) else []
        return self.error("%s: %s" % (head, why), status=status, resource=resource, attempts=attempt,
                          reason=answer.get("reason"), causes=[c for c in causes if isinstance(c, dict)])


def _warnings(headers):
    getlist = getattr(headers, "getlist", None)
    values = getlist("Warning") if getlist else [(headers or {}).get("Warning")]
    return [" ".join(str(v).split()) for v in values if v]


def _attempts(count):
    return "1 attempt" if count == 1 else "%d attempts" % count


def _seconds(value):
    return ("%.3f" % value).rstrip("0").rstrip(".")


def _request_option(params, name):
    value = params.get(name)
    spec = REQUEST_ARG_SPEC.get(name) or LIST_ARG_SPEC[name]
    return spec["default"] if value is None else value


def session_from_params(params, environ=None, sleep=time.sleep, clock=time.monotonic,
                        service_account_dir=SERVICE_ACCOUNT_DIR):
    """A KubeSession from module params (AUTH_ARG_SPEC, REQUEST_ARG_SPEC and LIST_ARG_SPEC keys)."""
    connection = build_connection(params, environ, service_account_dir)
    return KubeSession(
        connection,
        retries=_request_option(params, "retries"),
        retry_delay=_request_option(params, "retry_delay"),
        request_timeout=_request_option(params, "request_timeout"),
        deadline=_request_option(params, "deadline"),
        page_size=_request_option(params, "page_size"),
        sleep=sleep,
        clock=clock,
    )

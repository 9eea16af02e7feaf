# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A kubernetes.client.ApiClient built from kubernetes.core-style options, and full,
paginated, retried list calls that return plain JSON dicts.

Pages are requested with _preload_content=False and json-decoded here, so an object with
missing fields never reaches the client's model deserialization. Every failure becomes one
KubeError with a one-line message that never contains a token: the client's ApiException
text carries response headers and body, so messages are built here instead.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time
import warnings

from http.client import responses as _HTTP_REASONS

try:
    import urllib3
    import yaml
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.client.exceptions import ApiException
except ImportError as _import_error:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = str(_import_error)
else:
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None

from ansible.module_utils.parsing.convert_bool import boolean

AUTH_ARG_SPEC = dict(
    kubeconfig=dict(type="path"),
    context=dict(type="str"),
    host=dict(type="str"),
    api_key=dict(type="str", no_log=True),
    validate_certs=dict(type="bool", aliases=["verify_ssl"]),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"]),
    client_cert=dict(type="path", aliases=["cert_file"]),
    client_key=dict(type="path", aliases=["key_file"], no_log=False),
)

LIST_ARG_SPEC = dict(
    page_size=dict(type="int", default=500),
    retries=dict(type="int", default=3),
    retry_delay=dict(type="float", default=0.5),
    request_timeout=dict(type="float", default=30.0),
)

# Same variables as kubernetes.core; read when the option is not set.
AUTH_ENV = dict(
    kubeconfig="K8S_AUTH_KUBECONFIG",
    context="K8S_AUTH_CONTEXT",
    host="K8S_AUTH_HOST",
    api_key="K8S_AUTH_API_KEY",
    validate_certs="K8S_AUTH_VERIFY_SSL",
    ca_cert="K8S_AUTH_SSL_CA_CERT",
    client_cert="K8S_AUTH_CERT_FILE",
    client_key="K8S_AUTH_KEY_FILE",
)

# resource -> (API class, list method, path); the path is for messages only.
RESOURCES = {
    "runtimeclasses": ("NodeV1Api", "list_runtime_class", "/apis/node.k8s.io/v1/runtimeclasses"),
    "nodes": ("CoreV1Api", "list_node", "/api/v1/nodes"),
}

RETRIED_STATUSES = (429,)  # and every 5xx
MAX_RETRY_AFTER_SECONDS = 10.0
_MASK = "********"


class KubeError(Exception):
    """Any failure to reach or list from the apiserver, with a one-line, token-free message."""

    def __init__(self, message, status=None, resource=None, attempts=None):
        super(KubeError, self).__init__(message)
        self.status = status
        self.resource = resource
        self.attempts = attempts


def scrub(text, secrets):
    """text with every secret replaced by a mask."""
    text = str(text)
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, _MASK)
    return text


def known_secrets(params, environ=None):
    """The tokens given as options or variables, to scrub from unexpected error text."""
    environ = os.environ if environ is None else environ
    return [value for value in (params.get("api_key"), environ.get(AUTH_ENV["api_key"])) if value]


def resolve_auth(params, environ=None):
    """The auth options, each taken from params or else from its K8S_AUTH_* variable."""
    environ = os.environ if environ is None else environ
    auth = {}
    for option, variable in AUTH_ENV.items():
        value = params.get(option)
        if value is None and environ.get(variable):
            value = environ[variable]
            if option == "validate_certs":
                try:
                    value = boolean(value, strict=True)
                except TypeError:
                    raise KubeError("%s=%r is not a boolean" % (variable, value))
            elif option in ("kubeconfig", "ca_cert", "client_cert", "client_key"):
                value = os.path.expanduser(value)
        auth[option] = value
    return auth


def _split_paths(value):
    return [os.path.expanduser(path) for path in value.split(os.pathsep) if path]


def kubeconfig_paths(auth, environ=None):
    """The kubeconfig files to load: the kubeconfig option (or K8S_AUTH_KUBECONFIG); else,
    when no host is given, KUBECONFIG and then ~/.kube/config. [] means host-only."""
    environ = os.environ if environ is None else environ
    if auth.get("kubeconfig"):
        paths = _split_paths(auth["kubeconfig"])
        missing = [path for path in paths if not os.path.isfile(path)]
        if missing:
            raise KubeError("kubeconfig %s does not exist" % ", ".join(missing))
        return paths
    if auth.get("host"):
        return []
    if environ.get("KUBECONFIG"):
        paths = [path for path in _split_paths(environ["KUBECONFIG"]) if os.path.isfile(path)]
        if paths:
            return paths
    home = environ.get("HOME") or os.path.expanduser("~")
    default = os.path.join(home, ".kube", "config")
    if os.path.isfile(default):
        return [default]
    raise KubeError("no kubeconfig found and no host given (set kubeconfig or host, or "
                    "K8S_AUTH_KUBECONFIG, KUBECONFIG; %s does not exist)" % default)


def _read_kubeconfigs(paths):
    """(context names, current-context, tokens) across the files, first current-context wins
    as in kubectl. Tokens are collected only to keep them out of messages."""
    contexts = []
    current = None
    tokens = []
    for path in paths:
        try:
            with open(path) as handle:
                data = yaml.safe_load(handle) or {}
        except (OSError, IOError) as exc:
            raise KubeError("cannot read kubeconfig %s: %s" % (path, exc.strerror or exc))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = " at line %d" % (mark.line + 1) if mark else ""
            raise KubeError("kubeconfig %s is not valid YAML%s" % (path, where))
        if not isinstance(data, dict):
            raise KubeError("kubeconfig %s is not a mapping" % path)
        for entry in data.get("contexts") or []:
            if isinstance(entry, dict) and entry.get("name") and entry["name"] not in contexts:
                contexts.append(entry["name"])
        for entry in data.get("users") or []:
            user = entry.get("user") if isinstance(entry, dict) else None
            if isinstance(user, dict):
                tokens.extend(str(user[key]) for key in ("token", "password") if user.get(key))
        current = current or data.get("current-context") or None
    return contexts, current, tokens


def build_configuration(params, environ=None):
    """(kubernetes.client.Configuration, secrets) from auth options; KubeError if unusable.

    A kubeconfig is loaded with the client's own loader; host, api_key, validate_certs,
    ca_cert, client_cert and client_key then override what it says.
    """
    if not HAS_KUBERNETES:
        raise KubeError("the kubernetes Python client is not installed: %s" % KUBERNETES_IMPORT_ERROR)
    auth = resolve_auth(params, environ)
    secrets = [auth["api_key"]] if auth.get("api_key") else []
    paths = kubeconfig_paths(auth, environ)
    configuration = k8s_client.Configuration()
    if paths:
        shown = ", ".join(paths)
        contexts, current, tokens = _read_kubeconfigs(paths)
        secrets.extend(tokens)
        listed = ", ".join(contexts) or "none"
        context = auth.get("context")
        if context and context not in contexts:
            raise KubeError("kubeconfig %s has no context '%s' (contexts: %s)" % (shown, context, listed))
        if not context and not current:
            raise KubeError("kubeconfig %s sets no current-context; set context (contexts: %s)" % (shown, listed))
        if not context and current not in contexts:
            raise KubeError("kubeconfig %s: current-context '%s' is not among its contexts (contexts: %s)"
                            % (shown, current, listed))
        try:
            k8s_config.load_kube_config(config_file=os.pathsep.join(paths), context=context,
                                        client_configuration=configuration, persist_config=False)
        except Exception as exc:  # the loader raises ConfigException, ValueError, OSError, ...
            raise KubeError(scrub("cannot use kubeconfig %s (context '%s'): %s"
                                  % (shown, context or current, str(exc).splitlines()[0] if str(exc) else
                                     type(exc).__name__), secrets))
    if auth.get("host"):
        host = auth["host"].rstrip("/")
        if not host.startswith(("http://", "https://")):
            raise KubeError("host '%s' must be a URL such as https://HOST:6443" % host)
        configuration.host = host
    if auth.get("api_key"):
        configuration.api_key = {"BearerToken": "Bearer %s" % auth["api_key"]}
        # The kubeconfig loader's hook would put its own token back before each request.
        configuration.refresh_api_key_hook = None
    if auth.get("validate_certs") is not None:
        configuration.verify_ssl = auth["validate_certs"]
    for option, attribute in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file")):
        if auth.get(option):
            if not os.path.isfile(auth[option]):
                raise KubeError("%s %s does not exist" % (option, auth[option]))
            setattr(configuration, attribute, auth[option])
    # Retries are counted and backed off here; urllib3's own would hide requests.
    configuration.retries = False
    return configuration, secrets


def _status_body_message(body):
    """The message of a Kubernetes Status body, or None."""
    try:
        status = json.loads(body) if body else None
    except (TypeError, ValueError):
        return None
    if isinstance(status, dict) and status.get("kind") == "Status" and status.get("message"):
        return " ".join(str(status["message"]).split())[:300]
    return None


def _connection_reason(exc):
    cause = exc.__cause__ or exc.__context__
    detail = getattr(cause, "strerror", None) or str(cause or exc).rsplit(": ", maxsplit=1)[-1]
    return detail


def raw_call(api_client, method, request_timeout, *args, **kwargs):
    """The raw body of one client API call, unparsed: objects with missing fields must not
    crash the client's model deserialization."""
    with warnings.catch_warnings():
        if not api_client.configuration.verify_ssl:
            # validate_certs=false was asked for; one warning per request is noise.
            warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
        response = method(*args, _preload_content=False, _request_timeout=request_timeout, **kwargs)
    try:
        return response.data
    finally:
        response.release_conn()


def status_text(exc, server):
    """'403 Forbidden from URL (the Status message)' for an ApiException, without its headers."""
    reason = _HTTP_REASONS.get(exc.status) or exc.reason or ""
    text = "%d %s from %s" % (exc.status, reason, server)
    detail = _status_body_message(exc.body)
    if detail and detail.lower() != reason.lower():
        text += " (%s)" % detail
    return text


def retry_after_seconds(exc):
    """A 429's Retry-After in seconds, capped; None when absent or unreadable."""
    try:
        value = float((exc.headers or {}).get("Retry-After"))
    except (TypeError, ValueError):
        return None
    return min(max(value, 0.0), MAX_RETRY_AFTER_SECONDS)


class KubeLister(object):
    """Lists resources fully over a kubernetes.client.ApiClient, counting every HTTP request
    (one per page and per attempt) and every list operation."""

    def __init__(self, api_client, page_size=500, retries=3, retry_delay=0.5, request_timeout=30.0,
                 secrets=(), sleep=time.sleep):
        if page_size < 1:
            raise KubeError("page_size must be at least 1 (got %d)" % page_size)
        if retries < 0:
            raise KubeError("retries must be 0 or more (got %d)" % retries)
        if retry_delay < 0:
            raise KubeError("retry_delay must be 0 or more seconds (got %s)" % retry_delay)
        if request_timeout <= 0:
            raise KubeError("request_timeout must be a positive number of seconds (got %s)" % request_timeout)
        self.api_client = api_client
        self.page_size = page_size
        self.retries = retries
        self.retry_delay = retry_delay
        self.request_timeout = request_timeout
        self.secrets = list(secrets)
        self.sleep = sleep
        self.api_requests = 0
        self.api_list_calls = 0

    @property
    def server(self):
        return self.api_client.configuration.host

    def counts(self):
        return {"api_requests": self.api_requests, "api_list_calls": self.api_list_calls}

    def close(self):
        self.api_client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _error(self, message, **kwargs):
        return KubeError(scrub(message, self.secrets), **kwargs)

    def list_all(self, resource, label_selector=None, field_selector=None):
        """Every object of a resource ("runtimeclasses" or "nodes") as JSON dicts, following
        metadata.continue until the last page."""
        api_class, method_name, path = RESOURCES[resource]
        list_page = getattr(getattr(k8s_client, api_class)(self.api_client), method_name)
        self.api_list_calls += 1
        items = []
        seen_tokens = set()
        token = None
        while True:
            kwargs = {"limit": self.page_size}
            if token:
                kwargs["_continue"] = token
            if label_selector:
                kwargs["label_selector"] = label_selector
            if field_selector:
                kwargs["field_selector"] = field_selector
            page = self._request_page(resource, path, list_page, kwargs)
            page_items = page.get("items") or []
            if not isinstance(page_items, list):
                raise self._error("%s answered listing %s with items that are not a list" % (self.server, resource))
            items.extend(page_items)
            token = (page.get("metadata") or {}).get("continue") or None
            if not token:
                return items
            if token in seen_tokens:
                raise self._error("%s repeated a continue token listing %s; stopped paging" % (self.server, resource))
            seen_tokens.add(token)

    def _request_page(self, resource, path, list_page, kwargs):
        attempts_allowed = self.retries + 1
        attempt = 0
        while True:
            attempt += 1
            self.api_requests += 1
            retry_after = None
            try:
                body = self._call(list_page, kwargs)
            except ApiException as exc:
                status = exc.status or 0
                if status == 0:
                    raise self._tls_error(resource, exc)
                if status not in RETRIED_STATUSES and status < 500:
                    raise self._status_error(resource, path, exc)
                reason = status_text(exc, self.server)
                retry_after = retry_after_seconds(exc)
            except urllib3.exceptions.NewConnectionError as exc:
                reason = "cannot connect to %s (%s)" % (self.server, _connection_reason(exc))
            except urllib3.exceptions.ConnectTimeoutError:
                reason = "no connection to %s within %s s (request_timeout)" % (self.server, self.request_timeout)
            except urllib3.exceptions.ReadTimeoutError:
                reason = "no answer from %s within %s s (request_timeout)" % (self.server, self.request_timeout)
            except (urllib3.exceptions.ProtocolError, urllib3.exceptions.IncompleteRead) as exc:
                reason = "connection to %s dropped (%s)" % (self.server, _connection_reason(exc))
            except urllib3.exceptions.HTTPError as exc:
                raise self._error("cannot list %s from %s: %s" % (resource, self.server, type(exc).__name__),
                                  resource=resource)
            except (OSError, IOError) as exc:
                reason = "cannot talk to %s (%s)" % (self.server, getattr(exc, "strerror", None) or exc)
            else:
                return self._decode(resource, body)
            if attempt >= attempts_allowed:
                raise self._error("gave up after %d attempts listing %s: %s" % (attempt, resource, reason),
                                  resource=resource, attempts=attempt)
            delay = self.retry_delay * (2 ** (attempt - 1))
            if retry_after is not None:
                delay = max(delay, retry_after)
            self.sleep(delay)

    def _call(self, list_page, kwargs):
        return raw_call(self.api_client, list_page, self.request_timeout, **kwargs)

    def _decode(self, resource, body):
        try:
            page = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise self._error("%s answered listing %s with a body that is not JSON" % (self.server, resource),
                              resource=resource)
        if not isinstance(page, dict):
            raise self._error("%s answered listing %s with JSON that is not a list object" % (self.server, resource),
                              resource=resource)
        return page

    def _status_error(self, resource, path, exc):
        status = exc.status
        head = "%d %s from %s listing %s" % (status, _HTTP_REASONS.get(status) or exc.reason or "", self.server, resource)
        if status == 401:
            why = "the bearer token or client certificate was rejected"
        elif status == 403:
            why = "the identity may not list %s; apply rbac/runtime-gate-audit.yaml" % resource
            detail = _status_body_message(exc.body)
            if detail:
                why += " (apiserver: %s)" % detail
        elif status == 404:
            why = "%s is not served" % path
            if resource == "runtimeclasses":
                why += " (node.k8s.io/v1 needs Kubernetes 1.20+)"
            why += "; is host a Kubernetes apiserver?"
        elif status == 410:
            why = "the continue token expired while paging (the list changed); run again or raise page_size"
        else:
            why = _status_body_message(exc.body) or "unexpected answer"
        return self._error("%s: %s" % (head, why), status=status, resource=resource)

    def _tls_error(self, resource, exc):
        lines = [line for line in str(exc.reason or "").splitlines() if line.strip()]
        detail = lines[-1] if lines else "TLS handshake failed"
        if "CERTIFICATE_VERIFY_FAILED" in detail or "certificate verify failed" in detail:
            detail = "certificate verify failed; set ca_cert to the cluster CA, or validate_certs=false"
        return self._error("TLS error from %s listing %s: %s" % (self.server, resource, detail[:300]),
                           status=0, resource=resource)


def _list_option(params, name):
    value = params.get(name)
    return LIST_ARG_SPEC[name]["default"] if value is None else value


def lister_from_params(params, environ=None, sleep=time.sleep):
    """A KubeLister from module params (AUTH_ARG_SPEC and LIST_ARG_SPEC keys)."""
    configuration, secrets = build_configuration(params, environ)
    return KubeLister(
        k8s_client.ApiClient(configuration=configuration),
        page_size=_list_option(params, "page_size"),
        retries=_list_option(params, "retries"),
        retry_delay=_list_option(params, "retry_delay"),
        request_timeout=_list_option(params, "request_timeout"),
        secrets=secrets,
        sleep=sleep,
    )

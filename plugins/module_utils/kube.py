# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one Kubernetes API session of the collection's modules, for listing and writing.

A KubeSession is built from kubernetes.core-style options (kubeconfig, context, host, api_key,
certificates, proxy, impersonation, the in-cluster service account). The kubernetes client
loads the kubeconfig (exec plugins, tokenFile, client certificates, proxy-url) and provides the
connection pool (TLS, proxy); every request then goes through KubeSession.request: one retry
and backoff loop, one overall deadline, one decoding of answers and Status objects, one way of
building messages. Bodies are plain JSON dicts, never the client's models, so an object with
missing fields never crashes a deserializer.

Every message is scrubbed of every secret the session has seen (the api_key, kubeconfig tokens,
tokenFile contents, exec-plugin and service-account tokens, a proxy password), in every form a
message can carry it: as is, stripped, and escaped as repr() and JSON write it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import json
import os
import threading
import time
import warnings

from http.client import responses as _HTTP_REASONS
from urllib.parse import quote, unquote, urlencode, urlsplit, urlunsplit

try:
    import urllib3
    import yaml
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
except ImportError as _import_error:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = str(_import_error)
else:
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
    # Several Impersonate-Group lines need a multi-valued header map.
    _HTTPHeaderDict = getattr(urllib3, "HTTPHeaderDict", None) or urllib3._collections.HTTPHeaderDict

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
    proxy=dict(type="str"),
    no_proxy=dict(type="str"),
    impersonate_user=dict(type="str"),
    impersonate_groups=dict(type="list", elements="str"),
)

# Retry, timeout and deadline of every request, list or write.
REQUEST_ARG_SPEC = dict(
    retries=dict(type="int", default=3),
    retry_delay=dict(type="float", default=0.5),
    request_timeout=dict(type="float", default=30.0),
    deadline=dict(type="float", default=120.0),
)

LIST_ARG_SPEC = dict(page_size=dict(type="int", default=500))

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
    proxy="K8S_AUTH_PROXY",
    no_proxy="K8S_AUTH_NO_PROXY",
    impersonate_user="K8S_AUTH_IMPERSONATE_USER",
    impersonate_groups="K8S_AUTH_IMPERSONATE_GROUPS",
)
_PATH_OPTIONS = ("kubeconfig", "ca_cert", "client_cert", "client_key")

# Where a pod's service account is mounted (the in-cluster configuration).
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

# resource -> (collection path, name for RBAC messages, what a 404 on the collection means)
RESOURCES = {
    "runtimeclasses": ("/apis/node.k8s.io/v1/runtimeclasses", "runtimeclasses.node.k8s.io",
                       " (node.k8s.io/v1 needs Kubernetes 1.20+)"),
    "nodes": ("/api/v1/nodes", "nodes", ""),
}
READ_VERBS = ("get", "list")
RBAC_HINT = {
    True: "apply rbac/runtime-gate-audit.yaml",
    False: "rbac/runtime-gate-remediate.yaml grants get, list, patch, create and delete on runtimeclasses "
           "(the read-only audit identity may not write)",
}

RETRIED_STATUSES = (429,)  # and every 5xx
MAX_RETRY_AFTER_SECONDS = 10.0
USER_AGENT = "gpurt.runtime_gate"
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
_MASK = "********"
_MIN_SECRET = 4
# A worker that is still reading this long after its own read timeout is abandoned.
_JOIN_MARGIN = 0.25


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


# ----- secrets ------------------------------------------------------------------------

class Secrets(object):
    """Values that must never appear in a message, in every form a message may carry them."""

    def __init__(self, values=()):
        self._forms = set()
        for value in values:
            self.add(value)

    def add(self, value):
        if value is None:
            return
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        value = str(value)
        candidates = set([value, value.strip()])
        for line in value.splitlines():
            candidates.add(line.strip())
        forms = set()
        for candidate in candidates:
            forms.add(candidate)
            forms.add(json.dumps(candidate)[1:-1])
            forms.add(repr(candidate)[1:-1])
            forms.add(repr(candidate.encode("utf-8"))[2:-1])
        self._forms.update(form for form in forms if len(form.strip()) >= _MIN_SECRET)

    def extend(self, values):
        for value in values:
            self.add(value)

    def __len__(self):
        return len(self._forms)

    def scrub(self, text):
        text = str(text)
        # Longest first, so a form that contains another is masked whole.
        for form in sorted(self._forms, key=len, reverse=True):
            text = text.replace(form, _MASK)
        return text


def scrub(text, secrets):
    """text with every secret (a Secrets or an iterable of values) masked."""
    if not isinstance(secrets, Secrets):
        secrets = Secrets(secrets)
    return secrets.scrub(text)


def known_secrets(params, environ=None):
    """The secrets given as options or variables, before any file is read."""
    environ = os.environ if environ is None else environ
    secrets = Secrets([params.get("api_key"), environ.get(AUTH_ENV["api_key"])])
    for proxy in (params.get("proxy"), environ.get(AUTH_ENV["proxy"])):
        secrets.add(_proxy_password(proxy))
    return secrets


# ----- options ------------------------------------------------------------------------

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
            elif option in _PATH_OPTIONS:
                value = os.path.expanduser(value)
            elif option == "impersonate_groups":
                value = [group.strip() for group in value.split(",") if group.strip()]
        auth[option] = value
    if auth.get("api_key") is not None:
        # A token from a file or a `|` block ends in a newline; no header may carry one.
        auth["api_key"] = str(auth["api_key"]).strip() or None
    return auth


def _request_option(params, name):
    value = params.get(name)
    spec = REQUEST_ARG_SPEC.get(name) or LIST_ARG_SPEC[name]
    return spec["default"] if value is None else value


def _split_paths(value):
    return [os.path.expanduser(path) for path in value.split(os.pathsep) if path]


def _in_cluster_available(environ, service_account_dir):
    return bool(environ.get("KUBERNETES_SERVICE_HOST") and environ.get("KUBERNETES_SERVICE_PORT")
                and os.path.isfile(os.path.join(service_account_dir, "token")))


def kubeconfig_paths(auth, environ=None, service_account_dir=SERVICE_ACCOUNT_DIR):
    """The kubeconfig files to load: the kubeconfig option (or K8S_AUTH_KUBECONFIG); else,
    when no host is given, KUBECONFIG and then ~/.kube/config. [] means host-only or, when
    no host is given, the in-cluster service account."""
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
    if _in_cluster_available(environ, service_account_dir):
        return []
    raise KubeError("no kubeconfig found and no host given (set kubeconfig or host, or K8S_AUTH_KUBECONFIG, "
                    "KUBECONFIG; %s does not exist, and this is not a pod with a service account: "
                    "KUBERNETES_SERVICE_HOST/_PORT and %s/token)" % (default, service_account_dir))


def _read_text(path, what):
    try:
        with open(path) as handle:
            return handle.read()
    except (OSError, IOError) as exc:
        raise KubeError("cannot read %s %s: %s" % (what, path, exc.strerror or exc))


def _read_kubeconfigs(paths):
    """(context names, current-context, secrets) across the files, first current-context wins
    as in kubectl. Secrets (tokens, tokenFile contents, passwords) are collected only to keep
    them out of messages."""
    contexts = []
    current = None
    secrets = []
    for path in paths:
        try:
            data = yaml.safe_load(_read_text(path, "kubeconfig")) or {}
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
            if not isinstance(user, dict):
                continue
            secrets.extend(str(user[key]) for key in ("token", "password") if user.get(key))
            token_file = user.get("tokenFile")
            if isinstance(token_file, str) and token_file:
                token_file = os.path.join(os.path.dirname(os.path.abspath(path)), os.path.expanduser(token_file))
                if os.path.isfile(token_file):
                    try:
                        with open(token_file) as handle:
                            secrets.append(handle.read(65536))
                    except (OSError, IOError, UnicodeDecodeError):
                        pass  # the loader reports it
        current = current or data.get("current-context") or None
    return contexts, current, secrets


def _proxy_password(proxy):
    if not proxy:
        return None
    try:
        parts = urlsplit(proxy)
    except ValueError:
        return None
    return unquote(parts.password) if parts.password else None


def _split_proxy(proxy):
    """(proxy URL without credentials, 'user:password' or None); KubeError if unusable."""
    try:
        parts = urlsplit(proxy)
        port = parts.port
    except ValueError:
        raise KubeError("proxy is not a URL such as http://proxy.example:3128")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise KubeError("proxy must be an http:// or https:// URL such as http://proxy.example:3128 "
                        "(got scheme '%s')" % parts.scheme)
    netloc = parts.hostname if ":" not in parts.hostname else "[%s]" % parts.hostname
    if port:
        netloc += ":%d" % port
    userinfo = None
    if parts.username is not None:
        userinfo = "%s:%s" % (unquote(parts.username), unquote(parts.password or ""))
    return urlunsplit((parts.scheme, netloc, parts.path, "", "")), userinfo


def bypasses_proxy(host_url, no_proxy):
    """Whether host_url matches a no_proxy entry: '*', a host name or domain suffix
    ('.example.com' or 'example.com' also match subdomains), an IP or CIDR, or host:port."""
    try:
        parts = urlsplit(host_url)
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for entry in (no_proxy or "").split(","):
        entry = entry.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
        entry_host, _sep, entry_port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        if entry_port and (not port or entry_port != str(port)):
            continue
        entry_host = entry_host.lstrip(".")
        if host == entry_host or host.endswith("." + entry_host):
            return True
    return False


# ----- configuration ------------------------------------------------------------------

class Connection(object):
    """What a KubeSession needs besides the pool: the client configuration, a bearer token
    that overrides the configuration's, impersonation, and the secrets seen so far."""

    def __init__(self, configuration, secrets, bearer=None, impersonate_user=None, impersonate_groups=()):
        self.configuration = configuration
        self.secrets = secrets
        self.bearer = bearer
        self.impersonate_user = impersonate_user
        self.impersonate_groups = list(impersonate_groups or [])


def _load_kubeconfig(configuration, paths, auth, secrets):
    shown = ", ".join(paths)
    contexts, current, file_secrets = _read_kubeconfigs(paths)
    secrets.extend(file_secrets)
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
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise KubeError(secrets.scrub("cannot use kubeconfig %s (context '%s'): %s"
                                      % (shown, context or current, detail)))


def _load_in_cluster(configuration, environ, service_account_dir, secrets):
    """The pod's service account: host from KUBERNETES_SERVICE_HOST/_PORT, token and CA from
    the mounted directory. Returns the token."""
    host = environ["KUBERNETES_SERVICE_HOST"]
    port = environ["KUBERNETES_SERVICE_PORT"]
    if ":" in host and not host.startswith("["):
        host = "[%s]" % host  # IPv6
    configuration.host = "https://%s:%s" % (host, port)
    token = _read_text(os.path.join(service_account_dir, "token"), "service account token")
    secrets.add(token)
    token = token.strip()
    if not token:
        raise KubeError("service account token %s is empty" % os.path.join(service_account_dir, "token"))
    ca_file = os.path.join(service_account_dir, "ca.crt")
    if os.path.isfile(ca_file):
        configuration.ssl_ca_cert = ca_file
    return token


def build_connection(params, environ=None, service_account_dir=SERVICE_ACCOUNT_DIR):
    """A Connection from auth options; KubeError if they cannot be used.

    A kubeconfig is loaded with the client's own loader (or, when none is found and no host
    is given, the pod's service account); host, api_key, validate_certs, ca_cert,
    client_cert, client_key, proxy and no_proxy then override what it says.
    """
    if not HAS_KUBERNETES:
        raise KubeError("the kubernetes Python client is not installed: %s" % KUBERNETES_IMPORT_ERROR)
    environ = os.environ if environ is None else environ
    secrets = known_secrets(params, environ)
    auth = resolve_auth(params, environ)
    secrets.add(auth.get("api_key"))
    paths = kubeconfig_paths(auth, environ, service_account_dir)
    configuration = k8s_client.Configuration()
    bearer = None
    if paths:
        _load_kubeconfig(configuration, paths, auth, secrets)
    elif not auth.get("host"):
        bearer = _load_in_cluster(configuration, environ, service_account_dir, secrets)
    if auth.get("host"):
        host = auth["host"].rstrip("/")
        if not host.startswith(("http://", "https://")):
            raise KubeError("host '%s' must be a URL such as https://HOST:6443" % host)
        configuration.host = host
    if auth.get("api_key"):
        bearer = auth["api_key"]
    if auth.get("validate_certs") is not None:
        configuration.verify_ssl = auth["validate_certs"]
    for option, attribute in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file")):
        if auth.get(option):
            if not os.path.isfile(auth[option]):
                raise KubeError("%s %s does not exist" % (option, auth[option]))
            setattr(configuration, attribute, auth[option])
    _set_proxy(configuration, auth, secrets)
    groups = auth.get("impersonate_groups") or []
    if len(groups) > 1 and configuration.proxy and configuration.host.startswith("http://"):
        # urllib3 sends a plain-http request through a proxy with the headers as a dict: the
        # Impersonate-Group lines would arrive folded into one group named "a, b".
        raise KubeError("impersonate_groups: %d groups cannot go through a proxy to a plain http:// apiserver "
                        "(they would arrive as one group); use https, no_proxy, or one group" % len(groups))
    # Retries are counted and backed off here; urllib3's own would hide requests.
    configuration.retries = False
    return Connection(configuration, secrets, bearer=bearer, impersonate_user=auth.get("impersonate_user"),
                      impersonate_groups=auth.get("impersonate_groups"))


def _set_proxy(configuration, auth, secrets):
    # proxy (option or K8S_AUTH_PROXY) wins over the kubeconfig's proxy-url.
    proxy = auth.get("proxy") or getattr(configuration, "proxy", None)
    if not proxy:
        return
    secrets.add(_proxy_password(proxy))
    if bypasses_proxy(configuration.host, auth.get("no_proxy")):
        configuration.proxy = None
        return
    url, userinfo = _split_proxy(proxy)
    configuration.proxy = url
    if userinfo:
        configuration.proxy_headers = urllib3.make_headers(proxy_basic_auth=userinfo)


# ----- answers ------------------------------------------------------------------------

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


# ----- the session --------------------------------------------------------------------

class KubeSession(object):
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
            try:
                setting = self.configuration.auth_settings().get("BearerToken") or {}
            except Exception as exc:  # an exec plugin or refresh hook failing
                raise self.error("cannot get a token from the kubeconfig's user: %s: %s" % (type(exc).__name__, exc))
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
                accept=(), name=None):
        """(status, decoded JSON object, attempts) of a request that succeeded (2xx) or was
        answered with a status in accept; KubeError for anything else.

        doing: what the message says was being done ("listing nodes"); verb: the RBAC verb;
        resource: a key of RESOURCES; name: the object a 404 may be about.
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
                if 200 <= status < 300 or status in accept:
                    return status, self._decode(data, doing, resource), attempt
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

    def _status_error(self, status, data, doing, verb, resource, name, attempt):
        path, qualified, not_served = RESOURCES[resource]
        answer = status_object(data)
        message = status_message(data)
        details = answer.get("details") if isinstance(answer.get("details"), dict) else {}
        head = "%d %s from %s %s" % (status, _HTTP_REASONS.get(status, ""), self.server, doing)
        if status == 401:
            why = "the bearer token or client certificate was rejected"
        elif status == 403:
            why = "the identity may not %s %s; %s" % (verb, qualified, RBAC_HINT[verb in READ_VERBS])
            if message:
                why += " (apiserver: %s)" % message
        elif status == 404 and (name is None or details.get("name") != name):
            why = "%s is not served%s; is host a Kubernetes apiserver?" % (path, not_served)
        elif status == 410:
            why = "the continue token expired while paging (the list changed); run again or raise page_size"
        else:
            why = message or "unexpected answer"
        causes = details.get("causes") if isinstance(details.get("causes"), list) else []
        return self.error("%s: %s" % (head, why), status=status, resource=resource, attempts=attempt,
                          reason=answer.get("reason"), causes=[c for c in causes if isinstance(c, dict)])

    # ----- operations -------------------------------------------------------------
    def list_all(self, resource, label_selector=None, field_selector=None):
        """Every object of a resource ("runtimeclasses" or "nodes") as JSON dicts, following
        metadata.continue until the last page."""
        path = RESOURCES[resource][0]
        self.api_list_calls += 1
        items = []
        seen_tokens = set()
        token = None
        while True:
            query = [("limit", self.page_size)]
            if token:
                query.append(("continue", token))
            if label_selector:
                query.append(("labelSelector", label_selector))
            if field_selector:
                query.append(("fieldSelector", field_selector))
            page = self.request("GET", path, "listing %s" % resource, "list", resource, query=query)[1]
            page_items = page.get("items") or []
            if not isinstance(page_items, list):
                raise self.error("%s answered listing %s with items that are not a list" % (self.server, resource),
                                 resource=resource)
            items.extend(page_items)
            token = (page.get("metadata") or {}).get("continue") or None
            if not token:
                return items
            if token in seen_tokens:
                raise self.error("%s repeated a continue token listing %s; stopped paging" % (self.server, resource),
                                 resource=resource)
            seen_tokens.add(token)

    def _object_path(self, resource, name):
        return "%s/%s" % (RESOURCES[resource][0], quote(name, safe=""))

    def get(self, resource, name):
        """The object, or None when it does not exist."""
        status, obj, _attempts = self.request("GET", self._object_path(resource, name), "reading %s %s"
                                              % (_singular(resource), name), "get", resource, accept=(404,),
                                              name=name)
        if status == 404:
            details = obj.get("details") if isinstance(obj.get("details"), dict) else {}
            if details.get("name") != name:
                raise self._status_error(404, json.dumps(obj).encode(), "reading %s %s" % (_singular(resource), name),
                                         "get", resource, name, _attempts)
            return None
        return obj

    def apply(self, resource, name, body, field_manager, force=False, dry_run=False):
        """Server-side apply of body (an applied configuration) as field_manager; the object as
        the apiserver stored it (or, with dry_run, would store it). A conflict with another
        field manager is a KubeError with status 409 and its causes."""
        query = [("fieldManager", field_manager)]
        if force:
            query.append(("force", "true"))
        if dry_run:
            query.append(("dryRun", "All"))
        doing = "applying %s %s" % (_singular(resource), name)
        return self.request("PATCH", self._object_path(resource, name), doing, "patch", resource, query=query,
                            body=body, content_type=APPLY_CONTENT_TYPE, name=name)[1]

    def create(self, resource, body, field_manager, dry_run=False):
        """POST of a new object; None when a retry of it met the object its first attempt made."""
        name = ((body.get("metadata") or {}).get("name")) or ""
        query = [("fieldManager", field_manager)]
        if dry_run:
            query.append(("dryRun", "All"))
        status, obj, attempts = self.request("POST", RESOURCES[resource][0], "creating %s %s"
                                             % (_singular(resource), name), "create", resource, query=query,
                                             body=body, content_type="application/json", accept=(409,), name=name)
        if status == 409:
            if attempts > 1 and obj.get("reason") == "AlreadyExists":
                return None
            raise self._status_error(409, json.dumps(obj).encode(), "creating %s %s" % (_singular(resource), name),
                                     "create", resource, name, attempts)
        return obj

    def delete(self, resource, name, resource_version=None, dry_run=False):
        """DELETE, conditional on resource_version when given. True when deleted (by this
        request or an earlier attempt of it), False when there was nothing to delete."""
        options = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if resource_version:
            options["preconditions"] = {"resourceVersion": resource_version}
        query = [("dryRun", "All")] if dry_run else None
        status, obj, attempts = self.request("DELETE", self._object_path(resource, name), "deleting %s %s"
                                             % (_singular(resource), name), "delete", resource, query=query,
                                             body=options, content_type="application/json", accept=(404,),
                                             name=name)
        if status == 404:
            details = obj.get("details") if isinstance(obj.get("details"), dict) else {}
            if details.get("name") != name:
                raise self._status_error(404, json.dumps(obj).encode(), "deleting %s %s"
                                         % (_singular(resource), name), "delete", resource, name, attempts)
            return attempts > 1
        return True


def _singular(resource):
    return {"runtimeclasses": "runtimeclass", "nodes": "node"}.get(resource, resource)


def _attempts(count):
    return "1 attempt" if count == 1 else "%d attempts" % count


def _seconds(value):
    return ("%.3f" % value).rstrip("0").rstrip(".")


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

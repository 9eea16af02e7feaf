# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The connection to a cluster from kubernetes.core-style options: kubeconfig (loaded by the
kubernetes client: exec plugins, tokenFile, client certificates, proxy-url), context, host, api_key,
certificates, proxy, impersonation, or the in-cluster service account; each option else from its
K8S_AUTH_* variable."""

import os

try:
    import yaml
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
except ImportError as _import_error:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = str(_import_error)
else:
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import library_logs, proxy
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.errors import KubeError
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.scrub import Secrets


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

# Same variables as kubernetes.core; read when the option is not set. Each is K8S_AUTH_ and the option's
# kubernetes.core name, its alias where it has one (validate_certs: K8S_AUTH_VERIFY_SSL).
AUTH_ENV = dict((option, "K8S_AUTH_" + spec.get("aliases", [option])[0].upper())
                for option, spec in AUTH_ARG_SPEC.items())
_PATH_OPTIONS = ("kubeconfig", "ca_cert", "client_cert", "client_key")

# Where a pod's service account is mounted (the in-cluster configuration).
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def known_secrets(params, environ=None):
    """The secrets given as options or variables, before any file is read."""
    environ = os.environ if environ is None else environ
    secrets = Secrets([params.get("api_key"), environ.get(AUTH_ENV["api_key"])])
    for url in (params.get("proxy"), environ.get(AUTH_ENV["proxy"])):
        secrets.add(proxy.proxy_password(url))
    return secrets


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
    library_logs.install()
    position = library_logs.mark()
    try:
        k8s_config.load_kube_config(config_file=os.pathsep.join(paths), context=context,
                                    client_configuration=configuration, persist_config=False)
    except Exception as exc:  # the loader raises ConfigException, ValueError, OSError, ...
        detail = library_logs.exec_failure([str(exc)]) or (str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        raise KubeError(secrets.scrub("cannot use kubeconfig %s (context '%s'): %s"
                                      % (shown, context or current, detail)))
    # The loader logs a failed exec plugin and goes on without a credential: say so here.
    failed = library_logs.exec_failure(library_logs.since(position))
    if failed:
        raise KubeError(secrets.scrub("cannot use kubeconfig %s (context '%s'): %s" % (shown, context or current, failed)))


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
    proxy.set_proxy(configuration, auth, secrets)
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

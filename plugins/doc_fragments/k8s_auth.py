# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Kubernetes connection options of every module that talks to the apiserver: the same names and
variables as kubernetes.core, so existing inventories work."""


class ModuleDocFragment(object):
    # Same option names and variables as kubernetes.core, so existing inventories work.
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or several joined with C(:) as in E(KUBECONFIG).
      - Can also be set with E(K8S_AUTH_KUBECONFIG).
      - When neither this nor O(host) is set, E(KUBECONFIG) and then C(~/.kube/config) are read;
        when neither exists, the module uses the service account of the pod it runs in (in-cluster, from
        E(KUBERNETES_SERVICE_HOST), E(KUBERNETES_SERVICE_PORT), and the token and C(ca.crt) in
        C(/var/run/secrets/kubernetes.io/serviceaccount)).
      - When both this and O(host) are set, the kubeconfig is loaded and O(host), O(api_key),
        O(validate_certs), O(ca_cert), O(client_cert) and O(client_key) override it.
    type: path
  context:
    description:
      - The kubeconfig context to use; defaults to its C(current-context).
      - Can also be set with E(K8S_AUTH_CONTEXT).
    type: str
  host:
    description:
      - The apiserver URL, such as C(https://10.0.0.1:6443).
      - Can also be set with E(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - A bearer token, sent in the C(Authorization) header. Never logged or returned.
      - Surrounding whitespace is stripped, so a token read from a file (C(kubectl create token > f))
        or a YAML C(|) block works. The same holds for a kubeconfig's C(token) or C(tokenFile).
      - No message of the module shows a token, in any form (as is, stripped or escaped), whatever
        the verbosity; nor tokenFile contents, exec-plugin or service-account tokens, or a proxy password.
      - Can also be set with E(K8S_AUTH_API_KEY).
    type: str
  validate_certs:
    description:
      - Whether to verify the apiserver's TLS certificate.
      - Can also be set with E(K8S_AUTH_VERIFY_SSL).
      - When not set, the kubeconfig's C(insecure-skip-tls-verify) decides; without a kubeconfig
        certificates are verified (C(true)).
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - The CA bundle that signed the apiserver's certificate.
      - Can also be set with E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - A client certificate to authenticate with.
      - Can also be set with E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - The key of O(client_cert).
      - Can also be set with E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  proxy:
    description:
      - An HTTP proxy for the apiserver connection, such as C(http://proxy.example:3128); HTTPS
        apiservers are reached through it with C(CONNECT). Credentials in the URL
        (C(http://user:password@proxy.example:3128)) are sent as C(Proxy-Authorization).
      - Overrides the kubeconfig cluster's C(proxy-url).
      - Can also be set with E(K8S_AUTH_PROXY).
    type: str
  no_proxy:
    description:
      - Comma-separated hosts that are reached without O(proxy) - C(*), a host name or domain
        (C(.example.com) and C(example.com) also match its subdomains), an IP address or CIDR, or C(host:port).
      - Can also be set with E(K8S_AUTH_NO_PROXY).
    type: str
  impersonate_user:
    description:
      - Act as this user (C(Impersonate-User)); the identity authenticated must be allowed to
        impersonate it.
      - Can also be set with E(K8S_AUTH_IMPERSONATE_USER).
    type: str
  impersonate_groups:
    description:
      - Act as a member of these groups (one C(Impersonate-Group) header each).
      - Can also be set with E(K8S_AUTH_IMPERSONATE_GROUPS), comma-separated.
    type: list
    elements: str
requirements:
  - The kubernetes Python client, on the host that runs the module (the controller with
    C(delegate_to=localhost))
"""

    # Paging, retry and timeout options of the list modules.
    LIST_OPTIONS = r"""
options:
  page_size:
    description:
      - Objects asked for per request (C(limit)); the module follows C(continue) until the list
        is complete, so this only trades request count against response size.
    type: int
    default: 500
  on_invalid:
    description:
      - What to do with an object missing a required field (a RuntimeClass without
        C(metadata.name) or C(handler), a Node without C(metadata.name)) or a name defined twice.
      - C(fail) fails the task listing every such object; C(warn) leaves them out with a warning
        each. Either way RV(invalid) says why each is invalid.
    type: str
    choices: [fail, warn]
    default: fail
notes:
  - The kubernetes Python client is not needed with O(src).
  - The identity needs only C(get) and C(list) on C(runtimeclasses.node.k8s.io) and C(nodes);
    C(rbac/runtime-gate-audit.yaml) in this collection grants exactly that.
"""

    # Retries, backoff, timeout and deadline of every request, list or write.
    REQUEST_OPTIONS = r"""
options:
  retries:
    description:
      - How many times a request is retried after a 5xx, a 429, a timeout or a connection error,
        with exponential backoff. 400, 401, 403, 404, 409, 410 and 422 are never retried.
    type: int
    default: 3
  retry_delay:
    description:
      - Seconds before the first retry; each next retry waits twice as long. A 429's
        C(Retry-After) (at most 10 s) is honoured when longer.
    type: float
    default: 0.5
  request_timeout:
    description:
      - Seconds one request may take, from connecting to the last byte of the answer, before it
        counts as timed out (and is retried). An answer that trickles in slowly times out too.
    type: float
    default: 30
  deadline:
    description:
      - Seconds all the API calls of the task may take together, retries and backoff included. When
        it passes the task fails, whatever the server still sends.
    type: float
    default: 120
"""

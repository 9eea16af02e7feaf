# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Same option names and variables as kubernetes.core, so existing inventories work.
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or several joined with C(:) as in E(KUBECONFIG).
      - Can also be set with E(K8S_AUTH_KUBECONFIG).
      - When neither this nor O(host) is set, E(KUBECONFIG) and then C(~/.kube/config) are read.
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
  retries:
    description:
      - How many times a request is retried after a 5xx, a 429, a timeout or a connection error,
        with exponential backoff. 401, 403 and 404 are never retried.
    type: int
    default: 3
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

    # Backoff and timeout of every request, list or write.
    REQUEST_OPTIONS = r"""
options:
  retry_delay:
    description:
      - Seconds before the first retry; each next retry waits twice as long. A 429's
        C(Retry-After) (at most 10 s) is honoured when longer.
    type: float
    default: 0.5
  request_timeout:
    description:
      - Seconds one request may take before it counts as timed out.
    type: float
    default: 30
"""

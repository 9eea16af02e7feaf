# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Proxies: the proxy option (or the kubeconfig's proxy-url) without its credentials, no_proxy, and
the proxy password kept out of messages."""

import ipaddress

from urllib.parse import unquote, urlsplit, urlunsplit

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.errors import KubeError


def proxy_password(proxy):
    if not proxy:
        return None
    try:
        parts = urlsplit(proxy)
    except ValueError:
        return None
    return unquote(parts.password) if parts.password else None


def split_proxy(proxy):
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


def set_proxy(configuration, auth, secrets):
    # proxy (option or K8S_AUTH_PROXY) wins over the kubeconfig's proxy-url.
    proxy = auth.get("proxy") or getattr(configuration, "proxy", None)
    if not proxy:
        return
    secrets.add(proxy_password(proxy))
    if bypasses_proxy(configuration.host, auth.get("no_proxy")):
        configuration.proxy = None
        return
    url, userinfo = split_proxy(proxy)
    configuration.proxy = url
    if userinfo:
        import urllib3  # here, not at the top: a process that only asks bypasses_proxy never loads it
        configuration.proxy_headers = urllib3.make_headers(proxy_basic_auth=userinfo)

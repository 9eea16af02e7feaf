# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The event source's arguments, named as the playbooks' variables and checked before it connects: a
typo or a bad value stops it with one line that names the argument (never a credential's value)."""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._node_labels import age_seconds

# source argument -> auth option of module_utils/_k8s/client.py (the playbooks' vars/k8s_auth.yml mapping)
AUTH_ARGS = {
    "gpurt_kubeconfig": "kubeconfig", "gpurt_context": "context", "gpurt_k8s_host": "host",
    "gpurt_k8s_api_key": "api_key", "gpurt_k8s_validate_certs": "validate_certs",
    "gpurt_k8s_ca_cert": "ca_cert", "gpurt_k8s_client_cert": "client_cert", "gpurt_k8s_client_key": "client_key",
    "gpurt_k8s_proxy": "proxy", "gpurt_k8s_no_proxy": "no_proxy",
    "gpurt_k8s_impersonate_user": "impersonate_user", "gpurt_k8s_impersonate_groups": "impersonate_groups",
}
DEFAULTS = {"gpurt_watch_settle": 10, "gpurt_watch_max_concurrent": 5, "gpurt_label_max_age": "24h",
            "gpurt_watch_timeout": 300}
_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def _unset(value):
    return value is None or (isinstance(value, str) and not value.strip())


def _number(name, value, integer, minimum):
    try:
        if isinstance(value, bool):
            raise ValueError
        number = int(value) if integer else float(value)
        if integer and float(value) != number:
            raise ValueError
    except (TypeError, ValueError):
        raise ValueError("%s must be a%s number (got %r)" % (name, "n integer" if integer else "", value))
    if number < minimum:
        raise ValueError("%s must be at least %s (got %r)" % (name, minimum, value))
    return number


def source_options(args):
    """{"auth": {...}, "settle", "max_concurrent", "max_age", "watch_timeout"}; ValueError naming the argument."""
    args = dict(args or {})
    unknown = sorted(k for k in args if k not in AUTH_ARGS and k not in DEFAULTS and not str(k).startswith("eda_"))
    if unknown:
        known = ", ".join(sorted(list(AUTH_ARGS) + list(DEFAULTS)))
        plural = "s" if len(unknown) > 1 else ""
        raise ValueError("unknown argument%s %s (known: %s)" % (plural, ", ".join(unknown), known))
    values = dict(DEFAULTS)
    values.update((k, v) for k, v in args.items() if k in DEFAULTS and not _unset(v))
    auth = {}
    for name, option in AUTH_ARGS.items():
        value = args.get(name)
        if _unset(value):
            continue
        if option == "validate_certs" and not isinstance(value, bool):
            text = str(value).strip().lower()
            if text not in _TRUE + _FALSE:
                raise ValueError("%s must be true or false (got %r)" % (name, value))
            value = text in _TRUE
        elif option == "impersonate_groups":
            if isinstance(value, str):
                value = [g.strip() for g in value.split(",") if g.strip()]
            if not isinstance(value, list) or not all(isinstance(g, str) for g in value):
                raise ValueError("%s must be a list of group names" % name)
        elif option != "validate_certs" and not isinstance(value, str):
            raise ValueError("%s must be a string (got a %s)" % (name, type(value).__name__))
        auth[option] = value
    return {
        "auth": auth,
        "settle": _number("gpurt_watch_settle", values["gpurt_watch_settle"], False, 0),
        "max_concurrent": _number("gpurt_watch_max_concurrent", values["gpurt_watch_max_concurrent"], True, 1),
        "max_age": age_seconds(values["gpurt_label_max_age"]),
        "watch_timeout": _number("gpurt_watch_timeout", values["gpurt_watch_timeout"], True, 1),
    }

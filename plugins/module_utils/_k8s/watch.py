# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A watch of Nodes on a session's connection: one list, then a watch from the list's
resourceVersion with bookmarks. The caller relists on WatchExpired (410 Gone) and reconnects, from
the last version seen, on WatchDropped. Messages go through the session's secret scrubber."""

import json

from urllib.parse import urlencode

try:
    import urllib3
except ImportError:  # the session reports the missing client
    urllib3 = None

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.errors import KubeError
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.resources import RESOURCES

NODES = RESOURCES["nodes"][0]


class WatchExpired(KubeError):
    """410 Gone: the version to go on from is older than the apiserver keeps; list again."""


class WatchDropped(KubeError):
    """The connection ended or failed; go on from the last version seen."""


def list_nodes(session):
    """(nodes, resourceVersion) of one list, every page."""
    items = session.list_all("nodes")
    return items, session.last_list_version


def watch_nodes(session, resource_version, timeout_seconds=300, connect_timeout=10.0):
    """Yield (type, object) for each watch event after resource_version: ADDED, MODIFIED, DELETED
    (the Node), BOOKMARK (an object whose metadata.resourceVersion is the version to go on from).
    Ends when the apiserver closes the watch after timeout_seconds. WatchExpired on 410 Gone,
    WatchDropped when the connection fails or drops, KubeError for any other refusal."""
    query = [("watch", "1"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", int(timeout_seconds))]
    if resource_version:
        query.append(("resourceVersion", resource_version))
    url = "%s%s?%s" % (session.server, NODES, urlencode(query))
    try:
        response = session.pool.request("GET", url, headers=session._headers(None), preload_content=False,
                                        retries=False, redirect=False,
                                        timeout=urllib3.Timeout(connect=connect_timeout, read=timeout_seconds + 30))
    except urllib3.exceptions.HTTPError as exc:
        raise WatchDropped(session.secrets.scrub("cannot watch nodes on %s: %s" % (session.server, exc)))
    try:
        if response.status == 410:
            raise WatchExpired("resourceVersion %s is too old to watch from (410 Gone)" % resource_version, status=410)
        if response.status != 200:
            body = response.read()
            if response.status >= 500 or response.status == 429:
                raise WatchDropped(session._status_text(response.status, body), status=response.status)
            raise session._status_error(response.status, body, "watching nodes", "watch", "nodes", None, 1)
        for line in _lines(session, response):
            kind, obj = _event(session, line)
            if kind == "ERROR":
                code = obj.get("code") if isinstance(obj, dict) else None
                if code == 410:
                    raise WatchExpired("the watch from resourceVersion %s expired (410 Gone)" % resource_version,
                                       status=410)
                raise WatchDropped(session.secrets.scrub("the watch of nodes ended with an error: %s"
                                                         % (obj.get("message") if isinstance(obj, dict) else obj)))
            yield kind, obj
    finally:
        response.release_conn()


def _lines(session, response):
    pending = b""
    try:
        for chunk in response.stream(65536, decode_content=True):
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line.strip():
                    yield line
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise WatchDropped(session.secrets.scrub("the watch of nodes on %s dropped: %s" % (session.server, exc)))
    if pending.strip():
        yield pending


def _event(session, line):
    try:
        event = json.loads(line.decode("utf-8"))
        return event["type"], event["object"]
    except (ValueError, UnicodeDecodeError, KeyError, TypeError):
        raise WatchDropped("%s sent a watch line that is not a watch event" % session.server)

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpurt.runtime_gate.runtime_handlers: an Event-Driven Ansible source that keeps the runtime gate
between runs.

It list-watches the cluster's Nodes (one list, then a watch from its resourceVersion with bookmarks;
410 Gone lists again, a dropped connection reconnects with backoff) and compares each Node's
status.runtimeHandlers, which the kubelet copies from the running containerd, with the verified labels
runtime-gate.gpurt.io/<handler> that only an audit's proof writes.

- A Node whose label names a handler the running containerd no longer lists is fenced at once: the
  source removes that label itself (a JSON patch pinned to the Node's uid; no node access), so the
  scheduler stops placing the gated class's pods there within seconds, never waiting behind a running
  re-audit. Then it emits `handler_lost`.
- Once such a Node, or one that changed (a handler listed again or newly, a new bootID, containerd or
  kubelet version, Ready again, a new Node), has been stable for `gpurt_watch_settle` seconds, it emits
  `node_changed`; labels older than `gpurt_label_max_age` give `label_stale`. Both carry `nodes`, at
  most `gpurt_watch_max_concurrent` of them: the rulebook re-audits each batch by proof (fence.yml).
- Nodes that list no handler at all (containerd 1.x) give no live signal: they are named once in the
  log and never fenced on silence; their labels age into label_stale.

Options (all optional): the playbooks' connection variables gpurt_kubeconfig, gpurt_context,
gpurt_k8s_host, gpurt_k8s_api_key, gpurt_k8s_validate_certs, gpurt_k8s_ca_cert, gpurt_k8s_client_cert,
gpurt_k8s_client_key, gpurt_k8s_proxy, gpurt_k8s_no_proxy, gpurt_k8s_impersonate_user,
gpurt_k8s_impersonate_groups (else K8S_AUTH_* and the kubeconfig's defaults); gpurt_watch_settle
(seconds, default 10), gpurt_watch_max_concurrent (default 5), gpurt_label_max_age (default 24h),
gpurt_watch_timeout (seconds a watch request stays open, default 300). An empty or null value means unset.
No credential is ever put in an event or a log line.

    sources:
      - gpurt.runtime_gate.runtime_handlers:
          gpurt_kubeconfig: /etc/gpurt/kubeconfig
"""

import asyncio
import logging
import os
import sys
import threading
import time

try:
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import watch as _probe  # noqa: F401
except ImportError:
    # ansible-rulebook runs this file by path: the collections root is 8 directories up.
    _ROOT = os.path.abspath(__file__)
    for _level in range(8):
        _ROOT = os.path.dirname(_ROOT)
    sys.path.insert(0, _ROOT)

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.client import build_connection
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.errors import KubeError
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.node_fence import fence
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.session import KubeSession
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.watch import (
    WatchDropped, WatchExpired, list_nodes, watch_nodes)
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._gate_watch.options import source_options
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._gate_watch.watcher import GateWatcher

LOG = logging.getLogger("gpurt.runtime_gate.runtime_handlers")
TICK = 0.5
BACKOFF_MAX = 30.0


class _Watch(threading.Thread):
    """List and watch in a thread of its own (the client is blocking); hands what it sees to the loop."""

    def __init__(self, connection, options, deliver):
        super(_Watch, self).__init__(name="gpurt-node-watch", daemon=True)
        self.connection = connection
        self.options = options
        self.deliver = deliver
        self.stopping = threading.Event()

    def run(self):
        version, delay = None, 1.0
        while not self.stopping.is_set():
            session = KubeSession(self.connection, deadline=3600.0)
            try:
                if version is None:
                    objects, version = list_nodes(session)
                    self.deliver(("list", objects))
                for kind, obj in watch_nodes(session, version, self.options["watch_timeout"]):
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    if kind != "BOOKMARK":
                        self.deliver(("event", kind, obj))
                    delay = 1.0
                    if self.stopping.is_set():
                        return
            except WatchExpired as exc:
                LOG.info("%s; listing the Nodes again", exc)
                version = None
            except (WatchDropped, KubeError) as exc:
                self.deliver(("trouble", str(exc), delay))
                self.stopping.wait(delay)
                delay = min(delay * 2, BACKOFF_MAX)
            except Exception as exc:  # never a traceback with a token in it: type and scrubbed text
                self.deliver(("trouble", self.connection.secrets.scrub("%s: %s" % (type(exc).__name__, exc)), delay))
                self.stopping.wait(delay)
                delay = min(delay * 2, BACKOFF_MAX)
            finally:
                session.close()


def _fence(connection, view, handlers):
    with KubeSession(connection, deadline=30.0, request_timeout=10.0) as session:
        try:
            return fence(session, view.obj, handlers)
        except KubeError as exc:
            return {"action": "failed", "detail": str(exc)}


async def _emit(queue, outbox, wake):
    """Hand events to the rulebook in order; the rulebook's queue may block, the watch must not."""
    while True:
        while not outbox:
            wake.clear()
            await wake.wait()
        await queue.put(outbox.pop(0))


async def main(queue, args):
    try:
        options = source_options(args)
        connection = build_connection(options["auth"])
    except (ValueError, KubeError) as exc:
        LOG.error("gpurt.runtime_gate.runtime_handlers cannot start: %s", exc)
        raise SystemExit(1)
    loop = asyncio.get_running_loop()
    inbox = asyncio.Queue()
    watcher = GateWatcher(options["settle"], options["max_concurrent"], options["max_age"])
    thread = _Watch(connection, options, lambda item: loop.call_soon_threadsafe(inbox.put_nowait, item))
    outbox, wake, silent_named = [], asyncio.Event(), set()
    emitter = asyncio.ensure_future(_emit(queue, outbox, wake))
    thread.start()
    trouble_since = None

    def send(event):
        outbox.append(event)
        wake.set()

    async def make_fences(fences):
        results = await asyncio.gather(*[loop.run_in_executor(None, _fence, connection, view, handlers)
                                         for view, handlers in fences])
        for (view, handlers), result in zip(fences, results):
            LOG.warning("fenced node %s: lost %s (%s%s)", view.name, ", ".join(handlers), result["action"],
                        (": " + result["detail"]) if result.get("detail") else "")
            send(watcher.fenced(view, handlers, result, time.time()))

    try:
        while True:
            try:
                item = await asyncio.wait_for(inbox.get(), TICK)
            except asyncio.TimeoutError:
                item = None
            now = time.time()
            fences = []
            if item is not None and item[0] == "trouble":
                if trouble_since is None:
                    trouble_since = now
                LOG.warning("lost the watch of the Nodes (%s); trying again in %.0f s. Until it is back no Node is "
                            "fenced, and labels age into label_stale", item[1], item[2])
            elif item is not None:
                if trouble_since is not None:
                    LOG.warning("watching the Nodes again after %.0f s", now - trouble_since)
                    trouble_since = None
                if item[0] == "list":
                    first = not watcher.listed
                    fences = watcher.relisted(item[1], now)
                    if first:  # said once the first list is the baseline: a change after it is seen
                        LOG.warning("watching the %d Nodes of %s (settle %ss, at most %d re-audits at a time, labels "
                                    "older than %ss are stale)", len(item[1]), connection.configuration.host,
                                    options["settle"], options["max_concurrent"], int(options["max_age"]))
                else:
                    fences = watcher.observe(item[1], item[2], now)
            for name in watcher.take_silent(silent_named):
                LOG.warning("node %s lists no runtime handler in status.runtimeHandlers (containerd 1.x, or a "
                            "kubelet older than 1.30): no live signal, so it is never fenced on silence; schedule "
                            "the audit for it", name)
            retries, batches = watcher.tick(now)
            await make_fences(fences + retries)
            for event in batches:
                LOG.info("%s: %s", event["type"], ", ".join(event["nodes"]))
                send(event)
    finally:
        thread.stopping.set()
        emitter.cancel()

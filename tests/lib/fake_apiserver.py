"""A stand-in for kube-apiserver, for tests and the demo. It is NOT an apiserver.

It speaks only what the runtime gate reads: GET /apis/node.k8s.io/v1/runtimeclasses
(RuntimeClassList) and GET /api/v1/nodes (NodeList), with limit/continue paging, an
equality-only labelSelector and fieldSelector=metadata.name=X, plus /healthz, /version,
/api and /apis discovery. Every other path is 404 and every other method 405.

Behaviour that mirrors the real apiserver:
- list JSON with metadata.resourceVersion, metadata.continue while more pages remain,
  items carrying apiVersion, kind and metadata;
- Authorization: Bearer <token> required (except /healthz): otherwise 401 Status JSON;
- a continue token it did not issue for the current data is 410 Gone (Status, reason Expired).

Test controls: script(resource, [500, 500, 200]) answers the next requests with those
statuses (200 = serve normally; a dict {"status": 200, "sleep": 2} sleeps first, to test
timeouts; "body" (dict or bytes) replaces the answer), respond_always(resource, 403) answers every request so, and `requests` records
each request (path, query, auth presence: never the token) so tests can count list calls.

Command line (for the benchmark/demo):
    python tests/lib/fake_apiserver.py --data DATA.json --token T [--port 0]
        [--port-file F] [--url-file F] [--kubeconfig F] [--tls]
DATA.json is {"runtimeclasses": [...], "nodes": [...]}. Prints "FAKE_APISERVER_URL=<url>"
and runs until SIGINT/SIGTERM.
"""

import argparse
import base64
import copy
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import yaml

LIST_PATHS = {
    "/apis/node.k8s.io/v1/runtimeclasses": ("runtimeclasses", "RuntimeClass", "node.k8s.io/v1"),
    "/api/v1/nodes": ("nodes", "Node", "v1"),
}
KIND_OF = dict((resource, (kind, api_version)) for resource, kind, api_version in LIST_PATHS.values())
API_GROUP_OF = {"runtimeclasses": "node.k8s.io", "nodes": ""}
REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    410: "Expired", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}
DEFAULT_IDENTITY = "system:serviceaccount:gpurt-runtime-gate:runtime-gate-audit"


def status_body(code, message, reason=None):
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason or REASONS.get(code, ""), "code": code,
    }


def _selector_terms(selector):
    terms = []
    for raw in selector.split(","):
        term = raw.strip()
        if not term:
            continue
        for operator in ("!=", "==", "="):
            if operator in term:
                key, value = term.split(operator, 1)
                terms.append((key.strip(), "!=" if operator == "!=" else "=", value.strip()))
                break
        else:
            if " " in term or "(" in term:
                raise ValueError("unsupported selector term %r (this stand-in knows equality only)" % term)
            terms.append((term.lstrip("!"), "absent" if term.startswith("!") else "present", None))
    return terms


def _matches(values, terms):
    for key, operator, value in terms:
        if operator == "=" and values.get(key) != value:
            return False
        if operator == "!=" and values.get(key) == value:
            return False
        if operator == "present" and key not in values:
            return False
        if operator == "absent" and key in values:
            return False
    return True


def _name_of(obj):
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


class FakeApiServer(object):
    """Threaded HTTP server on 127.0.0.1 serving RuntimeClass and Node lists.

    Use as a context manager, or call start() and stop(). `url` is its address.
    """

    def __init__(self, runtimeclasses=(), nodes=(), token="fake-apiserver-token", port=0,
                 tls=False, identity=DEFAULT_IDENTITY):
        self.token = token
        self.identity = identity
        self.port = port
        self.tls = tls
        self.requests = []
        self._lock = threading.Lock()
        self._scripts = {}
        self._always = {}
        self._objects = {"runtimeclasses": [], "nodes": []}
        self._resource_version = 1000
        self._httpd = None
        self._thread = None
        self._tls_dir = None
        self.ca_file = None
        self.set_objects("runtimeclasses", runtimeclasses)
        self.set_objects("nodes", nodes)

    # ----- controls -----------------------------------------------------------------
    def set_objects(self, resource, objects):
        """Replace the stored objects; bumps resourceVersion, so old continue tokens expire."""
        with self._lock:
            self._objects[resource] = [copy.deepcopy(obj) for obj in objects]
            self._resource_version += 1

    def script(self, resource, steps):
        """Answer the next requests for resource (or None: any path) with these steps:
        an HTTP status (200 = serve normally) or {"status": N, "sleep": seconds}."""
        with self._lock:
            self._scripts.setdefault(resource, []).extend(
                step if isinstance(step, dict) else {"status": step} for step in steps)

    def respond_always(self, resource, step):
        """Answer every request for resource with this step (None clears it)."""
        with self._lock:
            if step is None:
                self._always.pop(resource, None)
            else:
                self._always[resource] = step if isinstance(step, dict) else {"status": step}

    def list_requests(self, resource):
        """Requests that reached a list path of resource, whatever their answer."""
        return [r for r in self.requests if r["resource"] == resource]

    def reset_requests(self):
        with self._lock:
            del self.requests[:]

    # ----- lifecycle ----------------------------------------------------------------
    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def start(self):
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._httpd.daemon_threads = True
        # A handler sleeping for a timeout test must not hold up stop().
        self._httpd.block_on_close = False
        if self.tls:
            self._tls_dir = tempfile.mkdtemp(prefix="fake-apiserver-tls-")
            cert, key = make_self_signed_cert(self._tls_dir)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
            self.ca_file = cert
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self):
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._tls_dir:
            shutil.rmtree(self._tls_dir, ignore_errors=True)
            self._tls_dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    # ----- request handling (called from handler threads) --------------------------
    def _next_step(self, resource):
        with self._lock:
            for key in (resource, None):
                if self._scripts.get(key):
                    return self._scripts[key].pop(0)
            for key in (resource, None):
                if key in self._always:
                    return self._always[key]
        return {"status": 200}

    def _encode_continue(self, start, query_key):
        raw = json.dumps({"rv": self._resource_version, "start": start, "q": query_key}).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def _decode_continue(self, token, query_key):
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            state = json.loads(raw.decode())
            if state["rv"] == self._resource_version and state["q"] == query_key:
                return int(state["start"])
        except (ValueError, KeyError, TypeError):
            pass
        return None

    def list_page(self, resource, query):
        """(code, body) for one list request."""
        kind, api_version = KIND_OF[resource]
        try:
            label_terms = _selector_terms(query.get("labelSelector", ""))
            field_terms = _selector_terms(query.get("fieldSelector", ""))
        except ValueError as exc:
            return 400, status_body(400, str(exc))
        for key, _, _ in field_terms:
            if key != "metadata.name":
                return 400, status_body(400, 'field label not supported: %s' % key)
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            return 400, status_body(400, "limit must be an integer")
        with self._lock:
            objects = sorted(self._objects[resource], key=_name_of)
            resource_version = self._resource_version
            query_key = [query.get("labelSelector", ""), query.get("fieldSelector", "")]
            start = 0
            if query.get("continue"):
                start = self._decode_continue(query["continue"], query_key)
                if start is None:
                    return 410, status_body(410, "The provided continue parameter is too old to display a "
                                                 "consistent list result. You can start a new list without "
                                                 "the continue parameter.")
            matching = []
            for obj in objects:
                labels = ((obj.get("metadata") or {}).get("labels") or {}) if isinstance(obj, dict) else {}
                if _matches(labels, label_terms) and _matches({"metadata.name": _name_of(obj)}, field_terms):
                    matching.append(obj)
            end = start + limit if limit > 0 else len(matching)
            page = matching[start:end]
            metadata = {"resourceVersion": str(resource_version)}
            if end < len(matching):
                metadata["continue"] = self._encode_continue(end, query_key)
                metadata["remainingItemCount"] = len(matching) - end
        items = []
        for obj in page:
            item = copy.deepcopy(obj)
            if isinstance(item, dict):
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
            items.append(item)
        return 200, {"kind": kind + "List", "apiVersion": api_version, "metadata": metadata, "items": items}


class _Handler(BaseHTTPRequestHandler):
    fake = None  # set on the subclass made per server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep test output clean
        pass

    def _send(self, code, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass  # the client gave up (timeout test)

    def _auth_state(self):
        header = self.headers.get("Authorization")
        if not header:
            return "missing"
        return "ok" if header == "Bearer %s" % self.fake.token else "wrong"

    def do_GET(self):
        fake = self.fake
        parts = urlsplit(self.path)
        query = dict((key, values[-1]) for key, values in parse_qs(parts.query).items())
        path = parts.path.rstrip("/") or "/"
        if path in ("/healthz", "/livez", "/readyz"):
            return self._send(200, b"ok", "text/plain")
        resource = LIST_PATHS.get(path, (None,))[0]
        record = {"method": "GET", "path": path, "query": query, "resource": resource,
                  "auth": self._auth_state(), "status": None, "time": time.time()}
        with fake._lock:
            fake.requests.append(record)
        if record["auth"] != "ok":
            # The apiserver authenticates before anything else; scripted steps stay queued.
            record["status"] = 401
            return self._send(401, status_body(401, "Unauthorized"))
        step = fake._next_step(resource) if resource else {"status": 200}
        if step.get("sleep"):
            time.sleep(step["sleep"])
        code = step.get("status", 200)
        if step.get("body") is not None:
            body = step["body"]
        elif code != 200:
            body = self._scripted_body(code, resource)
        elif resource:
            code, body = fake.list_page(resource, query)
        else:
            code, body = self._discovery(path)
        record["status"] = code
        self._send(code, body)

    def _scripted_body(self, code, resource):
        if code == 403:
            group = API_GROUP_OF.get(resource, "")
            full = "%s.%s" % (resource, group) if group else resource
            return status_body(403, '%s is forbidden: User "%s" cannot list resource "%s" in API group "%s" '
                                    'at the cluster scope' % (full, self.fake.identity, resource, group))
        return status_body(code, "scripted %d from the fake apiserver" % code)

    def _discovery(self, path):
        if path == "/version":
            return 200, {"major": "1", "minor": "33", "gitVersion": "v1.33.0-fake", "platform": "linux/amd64"}
        if path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if path == "/apis":
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
                "name": "node.k8s.io",
                "versions": [{"groupVersion": "node.k8s.io/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "node.k8s.io/v1", "version": "v1"}}]}
        return 404, status_body(404, "the server could not find the requested resource")

    def _refuse(self):
        self._send(405, status_body(405, "this fake apiserver only answers GET"))

    do_POST = do_PUT = do_PATCH = do_DELETE = _refuse


def make_self_signed_cert(directory):
    """(cert, key) paths of a self-signed cert for 127.0.0.1, made with the openssl CLI."""
    openssl = shutil.which("openssl")
    if not openssl:
        raise RuntimeError("openssl CLI not found")
    cert = os.path.join(directory, "tls.crt")
    key = os.path.join(directory, "tls.key")
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=fake-apiserver", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", key, "-out", cert], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return cert, key


def write_kubeconfig(path, server, token=None, contexts=None, current_context=None,
                     certificate_authority=None, insecure_skip_tls_verify=None):
    """Write a kubeconfig; contexts maps context name -> token (default {"fake": token}).
    Each context gets its own cluster and user entry, all pointing at `server`."""
    contexts = contexts if contexts is not None else {"fake": token}
    config = {"apiVersion": "v1", "kind": "Config", "preferences": {},
              "clusters": [], "users": [], "contexts": []}
    for name, context_token in contexts.items():
        cluster = {"server": server}
        if certificate_authority:
            cluster["certificate-authority"] = certificate_authority
        if insecure_skip_tls_verify is not None:
            cluster["insecure-skip-tls-verify"] = insecure_skip_tls_verify
        config["clusters"].append({"name": name + "-cluster", "cluster": cluster})
        config["users"].append({"name": name + "-user", "user": {"token": context_token} if context_token else {}})
        config["contexts"].append({"name": name, "context": {"cluster": name + "-cluster", "user": name + "-user"}})
    if current_context is None and contexts:
        current_context = next(iter(contexts))
    if current_context:
        config["current-context"] = current_context
    _write_atomically(path, yaml.safe_dump(config, default_flow_style=False))
    return path


def _write_atomically(path, text):
    # Readers poll these files; they must never see half of one.
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Stand-in for kube-apiserver (RuntimeClass and Node lists only).")
    parser.add_argument("--data", help='JSON file {"runtimeclasses": [...], "nodes": [...]}')
    parser.add_argument("--token", default="fake-apiserver-token", help="the bearer token clients must send")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--port-file", help="write the port number here once listening")
    parser.add_argument("--url-file", help="write the URL here once listening")
    parser.add_argument("--kubeconfig", help="write a kubeconfig (context 'fake') for this server here")
    parser.add_argument("--tls", action="store_true", help="serve HTTPS with a self-signed cert (needs openssl)")
    args = parser.parse_args(argv)
    data = {}
    if args.data:
        with open(args.data) as handle:
            data = json.load(handle)
    server = FakeApiServer(data.get("runtimeclasses", []), data.get("nodes", []), token=args.token,
                           port=args.port, tls=args.tls).start()
    if args.kubeconfig:
        write_kubeconfig(args.kubeconfig, server.url, token=args.token, certificate_authority=server.ca_file)
    if args.url_file:
        _write_atomically(args.url_file, server.url + "\n")
    if args.port_file:
        _write_atomically(args.port_file, "%d\n" % server.port)
    print("FAKE_APISERVER_URL=%s" % server.url, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

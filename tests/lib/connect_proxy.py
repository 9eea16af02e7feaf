"""A forward HTTP proxy on 127.0.0.1, for tests of the `proxy` option. It is not a real proxy.

It answers CONNECT (an HTTPS tunnel, as urllib3 opens for an https:// apiserver) and
absolute-form requests (GET http://host:port/path, as urllib3 sends for an http:// apiserver)
by piping bytes to the target, which must be on 127.0.0.1 (anything else is 403). With
`credentials` ("user:password") a request without the matching Proxy-Authorization is 407.
`requests` records each (method, target, proxy_authorization) so tests can see it was used.
"""
import base64
import select
import socket
import socketserver
import threading
from urllib.parse import urlsplit

ALLOWED_HOSTS = ("127.0.0.1", "localhost")


class _Handler(socketserver.BaseRequestHandler):
    proxy = None  # set on the subclass made per proxy

    def _read_head(self, sock):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                return None, None
            data += chunk
            if len(data) > 65536:
                return None, None
        head, rest = data.split(b"\r\n\r\n", 1)
        return head, rest

    def handle(self):
        sock = self.request
        head, rest = self._read_head(sock)
        if head is None:
            return
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, _version = lines[0].split(" ", 2)
        except ValueError:
            sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return
        headers = {}
        for line in lines[1:]:
            key, _sep, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        authorization = headers.get("proxy-authorization")
        self.proxy.record(method, target, authorization)
        if self.proxy.credentials:
            expected = "Basic " + base64.b64encode(self.proxy.credentials.encode()).decode()
            if authorization != expected:
                sock.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                             b"Proxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n")
                return
        if method == "CONNECT":
            host, _sep, port = target.rpartition(":")
        else:
            parts = urlsplit(target)
            host, port = parts.hostname, parts.port or 80
        if host not in ALLOWED_HOSTS:
            sock.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            return
        try:
            upstream = socket.create_connection((host, int(port)), timeout=10)
        except OSError:
            sock.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        with upstream:
            if method == "CONNECT":
                sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
            else:
                upstream.sendall(head + b"\r\n\r\n" + rest)
            self._pipe(sock, upstream)

    def _pipe(self, left, right):
        sockets = [left, right]
        while not self.proxy.stopping.is_set():
            readable, _unused, _unused = select.select(sockets, [], [], 0.2)
            for source in readable:
                try:
                    data = source.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                (right if source is left else left).sendall(data)


class ConnectProxy(object):
    """Use as a context manager; `url` is its address."""

    def __init__(self, credentials=None):
        self.credentials = credentials
        self.requests = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server = None
        self.port = None

    def record(self, method, target, authorization):
        with self._lock:
            self.requests.append({"method": method, "target": target, "proxy_authorization": authorization})

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        handler = type("Handler", (_Handler,), {"proxy": self})
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        thread.daemon = True
        thread.start()
        return self

    def stop(self):
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

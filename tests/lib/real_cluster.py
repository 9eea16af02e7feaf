"""A real Kubernetes control plane on 127.0.0.1 for tests and people: etcd, kube-apiserver (TLS,
RBAC, token file, client certificates, service-account keys), kube-scheduler and kwok's controller,
all built by tools/build-go-binaries. State, certificates, logs and PIDs live in one directory.

    cluster = Cluster(directory).up()      # returns once /readyz answers
    cluster.kubeconfig                     # admin (system:masters) kubeconfig
    cluster.kubeconfig_for("gpurt-nobody") # a user with no RBAC grant (token)
    Cluster(directory).down()              # stops what up() started, by PID
    baseline = cluster.objects()           # {API path: uid} of every object it holds
    cluster.reset(baseline)                # deletes every object made since (the next test module's turn)

tools/dev-cluster and the `real_cluster` fixture (tests/conftest.py) share this code. Plain Python 3
and the openssl CLI: no third-party package, so tools/dev-cluster runs outside the venv too.
"""
import contextlib
import fcntl
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.parse
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARIES = ("etcd", "kube-apiserver", "kube-scheduler")
# Token-file users (name -> groups). The admin also has a client certificate; tests make more
# identities as ServiceAccounts (rbac/) with TokenRequest, or as certificate users via user_cert().
TOKEN_USERS = {"gpurt-admin": ["system:masters"], "gpurt-nobody": []}
# kwok moves only Nodes that carry this annotation (so API-made Nodes without it stay as written).
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
# Our stages for kwok's controller: Nodes Ready, bound pods Running, deleted pods gone.
KWOK_STAGES = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "kwok", name + ".yaml")
               for name in ("node-ready", "pod-running", "pod-delete")]


ADMISSION_PLUGINS = "RuntimeClass,ValidatingAdmissionPolicy,ServiceAccount"


class ClusterError(Exception):
    pass


def bin_dir():
    """Where tools/build-go-binaries linked the binaries ($GPURT_BIN_DIR, else <repo>/.cache/bin)."""
    return os.environ.get("GPURT_BIN_DIR") or os.path.join(REPO, ".cache", "bin")


def binary(name):
    return os.path.join(bin_dir(), name)


def missing_binaries():
    return [name for name in BINARIES if not os.access(binary(name), os.X_OK)]


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _openssl(*args, cwd):
    proc = subprocess.run(["openssl"] + list(args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise ClusterError("openssl %s failed: %s" % (args[0], proc.stderr.strip()))


def _start_time(pid):
    """The process's start time (clock ticks since boot), so a recycled PID is never signalled."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]


def write_kubeconfig(path, server, ca, user, cert=None, key=None, token=None):
    credentials = {"token": token} if token else {"client-certificate": cert, "client-key": key}
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": user, "preferences": {},
        "clusters": [{"name": "gpurt-dev", "cluster": {"server": server, "certificate-authority": ca}}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": user, "context": {"cluster": "gpurt-dev", "user": user}}],
    }
    with open(path, "w") as handle:
        json.dump(doc, handle, indent=2)  # JSON is YAML: every client reads it
    os.chmod(path, 0o600)
    return path


class Cluster(object):
    def __init__(self, directory, apiserver_args=(), admission_plugins=ADMISSION_PLUGINS):
        """apiserver_args: more kube-apiserver flags (--runtime-config=... to turn an API off, with the
        admission plugins that need it left out of admission_plugins and disabled)."""
        self.dir = os.path.abspath(str(directory))
        self.apiserver_args = list(apiserver_args)
        self.admission_plugins = admission_plugins
        self.pki = os.path.join(self.dir, "pki")
        self.logs = os.path.join(self.dir, "logs")
        self.state_path = os.path.join(self.dir, "cluster.json")
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.ca = os.path.join(self.pki, "ca.crt")
        self.state = self._load_state()

    # -- state ---------------------------------------------------------------------------------
    def _load_state(self):
        try:
            with open(self.state_path) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return {"processes": {}}

    def _save_state(self):
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(self.state, handle, indent=2)
        os.replace(tmp, self.state_path)

    @property
    def server(self):
        return "https://127.0.0.1:%d" % self.state["ports"]["apiserver"]

    @property
    def kwok(self):
        """True when kwok's controller runs (Nodes annotated KWOK_ANNOTATION=fake get Ready, pods Running)."""
        return "kwok" in self.state["processes"]

    def running(self):
        """The names of the processes up() started that still run."""
        return sorted(name for name, proc in self.state["processes"].items()
                      if _start_time(proc["pid"]) == proc["start_time"])

    # -- certificates and credentials ----------------------------------------------------------
    def _key(self, name):
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", name + ".key",
                 cwd=self.pki)

    def _sign(self, name, subject, extensions):
        self._key(name)
        _openssl("req", "-new", "-key", name + ".key", "-subj", subject, "-out", name + ".csr", cwd=self.pki)
        with open(os.path.join(self.pki, name + ".ext"), "w") as handle:
            handle.write(extensions)
        _openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-days", "30", "-extfile", name + ".ext", "-out", name + ".crt", cwd=self.pki)
        return os.path.join(self.pki, name + ".crt"), os.path.join(self.pki, name + ".key")

    def user_cert(self, user, groups=()):
        """(cert, key) of a client certificate for USER in GROUPS, signed by the cluster's CA."""
        subject = "".join("/O=%s" % g for g in groups) + "/CN=%s" % user
        return self._sign(self._cert_name(user), subject, "extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n")

    def _make_pki(self):
        os.makedirs(self.pki, exist_ok=True)
        self._key("ca")
        _openssl("req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=gpurt-dev-cluster-ca", "-days", "30",
                 "-out", "ca.crt", cwd=self.pki)
        self._sign("apiserver", "/CN=kube-apiserver",
                   "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
                   "DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n")
        self.user_cert("gpurt-admin", ["system:masters"])
        self.user_cert("system:kube-scheduler")
        self._key("service-account")
        _openssl("pkey", "-in", "service-account.key", "-pubout", "-out", "service-account.pub", cwd=self.pki)
        tokens = {}
        with open(os.path.join(self.pki, "tokens.csv"), "w") as handle:
            for user, groups in sorted(TOKEN_USERS.items()):
                tokens[user] = os.urandom(16).hex()
                handle.write('%s,%s,%s,"%s"\n' % (tokens[user], user, user, ",".join(groups)))
        os.chmod(os.path.join(self.pki, "tokens.csv"), 0o600)
        self.state["tokens"] = tokens

    @staticmethod
    def _cert_name(user):
        return "user-" + user.replace(":", "-")

    def token(self, user):
        return self.state["tokens"][user]

    def kubeconfig_for(self, user, path=None, auth=None):
        """A kubeconfig for USER: its client certificate (user_cert) when it has one, else its token
        (TOKEN_USERS); auth="token" or "cert" chooses."""
        path = path or os.path.join(self.dir, "kubeconfig-%s-%s" % (auth or "user", user.replace(":", "-")))
        cert = os.path.join(self.pki, self._cert_name(user) + ".crt")
        if auth == "token" or (auth is None and not os.path.exists(cert)):
            return write_kubeconfig(path, self.server, self.ca, user, token=self.token(user))
        return write_kubeconfig(path, self.server, self.ca, user, cert=cert, key=cert[:-4] + ".key")

    # -- processes -----------------------------------------------------------------------------
    def _start(self, name, argv):
        with open(os.path.join(self.logs, name + ".log"), "ab") as log:
            offset = log.tell()  # where this process's lines begin in the log
            proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd=self.dir,
                                    start_new_session=True)
        self.state["processes"][name] = {"pid": proc.pid, "start_time": _start_time(proc.pid), "log_offset": offset}
        self.state.setdefault("argv", {})[name] = list(argv)
        self._save_state()
        return proc

    def _process_log(self, name):
        """What the running process NAME has logged so far (the log holds every earlier process's lines too)."""
        try:
            with open(os.path.join(self.logs, name + ".log"), "rb") as handle:
                handle.seek(self.state["processes"][name].get("log_offset", 0))
                return handle.read().decode("utf-8", "replace")
        except (OSError, KeyError):
            return ""

    def admission_param_informer_started(self):
        """True when this kube-apiserver process started an informer for a policy's paramKind. Once no
        binding uses that paramKind it stops the informer for good, and a later policy binding judges with
        its last copy of the parameters (https://github.com/kubernetes/kubernetes/issues/130887)."""
        return "informer started for " in self._process_log("kube-apiserver")

    def _log_tail(self, name, lines=25):
        try:
            with open(os.path.join(self.logs, name + ".log"), "rb") as handle:
                return "\n".join(handle.read().decode("utf-8", "replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _wait(self, name, proc, ready, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if proc.poll() is not None:
                raise ClusterError("%s exited with %s before it was ready; its log (%s):\n%s" % (
                    name, proc.returncode, os.path.join(self.logs, name + ".log"), self._log_tail(name)))
            if ready():
                return
            time.sleep(0.2)
        raise ClusterError("%s was not ready within %d s; its log:\n%s" % (name, timeout, self._log_tail(name)))

    def _get(self, url, context=None):
        try:
            with urllib.request.urlopen(url, context=context, timeout=2) as response:
                return response.status, response.read().decode("utf-8", "replace")
        except (OSError, ValueError) as exc:
            return None, str(exc)

    def admin_ssl_context(self):
        context = ssl.create_default_context(cafile=self.ca)
        cert = os.path.join(self.pki, self._cert_name("gpurt-admin"))
        context.load_cert_chain(cert + ".crt", cert + ".key")
        return context

    def readyz(self):
        return self._get(self.server + "/readyz", self.admin_ssl_context())[0] == 200

    def up(self, timeout=120):
        """Start etcd, kube-apiserver, kube-scheduler (and kwok where built); return once /readyz answers."""
        if self.running():
            raise ClusterError("%s already runs %s; run `tools/dev-cluster down %s` first" % (
                self.dir, ", ".join(self.running()), self.dir))
        missing = missing_binaries()
        if missing:
            raise ClusterError("%s not built in %s: run `make setup` (tools/build-go-binaries)" % (
                ", ".join(missing), bin_dir()))
        started = time.time()
        os.makedirs(self.logs, exist_ok=True)
        self.state = {"processes": {}, "ports": dict((n, _free_port()) for n in (
            "etcd", "etcd_peer", "apiserver", "scheduler", "kwok"))}
        self._make_pki()
        self._save_state()
        try:
            self._up(timeout)
        except BaseException:
            self.down()
            raise
        self.state["startup_seconds"] = round(time.time() - started, 1)
        self._save_state()
        return self

    def _up(self, timeout):
        ports = self.state["ports"]
        etcd_url = "http://127.0.0.1:%d" % ports["etcd"]
        peer_url = "http://127.0.0.1:%d" % ports["etcd_peer"]
        etcd = self._start("etcd", [
            binary("etcd"), "--name", "gpurt", "--data-dir", os.path.join(self.dir, "etcd"),
            "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", "gpurt=" + peer_url, "--unsafe-no-fsync", "--log-level", "warn"])
        self._wait("etcd", etcd, lambda: self._get(etcd_url + "/health")[0] == 200, 30)

        def pki(name):
            return os.path.join(self.pki, name)

        apiserver = self._start("kube-apiserver", [
            binary("kube-apiserver"), "--etcd-servers", etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(ports["apiserver"]),
            "--tls-cert-file", pki("apiserver.crt"), "--tls-private-key-file", pki("apiserver.key"),
            "--client-ca-file", pki("ca.crt"), "--token-auth-file", pki("tokens.csv"),
            "--authorization-mode", "Node,RBAC",
            "--enable-admission-plugins", self.admission_plugins,
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", pki("service-account.pub"),
            "--service-account-signing-key-file", pki("service-account.key"),
            "--api-audiences", "https://kubernetes.default.svc",
            "--service-cluster-ip-range", "10.96.0.0/16", "--cert-dir", pki("serving"),
            # the "kubernetes" Service's endpoints would have to point at a non-loopback address
            "--endpoint-reconciler-type", "none",
            "--allow-privileged", "--profiling=false", "--v", "1"] + self.apiserver_args)
        self._wait("kube-apiserver", apiserver, self.readyz, timeout)
        self.kubeconfig_for("gpurt-admin", self.kubeconfig)

        scheduler_kubeconfig = self.kubeconfig_for("system:kube-scheduler", os.path.join(self.dir, "scheduler.kubeconfig"))
        scheduler = self._start("kube-scheduler", [
            binary("kube-scheduler"), "--kubeconfig", scheduler_kubeconfig,
            "--authentication-kubeconfig", scheduler_kubeconfig, "--authorization-kubeconfig", scheduler_kubeconfig,
            "--bind-address", "127.0.0.1", "--secure-port", str(ports["scheduler"]), "--leader-elect=false",
            "--cert-dir", os.path.join(self.pki, "scheduler-serving"), "--v", "1"])
        insecure = ssl._create_unverified_context()  # the scheduler's self-signed serving cert; 127.0.0.1 only
        scheduler_url = "https://127.0.0.1:%d/healthz" % ports["scheduler"]
        self._wait("kube-scheduler", scheduler, lambda: self._get(scheduler_url, insecure)[0] == 200, 60)

        if os.access(binary("kwok"), os.X_OK):
            kwok_url = "http://127.0.0.1:%d/healthz" % ports["kwok"]
            kwok = self._start("kwok", [
                binary("kwok"), "--kubeconfig", self.kubeconfig, "--config", ",".join(KWOK_STAGES),
                "--manage-nodes-with-annotation-selector", KWOK_ANNOTATION + "=fake",
                "--server-address", "127.0.0.1:%d" % ports["kwok"], "--node-ip", "127.0.0.1"])
            self._wait("kwok", kwok, lambda: self._get(kwok_url)[0] == 200, 60)

    # -- emptying it for the next user --------------------------------------------------------------
    def _call(self, method, path, body=None):
        """(status, decoded body) of one admin request, on a kept-alive connection (a new one when the
        kept one was closed, as by a restart of the apiserver)."""
        for attempt in (1, 2):
            if getattr(self, "_connection", None) is None:
                self._connection = http.client.HTTPSConnection("127.0.0.1", self.state["ports"]["apiserver"],
                                                               context=self.admin_ssl_context(), timeout=30)
            try:
                self._connection.request(method, path, None if body is None else json.dumps(body), {
                    "Content-Type": "application/json", "Accept": "application/json"})
                response = self._connection.getresponse()
                data = response.read().decode("utf-8")
                break
            except (OSError, http.client.HTTPException):
                self._connection.close()
                self._connection = None
                if attempt == 2:
                    raise
        return response.status, (json.loads(data or "{}") if response.status < 300 else {})

    def _kinds(self):
        """(URL prefix, resource, namespaced) of every resource of the preferred API versions that can be
        listed and deleted."""
        prefixes = ["/api/v1"] + ["/apis/" + group["preferredVersion"]["groupVersion"]
                                  for group in self._call("GET", "/apis")[1].get("groups", [])]
        for prefix in prefixes:
            for item in self._call("GET", prefix)[1].get("resources", []):
                if "/" not in item["name"] and {"list", "delete"} <= set(item.get("verbs", [])):
                    yield prefix, item["name"], item["namespaced"]

    def objects(self):
        """{path: uid} of every object the cluster holds (its API path)."""
        out = {}
        for prefix, resource, namespaced in self._kinds():
            for item in self._call("GET", "%s/%s" % (prefix, resource))[1].get("items", []):
                metadata = item["metadata"]
                where = "/namespaces/%s" % urllib.parse.quote(metadata["namespace"]) if namespaced else ""
                out["%s%s/%s/%s" % (prefix, where, resource, urllib.parse.quote(metadata["name"]))] = metadata["uid"]
        return out

    def reset(self, baseline, timeout=60):
        """Delete every object that is not in BASELINE (objects() right after up()): what tests made,
        namespaces included (finalized here: no namespace controller runs). Objects of the baseline that
        a test changed stay as they are. ClusterError when something is left after TIMEOUT seconds.
        kube-apiserver is restarted when it ever served a policy's parameters: its admission would judge
        the next module's policies with the last module's parameters (admission_param_informer_started)."""
        deadline = time.time() + timeout
        while True:
            extra = sorted(path for path, uid in self.objects().items() if baseline.get(path) != uid)
            if not extra:
                if self.admission_param_informer_started():
                    self.restart_apiserver()
                return
            if time.time() > deadline:
                raise ClusterError("%s: could not delete %s" % (self.dir, ", ".join(extra)))
            # namespaces last: their contents first, then the namespace and its finalizer
            for path in sorted(extra, key=lambda p: p.startswith("/api/v1/namespaces/") and p.count("/") == 4):
                self._call("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
                if path.startswith("/api/v1/namespaces/") and path.count("/") == 4:
                    status, namespace = self._call("GET", path)
                    if status == 200:
                        namespace["spec"]["finalizers"] = []
                        self._call("PUT", path + "/finalize", namespace)
            time.sleep(0.2)

    def restart_apiserver(self, downtime=0.0, timeout=120):
        """Stop kube-apiserver by its PID, wait DOWNTIME seconds, start it again with the same flags and
        port (etcd keeps the state); returns once /readyz answers. Its clients' watches drop meanwhile."""
        proc = self.state["processes"]["kube-apiserver"]
        argv = self.state["argv"]["kube-apiserver"]
        if _start_time(proc["pid"]) == proc["start_time"]:
            os.kill(proc["pid"], signal.SIGTERM)
            # a graceful shutdown waits for open watches; an old process still serving them is no restart
            deadline = time.time() + 5
            while time.time() < deadline and _start_time(proc["pid"]) == proc["start_time"]:
                time.sleep(0.1)
            if _start_time(proc["pid"]) == proc["start_time"]:
                os.kill(proc["pid"], signal.SIGKILL)
                while _start_time(proc["pid"]) == proc["start_time"]:
                    time.sleep(0.1)
        time.sleep(downtime)
        self._wait("kube-apiserver", self._start("kube-apiserver", argv), self.readyz, timeout)

    def down(self, timeout=20):
        """Stop, by PID, what up() started (newest first); a PID that now names another process is left alone."""
        for name in reversed(list(self.state["processes"])):
            proc = self.state["processes"][name]
            if _start_time(proc["pid"]) != proc["start_time"]:
                continue
            os.kill(proc["pid"], signal.SIGTERM)
            deadline = time.time() + timeout
            while time.time() < deadline and _start_time(proc["pid"]) == proc["start_time"]:
                time.sleep(0.1)
            if _start_time(proc["pid"]) == proc["start_time"]:
                os.kill(proc["pid"], signal.SIGKILL)
        self.state["processes"] = {}
        if os.path.isdir(self.dir):
            self._save_state()


@contextlib.contextmanager
def _locked(path):
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _users(path, delta):
    try:
        with open(path) as handle:
            count = int(handle.read() or 0)
    except (OSError, ValueError):
        count = 0
    count = max(count + delta, 0)
    with open(path, "w") as handle:
        handle.write(str(count))
    return count


@contextlib.contextmanager
def shared(root):
    """One cluster for all the pytest-xdist workers of a run: the first worker that needs it starts it
    under ROOT, the last that leaves stops it (a count under a file lock). A cluster left by a run that
    was killed is stopped and started anew."""
    os.makedirs(root, exist_ok=True)
    lock, users = os.path.join(root, "lock"), os.path.join(root, "users")
    directory = os.path.join(root, "cluster")
    with _locked(lock):
        cluster = Cluster(directory)
        if _users(users, 0) == 0 or len(cluster.running()) < len(cluster.state["processes"]) or not cluster.running():
            cluster.down()
            _users(users, -_users(users, 0))
            os.makedirs(directory, exist_ok=True)
            cluster.up()
        _users(users, +1)
    try:
        yield Cluster(directory)
    finally:
        with _locked(lock):
            if _users(users, -1) == 0:
                Cluster(directory).down()

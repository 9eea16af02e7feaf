"""A real Kubernetes control plane on 127.0.0.1 to try the playbooks against (tests/lib/real_cluster.py):
etcd, kube-apiserver (TLS, RBAC), kube-scheduler and kwok's controller, built by `make setup`.

    tools/dev-cluster up DIR     # state in DIR; exits 0 once /readyz answers; last line KUBECONFIG=DIR/kubeconfig
    tools/dev-cluster down DIR   # stops what `up` started, by PID
    tools/dev-cluster status DIR # what runs, and where
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.lib.real_cluster import Cluster, ClusterError  # noqa: E402


def main(argv):
    if len(argv) != 3 or argv[1] not in ("up", "down", "status"):
        sys.stderr.write(__doc__.split("\n\n", 1)[1])
        return 2
    cluster = Cluster(argv[2])
    try:
        if argv[1] == "up":
            os.makedirs(cluster.dir, exist_ok=True)
            cluster.up()
            print("dev-cluster: %s in %.1f s: apiserver %s; logs in %s" % (
                ", ".join(cluster.running()), cluster.state["startup_seconds"], cluster.server, cluster.logs))
            if not cluster.kwok:
                print("dev-cluster: kwok is not built: Nodes are made through the API with their status patched")
            print("KUBECONFIG=%s" % cluster.kubeconfig)
        elif argv[1] == "down":
            running = cluster.running()
            cluster.down()
            print("dev-cluster: stopped %s" % (", ".join(running) or "nothing (nothing of %s ran)" % cluster.dir))
        else:
            running = cluster.running()
            print("dev-cluster: %s" % (", ".join(running) or "nothing runs"))
            if running:
                print("KUBECONFIG=%s" % cluster.kubeconfig)
            return 0 if running else 1
    except ClusterError as exc:
        print("dev-cluster: %s" % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

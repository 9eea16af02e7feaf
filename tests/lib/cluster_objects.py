"""Objects the tests make on the real cluster (tests/lib/real_cluster.py), through the kubernetes
client as an admin: Nodes whose status is written through the status subresource (as a kubelet
does), RuntimeClasses, pods, and waits on what the scheduler decides."""
import time

from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.lib.real_cluster import KWOK_ANNOTATION


class Api(object):
    def __init__(self, kubeconfig):
        self.api_client = config.new_client_from_config(config_file=kubeconfig)
        self.core = client.CoreV1Api(self.api_client)
        self.node_k8s = client.NodeV1Api(self.api_client)
        self.rbac = client.RbacAuthorizationV1Api(self.api_client)

    def close(self):
        self.api_client.close()

    def namespace(self, name):
        """The namespace and its `default` ServiceAccount (no controller-manager runs to make it)."""
        for create, body in ((self.core.create_namespace, {"metadata": {"name": name}}),
                             (lambda b: self.core.create_namespaced_service_account(name, b),
                              {"metadata": {"name": "default"}})):
            try:
                create(body)
            except ApiException as exc:
                if exc.status != 409:
                    raise

    def runtimeclass(self, name, handler, overhead=None, selector=None):
        """Created, or left as it is when it exists (a module fixture of the shared cluster runs once
        per xdist worker that runs the module's tests)."""
        body = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": handler}
        if overhead:
            body["overhead"] = {"podFixed": overhead}
        if selector:
            body["scheduling"] = {"nodeSelector": selector}
        try:
            return self.node_k8s.create_runtime_class(body)
        except ApiException as exc:
            if exc.status != 409:
                raise
            return self.node_k8s.read_runtime_class(name)

    def node(self, name, labels=None, cpu="1", memory="4Gi", handlers=None, kwok=False,
             runtime_version="containerd://2.3.7"):
        """A Node made through the API. Its status goes through the status subresource as a kubelet
        writes it: capacity, allocatable, Ready, and `runtimeHandlers` when HANDLERS is given (with
        the default handler "" first, as containerd 2.x reports). With KWOK kwok's controller marks it
        Ready and runs its pods."""
        metadata = {"name": name, "labels": dict(labels or {}, **{"kubernetes.io/hostname": name})}
        if kwok:
            metadata["annotations"] = {KWOK_ANNOTATION: "fake"}
        try:
            self.core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": metadata})
        except ApiException as exc:
            if exc.status != 409:  # it exists: its status is written again below
                raise
        resources = {"cpu": cpu, "memory": memory, "pods": "110"}
        status = {"capacity": resources, "allocatable": resources,
                  "nodeInfo": {"kubeletVersion": "v1.37.2", "containerRuntimeVersion": runtime_version,
                               "architecture": "amd64", "operatingSystem": "linux", "bootID": "", "machineID": "",
                               "systemUUID": "", "kernelVersion": "", "osImage": "", "kubeProxyVersion": ""}}
        if not kwok:
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            status["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test",
                                     "lastHeartbeatTime": now, "lastTransitionTime": now}]
        if handlers is not None:
            status["runtimeHandlers"] = [{"name": h, "features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}}
                                         for h in [""] + list(handlers)]
        node = self.core.patch_node_status(name, {"status": status})
        # The TaintNodesByCondition admission plugin taints a new Node not-ready; the node lifecycle
        # controller (kube-controller-manager, which does not run here) lifts it once the Node is Ready.
        return self.core.patch_node(name, {"spec": {"taints": None}})

    def pod(self, namespace, name, cpu, runtimeclass=None, node_selector=None):
        spec = {"containers": [{"name": "main", "image": "registry.invalid/pause:1",
                                "resources": {"requests": {"cpu": cpu}}}],
                "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0}
        if runtimeclass:
            spec["runtimeClassName"] = runtimeclass
        if node_selector:
            spec["nodeSelector"] = node_selector
        return self.core.create_namespaced_pod(namespace, {"metadata": {"name": name}, "spec": spec})

    def scheduled(self, namespace, name, timeout=60):
        """(node name, None) once the scheduler bound the pod, or (None, PodScheduled condition) once it
        said the pod cannot be scheduled; fails after TIMEOUT with neither."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            pod = self.core.read_namespaced_pod(name, namespace)
            if pod.spec.node_name:
                return pod.spec.node_name, None
            for condition in pod.status.conditions or []:
                if condition.type == "PodScheduled" and condition.status == "False" and condition.reason == "Unschedulable":
                    return None, condition
            time.sleep(0.2)
        raise AssertionError("the scheduler decided nothing about pod %s/%s within %d s" % (namespace, name, timeout))

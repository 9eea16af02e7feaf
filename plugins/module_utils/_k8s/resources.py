# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resources the collection reads and writes (RuntimeClasses, Nodes) and what it does with them
through a session: list every page, get, server-side apply, merge patch, create, delete."""

import json

from urllib.parse import quote


# resource -> (collection path, name for RBAC messages, what a 404 on the collection means)
RESOURCES = {
    "runtimeclasses": ("/apis/node.k8s.io/v1/runtimeclasses", "runtimeclasses.node.k8s.io",
                       " (node.k8s.io/v1 needs Kubernetes 1.20+)"),
    "nodes": ("/api/v1/nodes", "nodes", ""),
    "configmaps": ("/api/v1/namespaces/{namespace}/configmaps", "configmaps", ""),
    "validatingadmissionpolicies": (
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
        "validatingadmissionpolicies.admissionregistration.k8s.io", " (admissionregistration.k8s.io/v1 policies are GA in 1.30)"),
    "validatingadmissionpolicybindings": (
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
        "validatingadmissionpolicybindings.admissionregistration.k8s.io",
        " (admissionregistration.k8s.io/v1 policies are GA in 1.30)"),
    # not a resource: kube-apiserver's own metrics (the admission plugins it ran)
    "metrics": ("/metrics", "the non-resource URL /metrics", ""),
}
READ_VERBS = ("get", "list")
RBAC_HINT = {
    True: "apply rbac/runtime-gate-audit.yaml",
    False: "rbac/runtime-gate-remediate.yaml grants get, list, patch, create and delete on runtimeclasses "
           "(the read-only audit identity may not write); for prevent.yml, rbac/runtime-gate-prevent.yaml grants "
           "get, list, patch and create (its dry-run enforcement probe)",
}
_PREVENT = "rbac/runtime-gate-prevent.yaml (prevent.yml's identity) grants "
# A refused request on these is not the audit's or a RuntimeClass write: the hint names the identity that has it.
READ_HINTS = {
    "configmaps": _PREVENT + "get on the parameter ConfigMap runtime-gate-verified-handlers in gpurt-runtime-gate",
    "validatingadmissionpolicies": _PREVENT + "get, patch and delete on the policy runtime-gate.gpurt.io",
    "validatingadmissionpolicybindings": _PREVENT + "get, patch and delete on the binding runtime-gate.gpurt.io",
    "metrics": _PREVENT + "get on the non-resource URL /metrics (the admission plugins kube-apiserver runs)",
}
WRITE_HINTS = {
    "nodes": "rbac/runtime-gate-labeler.yaml grants get, list and patch on nodes (the verified handler labels)",
    "configmaps": _PREVENT + "get, create and patch on the parameter ConfigMap runtime-gate-verified-handlers in "
                             "gpurt-runtime-gate (another namespace: bind its Role there)",
    "validatingadmissionpolicies": READ_HINTS["validatingadmissionpolicies"] + ", and create",
    "validatingadmissionpolicybindings": READ_HINTS["validatingadmissionpolicybindings"] + ", and create",
}
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
MERGE_PATCH_CONTENT_TYPE = "application/merge-patch+json"


class ResourceOperations(object):
    """What KubeSession does with a resource; every call goes through its request()."""

    def list_all(self, resource, label_selector=None, field_selector=None):
        """Every object of a resource ("runtimeclasses" or "nodes") as JSON dicts, following
        metadata.continue until the last page."""
        path = RESOURCES[resource][0]
        self.api_list_calls += 1
        items = []
        seen_tokens = set()
        token = None
        while True:
            query = [("limit", self.page_size)]
            if token:
                query.append(("continue", token))
            if label_selector:
                query.append(("labelSelector", label_selector))
            if field_selector:
                query.append(("fieldSelector", field_selector))
            page = self.request("GET", path, "listing %s" % resource, "list", resource, query=query)[1]
            page_items = page.get("items") or []
            if not isinstance(page_items, list):
                raise self.error("%s answered listing %s with items that are not a list" % (self.server, resource),
                                 resource=resource)
            items.extend(page_items)
            if not seen_tokens and token is None:
                # every page is of the first page's snapshot: a watch goes on from its version
                self.last_list_version = (page.get("metadata") or {}).get("resourceVersion")
            token = (page.get("metadata") or {}).get("continue") or None
            if not token:
                return items
            if token in seen_tokens:
                raise self.error("%s repeated a continue token listing %s; stopped paging" % (self.server, resource),
                                 resource=resource)
            seen_tokens.add(token)

    @staticmethod
    def _object_path(resource, name, namespace=None):
        collection = RESOURCES[resource][0].replace("{namespace}", quote(namespace or "", safe=""))
        return "%s/%s" % (collection, quote(name, safe=""))

    def get(self, resource, name, namespace=None):
        """The object, or None when it does not exist."""
        status, obj, _attempts = self.request("GET", self._object_path(resource, name, namespace), "reading %s %s"
                                              % (_singular(resource), name), "get", resource, accept=(404,),
                                              name=name)
        if status == 404:
            details = obj.get("details") if isinstance(obj.get("details"), dict) else {}
            if details.get("name") != name:
                raise self._status_error(404, json.dumps(obj).encode(), "reading %s %s" % (_singular(resource), name),
                                         "get", resource, name, _attempts)
            return None
        return obj

    def apply(self, resource, name, body, field_manager, force=False, dry_run=False, namespace=None):
        """Server-side apply of body (an applied configuration) as field_manager; the object as
        the apiserver stored it (or, with dry_run, would store it). A conflict with another
        field manager is a KubeError with status 409 and its causes."""
        query = [("fieldManager", field_manager)]
        if force:
            query.append(("force", "true"))
        if dry_run:
            query.append(("dryRun", "All"))
        doing = "applying %s %s" % (_singular(resource), name)
        return self.request("PATCH", self._object_path(resource, name, namespace), doing, "patch", resource, query=query,
                            body=body, content_type=APPLY_CONTENT_TYPE, name=name)[1]

    def merge_patch(self, resource, name, body, field_manager, dry_run=False, namespace=None):
        """JSON merge patch (RFC 7386) of body as field_manager: a null removes a key whoever set it.
        The object as stored (or, with dry_run, as it would be), or None when it does not exist (a
        merge patch never creates). A metadata.uid in body pins the write to that object: the apiserver
        refuses to change a uid (422, cause field metadata.uid); a metadata.resourceVersion pins it to that
        version (409 otherwise)."""
        query = [("fieldManager", field_manager)]
        if dry_run:
            query.append(("dryRun", "All"))
        doing = "patching %s %s" % (_singular(resource), name)
        status, obj, attempts = self.request("PATCH", self._object_path(resource, name, namespace), doing, "patch",
                                             resource, query=query, body=body, content_type=MERGE_PATCH_CONTENT_TYPE,
                                             accept=(404,), name=name)
        if status == 404:
            details = obj.get("details") if isinstance(obj.get("details"), dict) else {}
            if details.get("name") != name:
                raise self._status_error(404, json.dumps(obj).encode(), doing, "patch", resource, name, attempts)
            return None
        return obj

    def create(self, resource, body, field_manager, dry_run=False):
        """POST of a new object; None when a retry of it met the object its first attempt made."""
        name = ((body.get("metadata") or {}).get("name")) or ""
        query = [("fieldManager", field_manager)]
        if dry_run:
            query.append(("dryRun", "All"))
        status, obj, attempts = self.request("POST", RESOURCES[resource][0], "creating %s %s"
                                             % (_singular(resource), name), "create", resource, query=query,
                                             body=body, content_type="application/json", accept=(409,), name=name)
        if status == 409:
            if attempts > 1 and obj.get("reason") == "AlreadyExists":
                return None
            raise self._status_error(409, json.dumps(obj).encode(), "creating %s %s" % (_singular(resource), name),
                                     "create", resource, name, attempts)
        return obj

    def delete(self, resource, name, resource_version=None, dry_run=False, namespace=None):
        """DELETE, conditional on resource_version when given. True when deleted (by this
        request or an earlier attempt of it), False when there was nothing to delete."""
        options = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if resource_version:
            options["preconditions"] = {"resourceVersion": resource_version}
        # The apiserver reads a DELETE's options from its body when it has one and then ignores the
        # query: dryRun=All in the query alone deleted for real.
        if dry_run:
            options["dryRun"] = ["All"]
        query = [("dryRun", "All")] if dry_run else None
        status, obj, attempts = self.request("DELETE", self._object_path(resource, name, namespace), "deleting %s %s"
                                             % (_singular(resource), name), "delete", resource, query=query,
                                             body=options, content_type="application/json", accept=(404,),
                                             name=name)
        if status == 404:
            details = obj.get("details") if isinstance(obj.get("details"), dict) else {}
            if details.get("name") != name:
                raise self._status_error(404, json.dumps(obj).encode(), "deleting %s %s"
                                         % (_singular(resource), name), "delete", resource, name, attempts)
            return attempts > 1
        return True


def _singular(resource):
    return {"runtimeclasses": "runtimeclass", "nodes": "node", "configmaps": "configmap",
            "validatingadmissionpolicies": "validatingadmissionpolicy",
            "validatingadmissionpolicybindings": "validatingadmissionpolicybinding"}.get(resource, resource)

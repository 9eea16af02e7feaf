"""The selectors' enforcement proof (module_utils/_k8s/admission_metrics and selector_enforcement): which admission
plugins kube-apiserver's metrics show, and the verdict on its RuntimeClass plugin."""
import os

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import admission_metrics, selector_enforcement
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.errors import KubeError

HEAD = """# HELP apiserver_admission_controller_admission_duration_seconds [STABLE] Admission controller latency histogram
# TYPE apiserver_admission_controller_admission_duration_seconds histogram
"""


def series(name, operation, step="admit", rejected="false", count=3):
    labels = 'name="%s",operation="%s",rejected="%s",type="%s"' % (name, operation, rejected, step)
    family = admission_metrics.FAMILY
    return ('%s_bucket{%s,le="0.005"} %d\n%s_bucket{%s,le="+Inf"} %d\n%s_sum{%s} 0.0012\n%s_count{%s} %d\n'
            % (family, labels, count, family, labels, count, family, labels, family, labels, count))


def metrics(*plugins):
    return HEAD + "".join(series(*p) for p in plugins) + "apiserver_request_total{code=\"200\"} 9\n"


MEASURED = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "apiserver_metrics")


def measured(name):
    with open(os.path.join(MEASURED, name)) as handle:
        return handle.read()


def test_a_real_apiserver_with_the_plugin_on_and_off():
    """kube-apiserver 1.37.2's own answers (fixtures/apiserver_metrics/README.md)."""
    on = admission_metrics.plugins_seen(measured("runtimeclass-on.txt"))
    assert on["RuntimeClass"] == ["CREATE"] and len(on) == 25, on
    assert admission_metrics.runtimeclass_verdict(on) == (
        True, "its admission metrics show the RuntimeClass plugin handling CREATE")
    off = admission_metrics.plugins_seen(measured("runtimeclass-off.txt"))
    assert "RuntimeClass" not in off and len(off) == 24, off
    verdict, why = admission_metrics.runtimeclass_verdict(off)
    assert verdict is False, why
    assert why == ("its admission metrics show creates handled by 20 other plugin(s) (CertificateSubjectRestriction, "
                   "ClusterTrustBundleAttest, DefaultIngressClass and 17 more) but never by the RuntimeClass plugin")


def test_the_plugins_and_the_operations_each_handled():
    text = metrics(("RuntimeClass", "CREATE"), ("ServiceAccount", "CREATE"), ("ValidatingAdmissionPolicy", "UPDATE",
                                                                              "validate"),
                   ("ValidatingAdmissionPolicy", "CREATE", "validate", "true"))
    assert admission_metrics.plugins_seen(text) == {"RuntimeClass": ["CREATE"], "ServiceAccount": ["CREATE"],
                                                    "ValidatingAdmissionPolicy": ["CREATE", "UPDATE"]}


def test_label_values_with_escapes_and_any_label_order():
    family = admission_metrics.FAMILY
    text = HEAD + '%s_count{type="admit",operation="CREATE",name="Odd\\"Name\\\\x",rejected="false"} 1\n' % family
    assert admission_metrics.plugins_seen(text) == {'Odd"Name\\x': ["CREATE"]}


def test_no_admission_metrics_is_not_an_empty_set():
    assert admission_metrics.plugins_seen("apiserver_request_total{code=\"200\"} 9\n") is None
    assert admission_metrics.plugins_seen(HEAD) == {}


@pytest.mark.parametrize("plugins, enforced, words", [
    ((("RuntimeClass", "CREATE"), ("ServiceAccount", "CREATE")), True,
     "show the RuntimeClass plugin handling CREATE"),
    ((("ServiceAccount", "CREATE"), ("ValidatingAdmissionPolicy", "CREATE", "validate")), False,
     "creates handled by 2 other plugin(s) (ServiceAccount, ValidatingAdmissionPolicy) but never by the RuntimeClass "
     "plugin"),
    # no create passed admission yet: the plugin would have no series even when on
    ((("ValidatingAdmissionPolicy", "UPDATE", "validate"),), None, "no create handled by any plugin"),
    ((), None, "no create handled by any plugin"),
])
def test_the_verdict_on_the_runtimeclass_plugin(plugins, enforced, words):
    verdict, why = admission_metrics.runtimeclass_verdict(admission_metrics.plugins_seen(metrics(*plugins)))
    assert verdict is enforced and words in why, why


def test_without_admission_metrics_the_verdict_is_unknown():
    verdict, why = admission_metrics.runtimeclass_verdict(None)
    assert verdict is None and admission_metrics.FAMILY in why


class MetricsSession(object):
    """The dry-run create (refused with refusal, when given), then GET /metrics answered with text."""
    server = "https://127.0.0.1:6443"

    def __init__(self, text, refusal=None):
        self.text, self.refusal, self.calls = text, refusal, []

    def create(self, resource, body, field_manager, dry_run=False):
        assert resource == "runtimeclasses" and dry_run is True
        assert body["metadata"]["name"].startswith("gpurt-runtime-gate-probe-")
        self.calls.append("create")
        if self.refusal:
            raise KubeError(self.refusal, status=403)
        return body

    def request(self, method, path, doing, verb, resource, raw=False, **kwargs):
        assert (method, path, verb, resource, raw) == ("GET", "/metrics", "get", "metrics", True)
        self.calls.append("metrics")
        return 200, self.text.encode("utf-8"), 1


def test_the_create_goes_through_admission_before_the_metrics_are_read():
    session = MetricsSession(metrics(("RuntimeClass", "CREATE")))
    enforced, proof, seen = selector_enforcement.prove(session, "m")
    assert session.calls == ["create", "metrics"]
    assert enforced is True and seen == {"RuntimeClass": ["CREATE"]}
    assert proof == ("proven: kube-apiserver at https://127.0.0.1:6443: its admission metrics show the RuntimeClass "
                     "plugin handling CREATE")


def test_a_plugin_that_is_off_is_named_with_the_flag():
    enforced, why, _seen = selector_enforcement.prove(MetricsSession(metrics(("ServiceAccount", "CREATE"))), "m")
    assert enforced is False
    assert "does not run its RuntimeClass admission plugin" in why and "--disable-admission-plugins" in why, why
    assert "may land on Nodes that never verified its handler" in why, why


def test_unknown_says_what_refused_the_create_and_how_to_accept_it():
    session = MetricsSession(HEAD, refusal="403 Forbidden: the identity may not create runtimeclasses.node.k8s.io")
    enforced, why, seen = selector_enforcement.prove(session, "m")
    assert enforced is None and seen == {}
    assert "enforcement is not proven" in why and "refused: 403 Forbidden" in why, why
    assert "gpurt_selector_enforcement=assume" in why, why

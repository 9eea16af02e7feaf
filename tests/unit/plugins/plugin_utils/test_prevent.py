"""prevent.yml's planning (plugin_utils/_prevent): the selector gate and the admission parameters,
both derived from the verified labels on the Nodes, counted only while fresh (gpurt_label_max_age)."""
import random
import time

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _prevent

P = "runtime-gate.gpurt.io/"
NOW = 1_800_000_000
FRESH = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 3600))
OLD = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 3 * 86400))
MIB = 1024 * 1024


def node(name, *handlers, **labels):
    checked = labels.pop("checked", FRESH)
    out = {"kubernetes.io/hostname": name}
    out.update(labels)
    out.update((P + h, "true") for h in handlers)
    return {"name": name, "labels": out, "labels_checked_at": checked if handlers else None}


def rc(name, handler, selector=None):
    return {"name": name, "handler": handler, "node_selector": selector or {}}


NODES = [node("gpu-1", "nvidia", "runc", pool="gpu"), node("gpu-2", "runc", pool="gpu"), node("cpu-1", "runc")]


def gate(classes, nodes, names=None, max_age="24h"):
    return _prevent.gate(classes, nodes, names, max_age, now=NOW)


def params(nodes, classes=(), max_age="24h"):
    return _prevent.admission_params(nodes, list(classes), max_age, now=NOW)


def test_default_gates_every_class_whose_handler_a_node_verified_and_says_why_not_the_others():
    plan = gate([rc("nvidia", "nvidia"), rc("kata", "kata-qemu"), rc("runc", "runc")], NODES)
    assert [(p["name"], p["decision"]) for p in plan] == [("kata", "skipped"), ("nvidia", "write"), ("runc", "write")]
    assert plan[1]["node_selector"] == {P + "nvidia": "true"} and plan[1]["matching"] == ["gpu-1"]
    assert plan[0]["message"] == "kata: not gated: handler 'kata-qemu' is verified on no Node"


def test_the_selector_is_merged_and_a_class_matching_no_node_is_refused():
    plan = gate([rc("nvidia-cpu", "nvidia", {"pool": "cpu"}), rc("nvidia-gpu", "nvidia", {"pool": "gpu"})],
                NODES, ["nvidia-cpu", "nvidia-gpu"])
    assert plan[0]["decision"] == "refused" and "no Node would match" in plan[0]["message"]
    assert "handler 'nvidia' is verified on gpu-1, none of which has the class's other labels {pool=cpu}" \
        in plan[0]["message"]
    assert plan[1]["decision"] == "write" and plan[1]["node_selector"] == {"pool": "gpu", P + "nvidia": "true"}


def test_already_gated_is_unchanged_and_a_conflicting_value_is_refused():
    plan = gate([rc("a", "nvidia", {P + "nvidia": "true"}), rc("b", "nvidia", {P + "nvidia": "false"})],
                NODES, ["a", "b", "missing"])
    assert [p["decision"] for p in plan] == ["unchanged", "refused", "refused"]
    assert "no such RuntimeClass" in plan[2]["message"]


def test_a_gated_class_that_now_matches_no_node_says_why_and_blocks_nothing():
    nodes = [node("gpu-1", "runc"), node("gpu-2", "nvidia", "runc", checked=OLD)]
    plan = gate([rc("nvidia", "nvidia", {P + "nvidia": "true"})], nodes)
    assert [p["decision"] for p in plan] == ["unchanged"]
    assert plan[0]["message"] == (
        "nvidia: gated on %snvidia, but no Node matches nodeSelector {%snvidia=true} now, so its new pods stay "
        "Pending: handler 'nvidia' is verified on no Node (stale labels, not counted: gpu-2)" % (P, P))


def test_stale_labels_verify_nothing():
    nodes = [node("gpu-1", "nvidia", "runc"), node("gpu-2", "nvidia", "runc", checked=OLD),
             node("gpu-3", "nvidia", checked=None), node("gpu-4", "nvidia", checked="yesterday")]
    fresh, stale = _prevent.proof(nodes, "24h", now=NOW)
    assert [n["name"] for n in fresh] == ["gpu-1"]
    assert [s["name"] for s in stale] == ["gpu-2", "gpu-3", "gpu-4"]
    lines = _prevent.stale_lines(stale)
    assert lines[0].startswith("gpu-2: not counted as verified: its labels (nvidia, runc) were checked at %s, 72.0 h "
                               "ago, longer than gpurt_label_max_age 24h" % OLD), lines
    assert "carry no readable check time" in lines[1] and "'yesterday'" in lines[2]
    assert gate([rc("nvidia", "nvidia")], nodes)[0]["matching"] == ["gpu-1"]
    data = params(nodes)
    assert data["handler.nvidia"].count("\n") == 0 and "gpu-2" not in str(data)
    # a longer max age counts them again
    assert params(nodes, max_age="4d")["loaded"] == "nvidia, runc"
    assert gate([rc("nvidia", "nvidia")], nodes, max_age="4d")[0]["matching"] == ["gpu-1", "gpu-2"]


def test_a_run_no_fresh_verified_label_backs_is_refused_unless_it_only_removes():
    """Fail closed (issue 35): with no Node carrying a fresh verified label, the run checked nothing."""
    unlabeled = [{"name": "gpu-1", "labels": {"kubernetes.io/hostname": "gpu-1"}, "labels_checked_at": None}]
    why = _prevent.no_proof(unlabeled, None, "warn", "24h", now=NOW)
    assert why.startswith("nothing was written: no Node carries a verified label (%s<handler>=true) checked within "
                          "gpurt_label_max_age 24h, so there is nothing to gate on" % P), why
    assert "older labels" not in why and "gpurt_label_nodes=true" in why
    older = unlabeled + [node("gpu-2", "nvidia", checked=OLD)]
    assert "(1 Node(s) with older labels, not counted: gpu-2)" in _prevent.no_proof(older, ["nvidia"], "deny", now=NOW)
    # admission only, or off while gating: still nothing to derive them from
    assert _prevent.no_proof(older, [], "warn", now=NOW) and _prevent.no_proof(older, None, "off", now=NOW)
    # removing the admission layer and gating nothing needs no proof; one fresh Node is proof enough
    assert _prevent.no_proof(older, [], "off", now=NOW) is None
    assert _prevent.no_proof(NODES, None, "deny", now=NOW) is None
    assert _prevent.no_proof([], None, "warn", now=NOW)


def test_params_hold_only_the_selector_keys_deduplicated():
    classes = [rc("nvidia", "nvidia", {"pool": "gpu"}), rc("runc", "runc")]
    data = params(NODES, classes)
    assert data["keys"] == ",".join(["pool", P + "nvidia", P + "runc"])
    assert data["loaded"] == "nvidia, runc"
    assert data["handler.nvidia"] == "pool=gpu,%snvidia=true,%srunc=true" % (P, P)
    # gpu-2 and gpu-1 differ on our nvidia key; cpu-1 has no pool: three distinct lines for runc
    assert data["handler.runc"].split("\n") == sorted([
        "pool=gpu,%snvidia=true,%srunc=true" % (P, P), "pool=gpu,%srunc=true" % P, "%srunc=true" % P])
    assert "hostname" not in str(data)


def judged(data, handler, selector):
    """The policy's CEL (playbooks/files/runtime-gate-policy.yaml), in Python: True when admitted."""
    key = "handler." + handler
    covered = data["keys"].split(",") if "keys" in data else []
    return key in data and any(
        all(("%s=%s" % (k, v)) in line.split(",") or ("keys" in data and k not in covered)
            for k, v in selector.items())
        for line in data[key].split("\n"))


def fleet(count, labels_per_node=50, seed=7):
    """count GPU Nodes with about labels_per_node labels each, as clouds, NFD, GFD and operators set them."""
    rng = random.Random(seed)
    nodes = []
    for index in range(count):
        name = "node-%05d" % index
        product = rng.choice(["A100", "H100", "L4", "T4"])
        labels = {"kubernetes.io/hostname": name, "node.kubernetes.io/instance-type": "p5.%dxl" % rng.randint(1, 4),
                  "topology.kubernetes.io/zone": rng.choice(["a", "b", "c"]), "nvidia.com/gpu.product": product,
                  "pool": rng.choice(["train", "serve"]), "cloud.example.com/instance-id": "i-%012x" % index}
        for feature in range(labels_per_node - len(labels) - 3):
            labels["feature.node.kubernetes.io/f-%02d" % feature] = str(rng.random() < 0.9).lower()
        handlers = ["runc"] + (["nvidia"] if rng.random() < 0.95 else []) + (["kata"] if rng.random() < 0.3 else [])
        nodes.append(node(name, *handlers, **labels))
    return nodes


def test_5000_nodes_with_50_labels_stay_far_below_a_configmap():
    nodes = fleet(5000)
    assert 48 <= len(nodes[0]["labels"]) <= 52
    classes = [rc("nvidia", "nvidia", {P + "nvidia": "true"}), rc("a100", "nvidia", {"nvidia.com/gpu.product": "A100"}),
               rc("train", "nvidia", {"pool": "train", "topology.kubernetes.io/zone": "a"}), rc("kata", "kata")]
    data = params(nodes, classes)
    size = _prevent.params_size(data)
    assert size < 64 * 1024, size  # the old derivation: every label of every verified Node, per handler
    old = sum(len(",".join("%s=%s" % kv for kv in sorted(n["labels"].items()))) + 1 for n in nodes) * 2
    assert old > MIB
    print("parameters for 5000 Nodes x 50 labels: %d bytes (every label copied: %d bytes)" % (size, old))


@pytest.mark.parametrize("seed", range(3))
def test_the_policy_judges_compact_params_as_it_would_judge_the_nodes(seed):
    """For selectors on the covered keys, the CEL on the compact parameters admits exactly when a fresh Node that
    verified the handler matches the selector; an uncovered key is not judged."""
    nodes = fleet(300, seed=seed)
    nodes[0]["labels_checked_at"] = OLD
    classes = [rc("a100", "nvidia", {"nvidia.com/gpu.product": "A100", "pool": "serve"}),
               rc("z", "kata", {"topology.kubernetes.io/zone": "b"})]
    data = params(nodes, classes)
    fresh = _prevent.proof(nodes, "24h", now=NOW)[0]
    rng = random.Random(seed)
    values = {"nvidia.com/gpu.product": ["A100", "H100", "L4", "T4", "V100"], "pool": ["serve", "train", "x"],
              "topology.kubernetes.io/zone": ["a", "b", "c"], P + "kata": ["true", "false"]}
    for _round in range(300):
        handler = rng.choice(["nvidia", "kata", "runc", "nvidai"])
        selector = dict((k, rng.choice(v)) for k, v in values.items() if rng.random() < 0.5)
        truth = any(n["labels"].get(P + handler) == "true" and all(n["labels"].get(k) == v for k, v in selector.items())
                    for n in fresh)
        assert judged(data, handler, selector) == truth, (handler, selector)
    # the stale Node's own hostname is nowhere; a key no class used is not judged
    assert judged(data, "nvidia", {"kubernetes.io/hostname": "no-such-node"})


def test_params_that_would_not_fit_are_refused_naming_the_keys():
    nodes = [node("n-%05d" % i, "nvidia", "runc", **{"id": "x" * 60 + "%05d" % i}) for i in range(8000)]
    with pytest.raises(_prevent.PreventError, match="most: id"):
        params(nodes, [rc("one", "nvidia", {"id": "x"})])


@pytest.mark.parametrize("mode,names,age,namespace,deadline,variable", [
    ("strict", None, "24h", None, None, "gpurt_admission_mode"),
    ("warn", "nvidia", "24h", None, None, "gpurt_gate_runtimeclasses"),
    ("deny", [""], "24h", None, None, "gpurt_gate_runtimeclasses"),
    ("warn", None, "soon", None, None, "gpurt_label_max_age"),
    ("warn", None, "0h", None, None, "gpurt_label_max_age"),
    ("warn", None, "24h", "Gpurt_NS", None, "gpurt_admission_namespace"),
    ("warn", None, "24h", None, 0, "gpurt_deadline"),
    ("warn", None, "24h", None, "soon", "gpurt_deadline"),
])
def test_bad_inputs_name_the_variable(mode, names, age, namespace, deadline, variable):
    with pytest.raises(_prevent.PreventError, match=variable):
        _prevent.validate_inputs(mode, names, age, namespace, deadline)
    # prevent.yml's filter gives the same reason as a value, so the run can say it once (issue 35)
    from ansible_collections.gpurt.runtime_gate.plugins.filter import node_gate
    assert variable in node_gate.prevent_inputs_refused(mode, names, age, namespace, deadline)


def test_good_inputs_are_refused_for_no_reason():
    from ansible_collections.gpurt.runtime_gate.plugins.filter import node_gate
    assert node_gate.prevent_inputs_refused(False, ["nvidia"], "90m", "gpurt-system", 300) == ""


def test_summary_lines_say_each_class_the_admission_state_and_the_stale_nodes_once():
    gate = _prevent.gate([rc("nvidia", "nvidia"), rc("runc", "runc", {P + "runc": "true"}), rc("kata", "kata")],
                         NODES, now=NOW)
    admission = {"objects": [{"kind": "ConfigMap", "name": "params", "action": "created"},
                             {"kind": "ValidatingAdmissionPolicy", "name": "gate", "action": "none"}],
                 "lines": ["parameter handler.x was removed"], "enforcement": "not proven in check mode"}
    stale = _prevent.proof([node("old-%d" % i, "nvidia", checked=OLD) for i in range(8)], "24h", now=NOW)[1]
    lines = _prevent.summary_lines(gate, stale, "warn", admission, check_mode=True)
    assert lines[0].startswith("unchanged RuntimeClass kata: not gated: handler 'kata' is verified on no Node"), lines
    assert lines[1] == "would gate RuntimeClass nvidia: nodeSelector {%snvidia=true}; 1 Node(s) match: gpu-1" % P
    assert lines[2].startswith("unchanged RuntimeClass runc: already gated on %srunc; 3 Node(s) match" % P), lines
    assert lines[3] == ("admission policy (gpurt_admission_mode=warn): ConfigMap params would be created, "
                        "ValidatingAdmissionPolicy gate unchanged; enforcement not proven in check mode")
    assert lines[4] == "parameter handler.x was removed"
    assert lines[5].startswith("stale labels: 8 Node(s) not counted as verified") and "old-4 and 3 more" in lines[5]
    real = _prevent.summary_lines(gate, [], "off", {"objects": []})
    assert real[1].startswith("gated RuntimeClass nvidia: ") and len(real) == 4, real
    assert real[3] == "admission policy (gpurt_admission_mode=off): nothing to remove", real
    assert _prevent.summary_lines([], [], "warn")[0] == "no RuntimeClass in the cluster; nothing to gate"


def test_the_selectors_enforcement_is_said_when_a_class_is_gated():
    gated = _prevent.gate([rc("nvidia", "nvidia"), rc("kata", "kata")], NODES, now=NOW)
    proof = {"enforced": True, "proof": "proven: kube-apiserver at https://a: its admission metrics show it"}
    lines = _prevent.summary_lines(gated, [], "warn", None, False, proof)
    assert lines[2] == "RuntimeClass selectors: enforcement proven: kube-apiserver at https://a: its admission " \
                       "metrics show it", lines
    assumed = _prevent.summary_lines(gated, [], "warn", None, False, {"skipped": True}, "assume")
    assert assumed[2] == "RuntimeClass selectors: enforcement assumed, not proven (gpurt_selector_enforcement=assume)"
    # nothing gated (kata's handler is verified nowhere): no selector to enforce, no line
    none_gated = _prevent.gate([rc("kata", "kata")], NODES, now=NOW)
    assert not [line for line in _prevent.summary_lines(none_gated, [], "warn", None, False, {"skipped": True})
                if "selectors" in line]


def test_stale_nodes_are_a_line_per_reason_at_any_fleet_size():
    """Issue 35: 3,000 stale Nodes are two lines (one per reason), each with its count, the handlers their labels
    name, the ages or the annotation values, and up to 5 names; every Node's own line stays in stale_lines."""
    older = [node("old-%04d" % i, "nvidia", "runc", checked=time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 86400 - 3600 * (1 + i % 48)))) for i in range(2990)]
    undated = [node("undated-%d" % i, "kata", checked=None if i % 2 else "yesterday") for i in range(10)]
    fresh, stale = _prevent.proof(older + undated + NODES, "24h", now=NOW)
    assert len(stale) == 3000 and len(_prevent.stale_lines(stale)) == 3000
    lines = _prevent.stale_summary(stale)
    assert lines == [
        "stale labels: 2990 Node(s) not counted as verified: their labels (nvidia, runc) were checked 25.0 h to "
        "72.0 h ago, longer ago than gpurt_label_max_age 24h: old-0000, old-0001, old-0002, old-0003, old-0004 and "
        "2985 more; the next labeling run (audit.yml with gpurt_label_nodes=true) proves or removes them (until then "
        "the scheduler still selects those Nodes by them)",
        "stale labels: 10 Node(s) not counted as verified: their labels (kata) carry no readable check time "
        "(annotation %schecked-at: 'yesterday', None): undated-0, undated-1, undated-2, undated-3, undated-4 and 5 "
        "more; the next labeling run (audit.yml with gpurt_label_nodes=true) proves or removes them (until then the "
        "scheduler still selects those Nodes by them)" % P]
    one = _prevent.stale_summary(_prevent.proof([node("gpu-7", "nvidia", "runc", checked=OLD)], "24h", now=NOW)[1])
    assert one == ["stale labels: 1 Node(s) not counted as verified: their labels (nvidia, runc) were checked at %s, "
                   "72.0 h ago, longer ago than gpurt_label_max_age 24h: gpu-7; the next labeling run (audit.yml with "
                   "gpurt_label_nodes=true) proves or removes them (until then the scheduler still selects those "
                   "Nodes by them)" % OLD]
    assert _prevent.summary_lines([], stale, "warn")[-2:] == lines


def test_the_plan_judges_the_nodes_proof_once_for_the_gate_the_parameters_and_the_refusal(monkeypatch):
    """Each proof() call reads the clock: a label on the gpurt_label_max_age edge could be fresh for the gate
    and stale for the parameters. prevent_plan judges once and hands that judgment to every part."""
    from ansible_collections.gpurt.runtime_gate.plugins.filter import node_gate
    real, calls = _prevent.proof, []

    def proof(nodes, max_age="24h", now=None):
        calls.append(max_age)
        return real(nodes, max_age, NOW)

    monkeypatch.setattr(_prevent, "proof", proof)
    plan = node_gate.prevent_plan([rc("nvidia", "nvidia")], NODES, None, "deny", "24h")
    assert calls == ["24h"]
    assert [g["decision"] for g in plan["gate"]] == ["write"] and plan["no_proof"] is None
    assert plan["params"] and plan["stale"] == []

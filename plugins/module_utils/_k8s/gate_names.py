# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The names the prevention layers write into the cluster, defined once: the verified handler labels
on Nodes and their check-time annotation, the field managers, and the admission policy's objects."""

LABEL_PREFIX = "runtime-gate.gpurt.io/"
CHECKED_AT = "runtime-gate.gpurt.io/checked-at"
LABEL_FIELD_MANAGER = "gpurt-runtime-gate-labels"
GATE_FIELD_MANAGER = "gpurt-runtime-gate-prevent"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
POLICY_NAME = "runtime-gate.gpurt.io"
PARAMS_CONFIGMAP = "runtime-gate-verified-handlers"
PARAMS_NAMESPACE = "gpurt-runtime-gate"
# gpurt_admission_mode -> the binding's validationActions
VALIDATION_ACTIONS = {"warn": ["Warn", "Audit"], "deny": ["Deny"]}

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan and prove the files that register runtimes with a node's containerd (controller only).

Other tools (nvidia-ctk, the GPU Operator, kubespray, k3s, cloud bootstrap scripts) write the
same files, so the rules are, each measured with the real containerd 1.6, 1.7, 2.1 and 2.3.4:

- Nothing is written while every wanted runtime is loaded as wanted (minimal change).
- The main config is edited in place (tomlkit keeps comments and layout), and only for an
  ``imports`` entry or a version migration. Whether a file may be written is decided from the node's
  evidence (``ownership_gate``): refused, or changed through the input its generator keeps.
- Own files have names no other tool uses (``<prefix>gpurt-<runtime><suffix>``) and a marker line;
  a file without the marker is never written.
- 2.x merges drop-ins key by key: one own drop-in per runtime, plus ``<prefix>gpurt_cri<suffix>``
  for CRI-wide keys (default runtime, enable_cdi). Drop-ins carry the main file's version, never a
  higher one (2.3+ refuses to start otherwise).
- 1.x lets each file replace a plugin's whole section (containerd#5837): one own drop-in carries the
  key-by-key merge of every file's CRI section (what 2.x would load), plus the runtimes, and is merged
  last (closure).
- A main config the node ignores part of (version 3 on 1.x, version 1, old CRI name in version 3) is
  converted to what the node reads (convert), under the same proof.
- The proof: the staged load (``config dump`` of the proposed files) keeps every key of the current
  load, except what the run was asked to change (``prove``). Otherwise the node is refused before a
  byte is written, with each changed key and its value before and after.

The jobs: options (validated once), plan and dropins, toml_edit (edits, diffs, migration),
ownership (the role's own files), ownership_gate (who owns the others, by evidence), proof, restart,
restart_proof (the running daemon after the restart). What the containerd_runtime action uses is named here.
"""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.refusal import Refusal  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.ownership import OWN_MARKER  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.options import (  # noqa: F401
    ARGUMENT_SPEC, check_options, dropin_dirs, kubelet_systemd_cgroup, normalize_runtimes, validated_options)
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.toml_edit import (  # noqa: F401
    change_line, loaded_diff)
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.plan import plan  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.proof import prove  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.restart import restart_pending  # noqa: F401

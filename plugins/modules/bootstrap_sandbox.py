#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: bootstrap_sandbox
short_description: Lay out a node bootstrap's files in a sandbox directory on the controller
description:
  - Writes the files a node bootstrap would write (rendered templates given in O(files), and the
    files a O(userdata) writes) below O(root), and picks the containerd binary of the node group's
    release, so that M(gpurt.runtime_gate.containerd_config_info) can load them before any node boots.
  - O(userdata) may be MIME multipart (or gzip-compressed), C(#cloud-config) with C(write_files) (plain,
    base64, gzip), or a shell script writing files with heredocs (C(cat > PATH <<'EOF'), C(cat <<EOF > PATH),
    C(tee PATH <<EOF)). Nothing in it is run.
  - B(Fails closed.) Whatever could change what containerd or the kubelet loads and is not reproduced here
    makes the result C(NOT VALIDATED), one reason per line in RV(unevaluated), for the caller to stop on (the
    task itself does not fail, so that each reason is printed once, in RV(gpurt_summary_lines)) - an EKS
    nodeadm C(NodeConfig) (nodeadm renders the config at boot from its own template), commands that
    generate or edit the files (C(containerd config default >), C(sed -i), C(nvidia-ctk runtime configure),
    C(cp), C(echo >>), installing a containerd package), shell expansions in a written file, cloud-init
    Jinja templates, user-data parts of other kinds, and a bootstrap that writes no O(config_path) while
    O(image_config) does not say what the image ships. No verdict is given on containerd's defaults in
    their place.
  - Absolute C(imports) entries of the containerd config files are moved into the sandbox; nothing
    else in them changes meaning.
  - Runs on the controller only (action plugin). The sandbox is scratch space, written in check mode too.
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  root:
    description: The sandbox directory.
    type: path
    required: true
  files:
    description: Files to write, each with C(path) (absolute, on the node) and C(content).
    type: list
    elements: dict
    default: []
  userdata:
    description: A user-data file (launch template, cloud-init) whose written files are laid out too.
    type: path
  image_config:
    description:
      - The containerd config the node image ships at O(config_path), laid out before the bootstrap's files
        (which replace it when they write O(config_path)).
      - V(none) says the image ships none, so containerd runs on its defaults unless the bootstrap writes one.
      - Unset, a bootstrap that writes no O(config_path) is C(NOT VALIDATED).
    type: str
  config_path:
    description: The containerd config path on the node.
    type: str
    default: /etc/containerd/config.toml
  kubelet_config_path:
    description: The kubelet config path on the node.
    type: str
    default: /var/lib/kubelet/config.yaml
  containerd_version:
    description:
      - The node group's containerd, V(1) or V(2), or a release such as V(1.7) or V(2.3) when the minor
        matters (2.3 writes config version 4 and refuses a drop-in above the root file's version).
    type: str
    default: "2"
  containerd_bins:
    description:
      - Containerd binaries by release; the keys are V(1), V(2), or a release such as V(2.3), the values paths on the
        controller (see the example). The C(M.m) entry of O(containerd_version) wins, then its major's entry, then
        C(containerd) in the controller's C(PATH).
      - The binary's C(--version) must match O(containerd_version) (its major, and its minor when one is given).
    type: dict
    default: {}
  name:
    description: "The name the result lines carry: C(<name>: NOT VALIDATED: <reason>)."
    type: str
    default: bootstrap
extends_documentation_fragment:
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.attributes.action
  - gpurt.runtime_gate.attributes.controller_report
seealso:
  - module: gpurt.runtime_gate.containerd_config_info
"""

EXAMPLES = r"""
- name: Lay out what a launch template's user-data writes, for a containerd 2.1 node group
  gpurt.runtime_gate.bootstrap_sandbox:
    root: /tmp/bootstrap-sandbox
    userdata: user-data.txt
    containerd_version: "2.1"
    containerd_bins:
      "1": /opt/containerd-1.7/bin/containerd
      "2": /opt/containerd-2.1/bin/containerd
      "2.3": /opt/containerd-2.3/bin/containerd
  register: sandbox

- name: Load it with that containerd
  gpurt.runtime_gate.containerd_config_info:
    containerd_bin: "{{ sandbox.containerd_bin }}"
    config_path: "{{ sandbox.config_path }}"
    dropin_dirs: "{{ sandbox.dropin_dirs }}"
    cdi_spec_dirs: []
"""

RETURN = r"""
files:
  description: Each file written, with its node path, sandbox path, origin and whether its imports were moved.
  returned: always
  type: list
  elements: dict
unevaluated:
  description: Why the bootstrap is C(NOT VALIDATED), one reason each; empty when everything was reproduced.
  returned: always
  type: list
  elements: str
  sample: ["command not run: sed -i 's/SystemdCgroup = false/SystemdCgroup = true/' /etc/containerd/config.toml"]
gpurt_summary_lines:
  description:
    - "C(<name>: NOT VALIDATED: <reason>), one line per reason, which the C(gpurt.runtime_gate.summary) callback
      prints after the recap."
  returned: when the bootstrap is NOT VALIDATED
  type: list
  elements: str
config_path:
  description: The sandbox path of the containerd config.
  returned: always
  type: str
config_written:
  description: Whether the sandbox has a containerd config (written by the bootstrap or taken from O(image_config)).
  returned: always
  type: bool
dropin_dirs:
  description: The sandbox paths of conf.d and config.d next to the config.
  returned: always
  type: list
  elements: str
kubelet_config_path:
  description: The sandbox path of the kubelet config.
  returned: always
  type: str
containerd_bin:
  description: The containerd binary picked for the node group's release.
  returned: always
  type: str
containerd_version:
  description: That binary's version.
  returned: always
  type: str
  sample: 2.1.9
containerd_source:
  description: Where the binary came from (C(gpurt_bootstrap_containerd_bins['2']) or C(PATH)).
  returned: always
  type: str
root:
  description: The sandbox directory.
  returned: always
  type: str
"""

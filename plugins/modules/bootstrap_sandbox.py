#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: bootstrap_sandbox
short_description: Lay out a node bootstrap's files in a sandbox directory on the controller
description:
  - Writes the files a node bootstrap would write (rendered templates given in O(files), and the
    files a O(userdata) writes) below O(root), so that a real containerd binary can load them with
    M(gpurt.runtime_gate.containerd_config_info) before any node boots.
  - O(userdata) may be MIME multipart, C(#cloud-config) with C(write_files) (plain, base64, gzip), or a
    shell script writing files with heredocs (C(cat > PATH <<'EOF'), C(cat <<EOF > PATH), C(tee PATH <<EOF)).
    Commands that generate or edit files (C(containerd config default > ...), C(sed -i)) are not run;
    they are listed in RV(notes).
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
  config_path:
    description: The containerd config path on the node.
    type: str
    default: /etc/containerd/config.toml
  kubelet_config_path:
    description: The kubelet config path on the node.
    type: str
    default: /var/lib/kubelet/config.yaml
extends_documentation_fragment:
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.attributes.action
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  action:
    support: full
seealso:
  - module: gpurt.runtime_gate.containerd_config_info
"""

EXAMPLES = r"""
- name: Lay out what a launch template's user-data writes
  gpurt.runtime_gate.bootstrap_sandbox:
    root: /tmp/bootstrap-sandbox
    userdata: user-data.txt
  register: sandbox

- name: Load it with containerd 2.1
  gpurt.runtime_gate.containerd_config_info:
    containerd_bin: /opt/containerd-2.1/bin/containerd
    config_path: "{{ sandbox.config_path }}"
    dropin_dirs: "{{ sandbox.dropin_dirs }}"
    cdi_spec_dirs: []
"""

RETURN = r"""
files:
  description: Each file written, with its node path, sandbox path and whether its imports were moved.
  returned: always
  type: list
  elements: dict
notes:
  description: What the user-data does that was not reproduced (commands not run, unexpanded variables).
  returned: always
  type: list
  elements: str
config_path:
  description: The sandbox path of the containerd config.
  returned: always
  type: str
config_written:
  description: Whether the bootstrap writes the containerd config at all.
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
"""

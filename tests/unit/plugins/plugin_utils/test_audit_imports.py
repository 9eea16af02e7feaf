"""Issue 34: what the check-mode audit loads in ansible-playbook's main process (the summary callback, the
gather's action plugin) holds no remediation code: the remediation planner, tomlkit and the node's write code
(about 0.2 s of CPU to import) are for remediate.yml only."""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PREFIX = "ansible_collections.gpurt.runtime_gate.plugins"
REMEDIATION = (PREFIX + ".plugin_utils._remediation", PREFIX + ".module_utils._node_remediation", "tomlkit")


def imported_after(code):
    """The remediation modules `code`'s fresh Python process loaded."""
    probe = code + "\nimport sys\nprint(' '.join(sorted(m for m in sys.modules if m.startswith(%r))))\n" % (
        REMEDIATION,)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, ".collections"), REPO]))
    out = subprocess.run([sys.executable, "-c", probe], env=env, cwd=REPO, check=True, capture_output=True, text=True)
    return out.stdout.split()


def test_the_audit_loads_no_remediation_code():
    # the callback imports the checks (a check names the role's restart marker); the gather's action plugin
    # parses what the node sent (a fragment's carried keys name the images plugin); the judge runs the checks
    assert imported_after("from %s.callback import summary\n"
                          "from %s.action import containerd_config_info, audit_report\n"
                          "from %s.plugin_utils import _checks, _parse_gathered, _fragment_carry, _audit\n"
                          % (PREFIX, PREFIX, PREFIX)) == []


def test_the_moved_names_are_the_same_for_remediation():
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import convert
    assert convert.IMAGE_KEYS is shapes.IMAGE_KEYS and convert.CRI_IMAGES == "io.containerd.cri.v1.images"
    loaded = imported_after("from %s.plugin_utils._remediation import plan" % PREFIX)
    assert "%s.module_utils._node_remediation" % PREFIX in loaded and "tomlkit" in loaded

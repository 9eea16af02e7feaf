"""The proof after the restart is the running daemon's answer (crictl info), never the dump: with no answer the
proof is missing (issue 37). The real daemons run it in tests/integration/test_restart_proof_missing.py."""
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import restart_proof

# 2.1.9's dump of a version 3 config that disables the CRI plugin: the runtime plugin's runtimes are listed
DUMP_21 = ("version = 3\nroot = '/var/lib/containerd'\ndisabled_plugins = ['io.containerd.grpc.v1.cri']\n"
           "[plugins.'io.containerd.cri.v1.runtime'.containerd]\n  default_runtime_name = 'runc'\n"
           "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]\n"
           "  runtime_type = 'io.containerd.runc.v2'\n")

PROOF = {"runtimes": [{"name": "nvidia", "binary_name": ""}], "files": [], "mode": "running"}


def test_no_crictl_answer_is_a_missing_proof():
    after = {
        "config_path": "/etc/containerd/config.toml",
        "running": {
            "source": "process",
            "crictl_error": "'crictl info' on unix:///run/containerd/containerd.sock "
            "exited 1: unknown service runtime.v1.RuntimeService",
        },
    }
    why = restart_proof.unproved(PROOF, after)
    assert why.startswith("the proof is missing: the restarted containerd did not answer on its CRI socket")
    assert "unknown service runtime.v1.RuntimeService" in why and "the files stay as written" in why
    assert restart_proof.unproved(PROOF, {"running": {"source": "crictl"}}) is None
    assert restart_proof.unproved(dict(PROOF, mode="config"), after) is None


def test_the_config_proof_fails_a_config_that_disables_cri():
    loaded = parse_gathered.summarize_dump(DUMP_21)
    after = {"config_path": "/etc/containerd/config.toml", "version_major": 2, "running": {"source": "none"}}
    why = restart_proof.missing_after_restart(dict(PROOF, mode="config"), after, loaded)
    assert len(why) == 1 and "disables the CRI plugin (disabled_plugins: io.containerd.grpc.v1.cri)" in why[0]

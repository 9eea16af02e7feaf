"""`make demo` in a fresh checkout, as a user runs it (issue 35): it builds only what the demo uses (no
Go-built binaries, no Java, no test packages, no kubernetes client: the run cannot import it here), runs the
checkout even where a copy of the collection was installed into its .collections/, prints each reason of the
remediation once, and its last line names the real cause of the remediation's exit code.

The venv and the containerd binaries stand ready (this suite's own, as `make demo` left them on a second
run): the test must never let make install into the test venv, so both of the venv's markers exist."""
import os
import subprocess

import pytest

from tests.lib import ansible_run, containerd_bins
from tests.lib import checkout as fresh_checkout

pytestmark = pytest.mark.integration
LINK = os.path.join(".collections", "ansible_collections", "gpurt", "runtime_gate")


def test_make_demo_runs_only_the_demo_and_says_what_its_exit_code_means(tmp_path):
    checkout = fresh_checkout.copy(tmp_path / "checkout")
    venv = tmp_path / "venv"
    venv.mkdir()
    os.symlink(ansible_run.BIN, str(venv / "bin"))
    for marker in (".installed", ".demo-installed"):
        (venv / marker).write_text("")
    containerd_bins.ensure_binaries()
    cache = os.path.dirname(os.path.realpath(containerd_bins.binaries_dir()))
    # A copy installed into the checkout's collections path (ansible-galaxy run there without -p).
    installed = os.path.join(checkout, LINK)
    os.makedirs(installed)
    with open(os.path.join(installed, "MANIFEST.json"), "w") as handle:
        handle.write("{}")
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("ANSIBLE_"))
    env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=os.environ.get("ANSIBLE_LOCAL_TEMP", "/tmp/gpurt-ansible-local"))
    # demo-setup leaves the kubernetes client out: here it is there, but no process of the demo can import it
    hidden = tmp_path / "no-kubernetes" / "kubernetes"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('the demo must not need the kubernetes client')\n")
    env["PYTHONPATH"] = str(hidden.parent)
    proc = subprocess.run(["make", "demo", "VENV=%s" % venv, "GPURT_CACHE=%s" % cache], cwd=checkout, env=env,
                          check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=900)
    out = proc.stdout
    assert proc.returncode == 0, out[-6000:]
    for other in ("build-go-binaries", "build-promtool", "openjdk", "requirements-test", "pip install"):
        assert other not in out, (other, out[-6000:])
    assert "%s is not this checkout (an installed copy?): replaced by a link to the checkout" % LINK in out, out
    assert os.readlink(installed) == os.path.join("..", "..", ".."), "the demo ran an installed copy"
    assert "gpu-v3-oldname: REFUSED" in out and "gpu-legacy: NOT PROCESSED" in out, out[-6000:]
    assert "the demo must not need the kubernetes client" not in out and "Traceback" not in out, out[-6000:]
    last = [l for l in out.splitlines() if l.startswith("== remediation exit code")]
    assert last == ["== remediation exit code 2 (gpu-v3-oldname was REFUSED (nothing written; the reason is on its "
                    "line above), which stopped the rollout, so gpu-legacy was NOT PROCESSED; reports in "
                    ".demo/reports/)"], out
    assert "a node still fails the re-audit" not in out and "fails its re-audit" not in last[0], out
    # the remediation prints the refusal once, on gpu-v3-oldname's line, and the warning its re-audit found once
    remediation = out[out.index("== remediation of the demo nodes"):]
    assert remediation.count("which one the user means is unknown") == 1, remediation
    assert [l for l in remediation.splitlines() if "which one the user means" in l][0].startswith(
        "failed: [gpu-v3-oldname] (item=gpu-v3-oldname: REFUSED ("), remediation
    assert remediation.count("matches no file") == 1, remediation

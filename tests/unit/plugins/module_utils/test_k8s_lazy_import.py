"""Issue 34: the kubernetes client (about 0.3 s of CPU per process that imports it) is imported only by the
code that talks to a cluster, never by a filter, the judge's label code or the controller check."""
import ast
import os
import subprocess
import sys

from ansible.executor.module_common import ModuleDepFinder

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PREFIX = "ansible_collections.gpurt.runtime_gate.plugins"


def imported_after(code):
    """The modules of `code`'s fresh Python process that the kubernetes client and urllib3 loaded."""
    probe = code + "\nimport sys\nprint(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
    probe += "('kubernetes', 'urllib3'))))\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, ".collections"), REPO]))
    out = subprocess.run([sys.executable, "-c", probe], env=env, cwd=REPO, check=True, capture_output=True, text=True)
    return out.stdout.split()


def test_filters_and_label_code_do_not_import_the_kubernetes_client():
    # the audit's second play evaluates stale_labels in its hosts: line, in ansible-playbook's main process
    assert imported_after("from %s.filter import node_gate\nfrom %s.plugin_utils import _node_labels, _prevent\n"
                          "node_gate.FilterModule().filters()['stale_labels']([], '24h')" % (PREFIX, PREFIX)) == []


def test_the_controller_check_finds_the_kubernetes_client_without_importing_it():
    code = ("from %s.plugin_utils import _controller_requirements as c\n"
            "assert c.present('kubernetes') and c.present('yaml')\n"
            "assert not c.present('gpurt_no_such_package')\n" % PREFIX)
    assert imported_after(code) == []


def test_the_client_names_still_come_from_the_package_when_used():
    assert kube.build_connection.__module__.endswith("_k8s.client")
    assert kube.KubeSession.__module__.endswith("_k8s.session")
    assert set(kube.AUTH_ARG_SPEC) >= {"kubeconfig", "context", "host", "api_key"}
    assert imported_after("from %s.module_utils._k8s import KubeSession, HAS_KUBERNETES\n"
                          "assert HAS_KUBERNETES" % PREFIX)[:1] == ["kubernetes"]
    try:
        kube.no_such_name  # pylint: disable=pointless-statement
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_ansiballz_still_ships_client_and_session_with_a_module():
    """The loads on first use are plain import statements, which AnsiballZ's dependency finder reads."""
    path = os.path.join(REPO, "plugins", "module_utils", "_k8s", "__init__.py")
    with open(path) as handle:
        tree = ast.parse(handle.read())
    finder = ModuleDepFinder(PREFIX + ".module_utils._k8s", tree, is_pkg_init=True)
    found = set(".".join(name) for name in finder.submodules)
    for part in ("client", "session"):
        assert any(name.startswith("%s.module_utils._k8s.%s" % (PREFIX, part)) for name in found), found

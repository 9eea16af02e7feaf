"""Sessions of the collection's Kubernetes client (plugins/module_utils/_k8s) against the stand-in apiserver
(tests/lib/fake_apiserver.py), for the unit tests of _k8s (tests/unit/plugins/module_utils/test_k8s_*.py,
whose conftest.py gives the `fake` fixture): a token, a short retry delay, backoff sleeps recorded."""
import shutil

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube

TOKEN = "s3cr3t-audit-token-7f9a"
DELAY = 0.01


def make_runtimeclasses(count):
    return [{"metadata": {"name": "rc-%02d" % index}, "handler": "handler-%02d" % index} for index in range(count)]


class Sleeps(list):
    """Records backoff delays instead of sleeping."""

    def __call__(self, seconds):
        self.append(seconds)


def lister(server, token=TOKEN, sleeps=None, **options):
    params = dict(host=server.url, api_key=token, retry_delay=DELAY)
    params.update(options)
    return kube.session_from_params(params, environ={}, sleep=sleeps if sleeps is not None else Sleeps())


needs_openssl = pytest.mark.skipif(not shutil.which("openssl"), reason="openssl CLI not installed")

"""The stand-in apiserver of the _k8s client's unit tests (tests/lib/kube_session.py has the rest)."""
import pytest

from tests.lib.fake_apiserver import FakeApiServer
from tests.lib.kube_session import TOKEN, make_runtimeclasses


@pytest.fixture
def fake():
    with FakeApiServer(runtimeclasses=make_runtimeclasses(7), token=TOKEN, nodes=[
        {"metadata": {"name": "gpu-1", "labels": {"gpu": "true"}},
         "status": {"runtimeHandlers": [{"name": ""}, {"name": "nvidia"}]}},
        {"metadata": {"name": "cpu-1", "labels": {"gpu": "false"}}, "status": {}},
    ]) as server:
        yield server

"""module_utils/_node_commands: containerd's cause line on its stderr, and a process that cannot start for
memory. The bounds on a dump (timeout, size, memory) are exercised through gather() in test_node_gather.py."""
import re
import resource

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_commands as node_commands
from tests.lib.containerd_stderr import GOROUTINE_DUMP


@pytest.mark.parametrize("stderr, cause", [
    # imports = ["/dev/zero"] (measured on 1.6, 1.7, 2.1, 2.3.4): the cause sits above the goroutine dump
    (GOROUTINE_DUMP, "fatal error: out of memory"),
    ('time="x" level=warning msg="Configuration migrated from version 2"\n'
     "containerd: drop-in config version 3 higher than root config version 2\n",
     "containerd: drop-in config version 3 higher than root config version 2"),
    ('time="2026-01-01T00:00:00Z" level=error msg="failed to load TOML" error="toml: line 2: expected key"\n',
     'level=error msg="failed to load TOML" error="toml: line 2: expected key"'),
    ("something odd\nlast words\n", "last words"),
    ("", ""),
])
def test_cause_line(stderr, cause):
    assert node_commands.cause_line(stderr) == cause


@pytest.mark.parametrize("max_memory, message", [
    (64 << 20, "cannot start /x/containerd within max_memory_mb=64: out of memory"),
    (None, "cannot start /x/containerd: out of memory"),
])
def test_a_process_that_cannot_start_for_memory_fails_clearly(monkeypatch, max_memory, message):
    def no_memory(*args, **kwargs):
        raise MemoryError()
    monkeypatch.setattr(node_commands.subprocess, "Popen", no_memory)
    before = resource.getrlimit(resource.RLIMIT_DATA)
    with pytest.raises(node_commands.GatherError, match=re.escape(message)):
        node_commands.start(["/x/containerd", "config", "dump"], max_memory)
    assert resource.getrlimit(resource.RLIMIT_DATA) == before

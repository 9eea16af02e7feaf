# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node side: load a config fragment nothing imports the way containerd would if it were imported: a
scratch copy of the main config whose imports are the node's own (resolved as containerd resolves
them) plus a scratch copy of the fragment, dumped by the node's containerd. The controller compares
that dump with the node's own: a fragment whose load changes nothing containerd loads is no orphan,
whoever merged it (a generator's input, keys containerd drops when it migrates an old version).

Bounded: each load under the gather's timeout, size and memory limits; how many are loaded per gather,
and what the cap left out, is _node_fragment_scan.load_unreferenced's.

Runs on target hosts: Python 3.8+, standard library only."""

import json
import os
import shutil
import tempfile

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_commands as commands
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_config_text as node_config_text

# A scratch path is written into a TOML string as is.
_TOML_UNSAFE = ('"', "\\", "'", "\n")


def scratch_main(config_text, own_imports, fragment):
    """The main config's text with its top-level imports replaced by own_imports (resolved paths) and
    then fragment; None when the imports array cannot be cut out as text."""
    rest = node_config_text.without_top_level_array(config_text, "imports")
    if rest is None or rest.startswith("\ufeff"):
        return None
    return "imports = [%s]\n%s" % (", ".join(json.dumps(p) for p in list(own_imports) + [fragment]), rest)


def load_one(binary, config_text, own_imports, content, params):
    """{rc, dump, cause, warnings} of `containerd config dump` on the scratch pair, or {error}."""
    work = tempfile.mkdtemp(prefix="gpurt-fragment-")
    try:
        if any(char in work for char in _TOML_UNSAFE):
            return {"error": "the scratch directory %s has characters a TOML string would need escaped" % work}
        fragment = os.path.join(work, "fragment.toml")
        main = scratch_main(config_text, own_imports, fragment)
        if main is None:
            return {"error": "the imports array of the main config is not a shape this module can cut out"}
        with open(fragment, "w") as handle:
            handle.write(content)
        main_path = os.path.join(work, "config.toml")
        with open(main_path, "w") as handle:
            handle.write(main)
        argv = [binary, "--config", main_path, "config", "dump"]
        try:
            proc = commands.start(argv, commands.memory_limit(params))
            rc, dump, stderr = commands.finish(proc, argv, params["timeout"], params["max_dump_bytes"])
        except commands.GatherError as exc:
            return {"error": str(exc).replace(work, "<scratch>")}
        return {"rc": rc, "dump": dump.replace(work, "<scratch>") if rc == 0 else None,
                "cause": commands.cause_line(stderr).replace(work, "<scratch>") if rc != 0 else None,
                "warnings": [line.replace(work, "<scratch>") for line in commands.loader_lines(stderr)[:20]]}
    finally:
        shutil.rmtree(work, ignore_errors=True)

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape of the remediation plan (plan.plan's result), declared once: each key, its type and its meaning.

tests/unit/test_declared_shapes.py holds it: real plans have exactly these keys, and no `the_plan[...]` /
`the_plan.get(...)` in plugins/ names a key that is not here. The types are documentation only."""

from typing import Any, Dict, List, Optional, Tuple, TypedDict


class PlannedFile(TypedDict):
    """One file the plan writes or removes, as the node's stage and write steps take it."""

    path: str  # the file on the node
    content: Optional[str]  # what to write; None: remove it
    before: Optional[str]  # its text as gathered (None: new), for the diff
    expect_sha256: Optional[str]  # its sha256 as gathered: the write refuses a file changed since (None: absent)


class Plan(TypedDict):
    """Every plan; a no-op plan (noop true) has exactly these."""

    noop: bool  # nothing to write: every wanted runtime loaded as wanted, no default, CDI, removal or closure change
    notes: List[str]  # what the run adopted, followed or changes, for the report and the console
    writes: List[PlannedFile]  # the files to write, main config first
    removes: List[PlannedFile]  # the role's own drop-ins to remove (content None)
    allowed: List[Tuple[str, ...]]  # key paths the proof lets the load change (a path allows its subtree)
    runtimes: List[str]  # the names of the runtimes asked for
    specs: List[Dict[str, Any]]  # those runtimes normalized: name, table (the runtime's TOML table), cdi
    wanted_default: Optional[str]  # the default_runtime_name to set; None when it stays as loaded
    loaded_default: str  # default_runtime_name as loaded ("" when unset)
    need_cdi: bool  # enable_cdi must be turned on for a runtime that asks for CDI
    own_paths: List[str]  # the role's own drop-ins after the run
    containerd: str  # the node's containerd, "major.minor"


class _WritePlanAlways(Plan):
    """What a plan that writes (noop false) adds."""

    warnings: List[str]  # what the user sees at default verbosity: migrations, a created main config
    staged_main: str  # the main config the stage loads: its drop-in dir entries under the staging placeholder
    import_patterns: List[str]  # the main config's imports entries after the run, resolved
    expected_leaves: List[Tuple[Tuple[str, ...], Any]]  # 1.x: (key path, value) the staged load must show
    disruptive: List[str]  # why the change disrupts running pods (remediate.yml drains the host), or []
    main_version: int  # the main config's version after the run; the drop-ins take it


class WritePlan(_WritePlanAlways, total=False):
    """A plan that writes, with what only some carry."""

    pinned: Dict[str, Any]  # 1.x: the CRI keys the role's drop-in copies (path, keys, from)
    input_paths: List[str]  # generator inputs written in place of the files they render (ownership_gate)

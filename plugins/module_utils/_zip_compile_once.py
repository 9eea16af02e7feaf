# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Compile each source of a module's AnsiballZ zip once per run, not twice. Imported first by a module, it
installs itself (install()).

zipimport keeps no bytecode, and an import from a zip asks get_filename, which compiles the source only to
name its file, then compiles it again to run it (measured on Python 3.8, 3.9, 3.11, 3.12 and 3.13: each
module_utils the gather imports compiled twice; on 3.11, 9 ms of a node's CPU per host and task). Here the second compile of the same file
and the same source, in this process, is the first one's code object. Nothing is written, nothing outlives
the module's process: a source that changed is another key. Without zipimport's compile hook (another
Python) nothing changes.

Runs on target hosts: Python 3.8+, standard library only."""

import zipimport


def install():
    """Make zipimport reuse, once, the code it compiled for a file; True when the hook is in place."""
    compile_source = getattr(zipimport, "_compile_source", None)
    if compile_source is None:
        return False
    if getattr(compile_source, "compiles_once", False):
        return True
    compiled = {}

    def compile_once(pathname, source):
        code = compiled.pop((pathname, source), None)  # a file's second compile is its last
        if code is None:
            code = compile_source(pathname, source)
            compiled[(pathname, source)] = code
        return code

    compile_once.compiles_once = True
    zipimport._compile_source = compile_once
    return True


install()

# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a service does at start, read from the unit files the node runs: the units under a node
root (their drop-ins merged as systemd merges them), their ExecStart* command lines with the
Environment expanded, snap apps followed to the command snapd runs, and the shell scripts a start
runs scanned for the files they write.

Runs on target hosts: Python 3.8+, standard library only. Pure functions take texts; only the
functions named *_under_root touch the file system.
"""

import os
import re
import shlex

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths

# systemd's unit search path, highest priority first (/lib is /usr/lib on merged-usr systems).
UNIT_DIRS = ("etc/systemd/system", "run/systemd/system", "usr/local/lib/systemd/system",
             "usr/lib/systemd/system", "lib/systemd/system")
_LIST_KEYS = ("ExecStartPre", "ExecStartPost", "Environment", "EnvironmentFile")
_RESET_KEYS = ("ExecStart",) + _LIST_KEYS
_KEEP = ("ExecStart", "ExecStartPre", "ExecStartPost", "Environment", "EnvironmentFile", "WorkingDirectory")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_SOURCE = re.compile(r"^# (/\S+)$")
# A shell line that writes a file: redirection, tee, cp/install/mv/ln into a path, sed -i.
_WRITES = (re.compile(r"(?<![<>&0-9])>>?\s*\"?([^\s\"';|&]+)"),
           re.compile(r"\btee\s+(?:-a\s+)?\"?([^\s\"';|&]+)"),
           re.compile(r"\b(?:cp|install|mv)\b(?:\s+-\S+)*\s+\S+\s+\"?([^\s\"';|&]+)"),
           re.compile(r"\bsed\s+(?:-[^i\s]\S*\s+)*-i\S*\s+.*?\"?([^\s\"';|&]+)\s*$"))
_MAX_SCRIPT = 262144


def parse_unit(text, source=None):
    """[(key, value, source)] of a unit file's [Service] section, in order. The text of
    `systemctl cat` works too: its '# /path' lines name the source of what follows."""
    out = []
    section = None
    pending = ""
    for raw in text.splitlines():
        match = _SOURCE.match(raw.strip())
        if match:
            source, section = match.group(1), None
            continue
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        if section != "Service" or "=" not in line:
            continue
        key, value = line.split("=", 1)
        out.append((key.strip(), value.strip(), source))
    return out


def merge(entries):
    """{key: [(value, source)]} of the directives that take effect: systemd appends list settings
    across the fragment and its drop-ins, and an empty assignment resets what came before."""
    merged = {}
    for key, value, source in entries:
        if key not in _KEEP:
            continue
        if value == "" and key in _RESET_KEYS:
            merged[key] = []
        elif key in _RESET_KEYS:
            merged.setdefault(key, []).append((value, source))
        else:
            merged[key] = [(value, source)]
    return merged


def environment(merged, read_env_file=None, origins=None):
    """{name: value} from Environment= (quoted words of KEY=VALUE) and EnvironmentFile= (read with
    read_env_file(path) -> text or None; a '-' prefix makes a missing file fine). As systemd.exec(5) says,
    the files' settings override Environment='s. origins, a dict, receives where each name was set."""
    env = {}
    origins = {} if origins is None else origins
    for value, source in merged.get("Environment", []):
        try:
            words = shlex.split(value)
        except ValueError:
            words = value.split()
        for word in words:
            if "=" in word:
                key, val = word.split("=", 1)
                env[key] = val
                origins[key] = "Environment= in %s" % source if source else "Environment="
    for value, source in merged.get("EnvironmentFile", []):
        path = value[1:] if value.startswith("-") else value
        text = read_env_file(path) if read_env_file else None
        for line in (text or "").splitlines():
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                key, val = line.split("=", 1)
                env[key.strip()] = val.strip().strip("\"'")
                origins[key.strip()] = "EnvironmentFile=%s%s" % (path, " in %s" % source if source else "")
    return env


# systemd's PATH for the services of the system manager (systemd.exec(5), "$PATH"): a fixed value, with
# ":/sbin:/bin" appended where systemd is built for an unmerged /usr (/bin is not a symlink to /usr/bin).
DEFAULT_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin")
UNMERGED_USR_PATH = DEFAULT_PATH + ("/sbin", "/bin")


def service_path(env, origins, unmerged_usr):
    """([dirs], where they come from) of the PATH a system service runs with: the PATH its unit sets
    (env and origins of environment()), else systemd's default for an (un)merged /usr."""
    if "PATH" in env:
        return env["PATH"].split(":"), "PATH from %s" % origins.get("PATH", "the unit")
    return list(UNMERGED_USR_PATH if unmerged_usr else DEFAULT_PATH), "systemd's default PATH for services"


def expand(text, env):
    """${VAR} and $VAR replaced from env, as systemd does in Exec lines; unknown names stay."""
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), text)


def command(value, env):
    """argv of an Exec line: its prefixes (-, @, +, !, :) dropped, variables expanded."""
    value = value.lstrip("-@+!:")
    try:
        return [expand(word, env) for word in shlex.split(value)]
    except ValueError:
        return [expand(word, env) for word in value.split()]


def script_writes(text, env=None):
    """Paths a shell script (or a `sh -c` string) writes, variables expanded from env, in order.
    A heuristic over its lines: redirections, tee, cp/install/mv targets, sed -i."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        for pattern in _WRITES:
            for match in pattern.finditer(line):
                path = expand(match.group(1), env or {})
                if path.startswith("/") and not path.startswith("/dev/") and path not in found:
                    found.append(path)
    return found


def script_reads(text, names):
    """The names (file base names) a script mentions, of those asked: 'does the start read X'."""
    return [name for name in names if name and name in text]


def snap_app(argv):
    """(snap, app) of `snap run <snap>.<app>`, else None."""
    if len(argv) >= 3 and os.path.basename(argv[0]) == "snap" and argv[1] == "run":
        name = argv[-1]
        if "." in name:
            snap, app = name.split(".", 1)
            return snap, app
        return name, name
    return None


def snap_app_command(snap_yaml, app):
    """The `command:` of one app in a snap's meta/snap.yaml (read line by line: no YAML parser)."""
    in_apps = False
    current = None
    for line in snap_yaml.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if indent == 0:
            in_apps = text == "apps:"
            continue
        if not in_apps:
            continue
        if text.endswith(":") and " " not in text[:-1]:
            current = text[:-1] if indent <= 2 else current
            continue
        if current == app and text.startswith("command:"):
            return text.split(":", 1)[1].strip().strip("\"'")
    return None


def unit_files_under_root(root, name):
    """(fragment path or None, [drop-in paths]) of unit `name` under a node root, in systemd's order:
    the first fragment found on the search path; drop-ins from every dir, sorted by file name."""
    fragment = None
    dropins = {}
    for directory in UNIT_DIRS:
        base = host_paths.on_machine(root, directory)
        candidate = os.path.join(base, name)
        if fragment is None and os.path.isfile(candidate):
            fragment = candidate
        for path in host_paths.list_files(candidate + ".d"):
            if path.endswith(".conf"):
                dropins.setdefault(os.path.basename(path), path)
    return fragment, [dropins[key] for key in sorted(dropins)]


def read_unit_under_root(root, name, read_text):
    """(entries of parse_unit, [sources], [errors]) of unit `name` under a node root: its fragment, then its
    drop-ins, each named as the node names it; read_text(path) -> (text, error)."""
    fragment, dropins = unit_files_under_root(root, name)
    entries, sources, errors = [], [], []
    for path in ([fragment] if fragment else []) + dropins:
        node = host_paths.on_node(root, path)
        body, error = read_text(path)
        if error:
            errors.append("%s: %s" % (node, error))
            continue
        entries += parse_unit(body, node)
        sources.append(node)
    return entries, sources, errors


def unmerged_usr_under_root(root):
    """Whether the node under root has an unmerged /usr: a /bin directory that is not a symlink."""
    bin_dir = host_paths.on_machine(root, "/bin")
    return os.path.isdir(bin_dir) and not os.path.islink(bin_dir)


def units_under_root(root):
    """Names of the .service units under a node root (every dir of the search path)."""
    names = set()
    for directory in UNIT_DIRS:
        try:
            entries = os.listdir(host_paths.on_machine(root, directory))
        except OSError:
            continue
        names.update(n for n in entries if n.endswith(".service"))
    return sorted(names)

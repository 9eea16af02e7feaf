"""Property tests (hypothesis) of the parsing and matching code; a small budget so it runs in seconds."""
import os
import tomllib

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_config_text as cc
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec

DUMPS = os.path.join(os.path.dirname(__file__), "fixtures", "dumps")
DUMP_NAMES = sorted(n for n in os.listdir(DUMPS) if n.endswith(".toml"))
DUMP_TEXTS = dict((n, open(os.path.join(DUMPS, n)).read()) for n in DUMP_NAMES)

FUZZ = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
SMALL = settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)


def summarize_or_dump_error(data):
    """The dump path's contract: a summary dict, or DumpError; nothing else may escape."""
    try:
        summary = parse_gathered.summarize_dump(data)
    except parse_gathered.DumpError as exc:
        assert str(exc)
        return None
    assert isinstance(summary, dict)
    assert summary["runtime_names"] == sorted(summary["runtimes"])
    assert all(isinstance(n, str) for n in summary["runtime_names"])
    return summary


# --- (a) the dump path only ever raises DumpError -------------------------------------------

@FUZZ
@given(st.text())
def test_dump_path_text(text):
    summarize_or_dump_error(text)


@FUZZ
@given(st.binary())
def test_dump_path_bytes(data):
    summarize_or_dump_error(data)


@FUZZ
@given(name=st.sampled_from(DUMP_NAMES), data=st.data())
def test_dump_path_truncated_and_mutated_real_dumps(name, data):
    text = DUMP_TEXTS[name]
    raw = text.encode("utf-8")
    cut = data.draw(st.integers(0, len(raw)), label="cut")
    mode = data.draw(st.sampled_from(["truncate", "delete", "insert", "replace_line", "bytes"]), label="mode")
    if mode == "truncate":
        mutated = raw[:cut]
    elif mode == "delete":
        mutated = raw[:cut] + raw[cut + data.draw(st.integers(1, 200)):]
    elif mode == "insert":
        mutated = raw[:cut] + data.draw(st.binary(max_size=40)) + raw[cut:]
    elif mode == "bytes":
        mutated = raw[:cut] + data.draw(st.binary(min_size=1, max_size=8)) + raw[cut + 8:]
    else:
        lines = text.splitlines(True)
        i = data.draw(st.integers(0, len(lines) - 1))
        lines[i] = data.draw(st.sampled_from([
            "version = 'three'\n", "version = true\n", "imports = 'x'\n", "imports = [1, 2]\n", "plugins = 3\n",
            "runtimes = []\n", "containerd = 'no'\n", "options = 7\n", "cdi_spec_dirs = 'x'\n", "[plugins]\n",
            "[[plugins]]\n", "default_runtime_name = 5\n", "]]\n", "= 1\n", "'''\n"]))
        mutated = "".join(lines).encode("utf-8")
    as_text = data.draw(st.booleans(), label="as_text")
    summarize_or_dump_error(mutated.decode("utf-8", "replace") if as_text else mutated)


SCALARS = st.one_of(st.integers(-5, 5), st.text(max_size=5), st.booleans(), st.lists(st.integers(), max_size=2),
                    st.just({}), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def paths_of(doc, prefix=()):
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += paths_of(value, prefix + (key,))
    return out


@FUZZ
@given(name=st.sampled_from(DUMP_NAMES), data=st.data())
def test_dump_path_reshaped_real_dumps(name, data):
    """Valid TOML of the wrong shape: replace one node of a real dump with any value."""
    doc = tomllib.loads(DUMP_TEXTS[name])
    interesting = [p for p in paths_of(doc) if p[0] in ("version", "imports", "plugins")
                   and (len(p) < 3 or p[1] in shapes.CRI_PLUGIN_NAMES)]
    path = data.draw(st.sampled_from(interesting), label="path")
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = data.draw(SCALARS, label="value")
    summarize_or_dump_error(toml_codec.dumps(doc))


# --- (b) dumps -> loads round-trips; summarize finds exactly the generated runtimes ----------

def runtime_tables():
    options = st.fixed_dictionaries({}, optional={
        "BinaryName": st.text(max_size=30), "SystemdCgroup": st.booleans()})
    return st.fixed_dictionaries({"runtime_type": st.sampled_from(["io.containerd.runc.v2", "io.containerd.kata.v2"])},
                                 optional={"options": options, "privileged_without_host_devices": st.booleans(),
                                           "cdi_devices": st.booleans(), "pod_annotations": st.lists(st.text(max_size=8), max_size=3)})


KEYS = st.text(max_size=8)
ANY_VALUES = st.recursive(
    st.one_of(st.integers(-2 ** 63, 2 ** 63 - 1), st.text(max_size=10), st.booleans(),
              st.floats(allow_nan=False), st.lists(st.text(max_size=4), max_size=3)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=8)


@st.composite
def configs(draw):
    version = draw(st.integers(1, 4))
    plugins = {}
    expected = set()
    for plugin in draw(st.lists(st.sampled_from(shapes.CRI_PLUGIN_NAMES), min_size=1, max_size=3, unique=True)):
        runtimes = draw(st.dictionaries(NAMES, runtime_tables(), max_size=4))
        expected.update(runtimes)
        containerd = {"runtimes": runtimes}
        if draw(st.booleans()):
            containerd["default_runtime_name"] = draw(NAMES)
        section = {"containerd": containerd}
        if draw(st.booleans()):
            section.update(enable_cdi=draw(st.booleans()), cdi_spec_dirs=draw(st.lists(st.text(max_size=10), max_size=2)))
        plugins[plugin] = section
    # plugins that are not CRI, with any keys and values
    plugins.update(draw(st.dictionaries(KEYS.filter(lambda k: k and k not in shapes.CRI_PLUGIN_NAMES),
                                        st.dictionaries(KEYS, ANY_VALUES, max_size=3), max_size=2)))
    doc = {"version": version, "plugins": plugins}
    if draw(st.booleans()):
        doc["imports"] = draw(st.lists(st.text(max_size=20), max_size=3))
    return doc, expected


@FUZZ
@given(configs())
def test_roundtrip_and_summary(generated):
    doc, expected = generated
    text = toml_codec.dumps(doc)
    assert tomllib.loads(text) == doc
    summary = shapes.summarize(toml_codec.loads(text))
    assert set(summary["runtime_names"]) == expected
    assert summary["runtime_names"] == sorted(expected)
    assert summary["version"] == doc["version"]
    # the controller's dump path agrees
    assert parse_gathered.summarize_dump(text)["runtime_names"] == sorted(expected)


@FUZZ
@given(st.dictionaries(KEYS, ANY_VALUES, max_size=5))
def test_roundtrip_any_table(doc):
    assert tomllib.loads(toml_codec.dumps(doc)) == doc


@pytest.mark.parametrize("doc", [{"0\n": 1}, {"plugins": {"x\n": {}}}, {"a\n": [{}]}])
def test_roundtrip_key_with_trailing_newline(doc):
    assert tomllib.loads(toml_codec.dumps(doc)) == doc


# --- (c) missing handlers -------------------------------------------------------------------

LABEL_KEYS = st.sampled_from(["gpu", "zone", "vendor"])
LABEL_VALUES = st.sampled_from(["true", "false", "a", "b"])
SELECTORS = st.dictionaries(LABEL_KEYS, LABEL_VALUES, max_size=2)


@st.composite
def runtimeclasses(draw, loaded):
    near = st.tuples(st.sampled_from(sorted(loaded) or ["runc"]), st.sampled_from(["x", "-typo", "1"]))
    handlers = st.one_of(NAMES, st.sampled_from(sorted(loaded) or ["runc"]), near.map("".join))
    items = draw(st.lists(st.tuples(handlers, SELECTORS), max_size=8))
    return [{"name": "rc%d" % i, "handler": h, "node_selector": s, "overhead": None} for i, (h, s) in enumerate(items)]


@FUZZ
@given(data=st.data(), loaded=st.sets(NAMES, max_size=6),
       labels=st.one_of(st.none(), st.dictionaries(LABEL_KEYS, LABEL_VALUES, max_size=3)))
def test_missing_handlers_property(data, loaded, labels):
    rcs = data.draw(runtimeclasses(loaded), label="runtimeclasses")
    out = checks.check_missing_handler(checks.Context("n1", {"loaded": {"runtime_names": sorted(loaded)}}, rcs, labels))

    def applies(rc):
        if labels is None:
            return True
        return all(labels.get(k) == v for k, v in rc["node_selector"].items())

    expected = set(rc["handler"] for rc in rcs if applies(rc)) - loaded
    assert set(f["subject"] for f in out) == expected
    assert not set(f["subject"] for f in out) & loaded
    assert checks.missing_lines(out) == sorted("MISSING=%s" % h for h in expected)
    for item in out:
        assert item["check"] == "missing_handler" and item["severity"] == "error"
        suggestion = item["evidence"]["suggestion"]
        assert suggestion is None or suggestion in loaded
        # never a runtime that a RuntimeClass able to land here asks for itself
        assert suggestion not in set(rc["handler"] for rc in rcs if applies(rc))
        assert item["evidence"]["loaded_runtimes"] == sorted(loaded)
    # one finding per applicable RuntimeClass whose handler is missing
    assert len(out) == sum(1 for rc in rcs if applies(rc) and rc["handler"] not in loaded)


# --- (d) top_level_imports agrees with tomllib ----------------------------------------------

PATH_CHARS = st.characters(blacklist_categories=("Cs", "Cc"))


def basic(value):
    return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"')


def literal(value):
    return "'%s'" % value


@st.composite
def imports_arrays(draw, comments=False):
    items = draw(st.lists(st.text(PATH_CHARS, max_size=25), max_size=5))
    rendered = []
    for item in items:
        if "'" not in item and draw(st.booleans()):
            rendered.append(literal(item))
        else:
            rendered.append(basic(item))
    space = st.sampled_from(["", " ", "  ", "\t", "\n", "\n  ", " \n\t"])
    body = ""
    for i, item in enumerate(rendered):
        body += draw(space) + item + draw(space)
        if i < len(rendered) - 1 or draw(st.booleans()):
            body += ","
        if comments and draw(st.booleans()):
            body += " # " + draw(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20)) + "\n"
    text = draw(st.sampled_from(["", "version = 2\n", "# header\nversion = 3\n"]))
    text += "imports = [%s]\n" % body
    text += draw(st.sampled_from(["", "root = '/var/lib/containerd'\n", '[plugins]\n  imports = ["/not/top/level"]\n']))
    return text


@FUZZ
@given(imports_arrays())
def test_top_level_imports_agree_with_tomllib(text):
    assert cc.top_level_imports(text) == tomllib.loads(text)["imports"]


@FUZZ
@given(st.lists(st.text(PATH_CHARS, max_size=25), max_size=4))
def test_top_level_imports_of_dumps_output(items):
    text = toml_codec.dumps({"version": 2, "imports": items, "plugins": {"x": {"imports": ["nested"]}}})
    assert cc.top_level_imports(text) == items


@SMALL
@example('imports = [\n  "/etc/containerd/conf.d/*.toml",\n  # "/etc/containerd/config.d/*.toml",\n]\n')
@example('imports = [\n  "/etc/containerd/conf.d/*.toml",  # nvidia-ctk\'s drop-ins\n]\n')
@given(imports_arrays(comments=True))
def test_top_level_imports_with_comments_agree_with_tomllib(text):
    assert cc.top_level_imports(text) == tomllib.loads(text)["imports"]

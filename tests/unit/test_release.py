"""Release metadata that a Galaxy user and ansible-test rely on, checked without building."""
import glob
import os
import re

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_yaml(rel):
    with open(os.path.join(REPO, rel)) as handle:
        return yaml.safe_load(handle)


def version_tuple(text):
    assert re.fullmatch(r"\d+\.\d+\.\d+", str(text)), text
    return tuple(int(n) for n in str(text).split("."))


GALAXY = load_yaml("galaxy.yml")


def plugin_docs():
    """(path, DOCUMENTATION dict) of every documented plugin (modules, action-plugin doc stubs,
    filters, callbacks), Python or YAML."""
    for path in sorted(glob.glob(os.path.join(REPO, "plugins", "*", "*.py"))):
        if "/plugins/doc_fragments/" in path or "/plugins/module_utils/" in path or "/plugins/plugin_utils/" in path:
            continue
        with open(path) as handle:
            text = handle.read()
        match = re.search(r'^DOCUMENTATION = r"""\n(.*?)^"""', text, re.MULTILINE | re.DOTALL)
        if match:
            yield os.path.relpath(path, REPO), yaml.safe_load(match.group(1))
    for path in sorted(glob.glob(os.path.join(REPO, "plugins", "filter", "*.yml"))):
        yield os.path.relpath(path, REPO), load_yaml(os.path.relpath(path, REPO))["DOCUMENTATION"]


def test_every_plugin_says_when_it_was_added_and_none_is_ahead_of_the_collection():
    docs = list(plugin_docs())
    assert len(docs) >= 12, [p for p, _d in docs]
    for path, doc in docs:
        assert "version_added" in doc, path
        assert version_tuple(doc["version_added"]) <= version_tuple(GALAXY["version"]), (path, doc["version_added"])


def test_galaxy_yml_has_no_placeholder_urls():
    for field in ("repository", "documentation", "homepage", "issues"):
        value = GALAXY.get(field)
        if value is not None:
            assert value.startswith("https://"), (field, value)
            assert not re.search(r"example\.(invalid|com|org|net)|localhost|todo|changeme", value, re.I), (field, value)
    assert GALAXY["license"] == ["GPL-3.0-or-later"]


def test_license_is_the_gpl_3_text():
    with open(os.path.join(REPO, "LICENSE")) as handle:
        text = handle.read()
    assert text.lstrip().startswith("GNU GENERAL PUBLIC LICENSE\n                       Version 3, 29 June 2007")
    assert "END OF TERMS AND CONDITIONS" in text
    system_copy = "/usr/share/common-licenses/GPL-3"
    if os.path.isfile(system_copy):
        with open(system_copy) as handle:
            assert text == handle.read()


def test_changelog_is_set_up_for_antsibull_changelog():
    config = load_yaml("changelogs/config.yaml")
    assert config["changes_file"] == "changelog.yaml" and config["notesdir"] == "fragments"
    changes = load_yaml("changelogs/changelog.yaml")
    for release in changes["releases"] or {}:
        assert version_tuple(release) <= version_tuple(GALAXY["version"])
    fragments = glob.glob(os.path.join(REPO, "changelogs", "fragments", "*"))
    assert fragments and all(f.endswith((".yml", ".yaml")) for f in fragments)
    sections = set(s[0] for s in config["sections"]) | {config["prelude_section_name"], config["trivial_section_name"]}
    for fragment in fragments:
        with open(fragment) as handle:
            assert set(yaml.safe_load(handle)) <= sections, fragment


def requirement_lines(rel):
    with open(os.path.join(REPO, rel)) as handle:
        return [l.split("#")[0].strip() for l in handle if l.split("#")[0].strip()]


def test_tomli_is_declared_for_python_310_only():
    assert 'tomli>=1.1; python_version < "3.11"' in requirement_lines("requirements.txt")


def test_the_oldest_controller_ci_runs_is_the_floor_the_collection_claims():
    floors = dict(re.match(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", line).groups()
                  for line in requirement_lines("requirements.txt") if ">=" in line)
    oldest = dict(line.split("==") for line in requirement_lines("requirements-oldest.txt"))
    requires = load_yaml("meta/runtime.yml")["requires_ansible"]
    assert requires == ">=%s" % oldest["ansible-core"]
    assert version_tuple(oldest["ansible-core"])[:2] == tuple(int(n) for n in floors["ansible-core"].split("."))
    for name in ("kubernetes", "tomli", "tomlkit"):
        assert oldest[name].split(".")[:len(floors[name].split("."))] == floors[name].split("."), name


@pytest.mark.parametrize("name", ["Makefile", "pytest.ini", ".ansible-lint", "ansible.cfg", "benchmarks",
                                  "requirements-*.txt", ".ci", "tools", "tests", "inventory"])
def test_build_ignore_names_the_development_files(name):
    assert name in GALAXY["build_ignore"]


def test_a_fresh_install_keeps_cryptography_below_its_dsa_warning():
    """Issue 35: `pip install ansible-core` pulled cryptography 51, whose DSA deprecation warning ansible-core prints on
    every command. requirements.txt and the README's install line keep below it, as the test venv does."""
    assert "cryptography<51" in requirement_lines("requirements.txt")
    with open(os.path.join(REPO, "README.md")) as handle:
        installs = [line for line in handle.read().splitlines() if "pip install 'ansible-core" in line]
    assert installs and all("'cryptography<51'" in line for line in installs), installs
    pinned = dict(line.split("==") for line in requirement_lines("requirements-test.txt") if "==" in line)
    assert version_tuple(pinned["cryptography"])[0] < 51, pinned


def test_the_readme_says_what_the_one_galaxy_dependency_is_for():
    """Issue 35: the install needs Galaxy only for kubernetes.core, which only gpurt_drain uses: the README's install
    line works offline (--no-deps) and says so, and kubernetes.core is used by the drain tasks alone."""
    assert sorted(GALAXY["dependencies"]) == ["kubernetes.core"]
    with open(os.path.join(REPO, "README.md")) as handle:
        readme = " ".join(handle.read().split())
    assert "ansible-galaxy collection install --no-deps -p ~/.ansible/collections" in readme
    assert "`--no-deps` keeps the install offline" in readme and "`kubernetes.core`, serves only `gpurt_drain=true`" \
        in readme
    users = set()
    for path in glob.glob(os.path.join(REPO, "playbooks", "**", "*.yml"), recursive=True) + \
            glob.glob(os.path.join(REPO, "roles", "**", "*.yml"), recursive=True):
        with open(path) as handle:
            if re.search(r"^\s*kubernetes\.core\.\w+:", handle.read(), re.M):
                users.add(os.path.relpath(path, REPO))
    assert users == {"playbooks/tasks/drain.yml"}, users

"""When a list module's action plugin may run the listing in the controller's own process: only
for the very interpreter the controller runs (same file, same directory, so the same venv)."""
import os
import sys

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._listing_action import same_interpreter


def test_the_controllers_own_python_is_the_same_interpreter():
    assert same_interpreter(sys.executable)


def test_another_name_for_it_in_the_same_directory_is_the_same(tmp_path):
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    real = bin_dir / "python3.11"
    real.write_text("")
    (bin_dir / "python").symlink_to("python3.11")
    assert same_interpreter(str(bin_dir / "python"), str(real))


def test_a_link_to_it_from_another_directory_is_another_interpreter(tmp_path):
    # A venv is found from the directory its python starts in: a link elsewhere loses it.
    link = tmp_path / "python"
    link.symlink_to(sys.executable)
    assert os.path.samefile(str(link), sys.executable)
    assert not same_interpreter(str(link))


def test_unknown_relative_or_missing_interpreters_are_not_the_same(tmp_path):
    assert not same_interpreter(None)
    assert not same_interpreter("")
    assert not same_interpreter("python3")
    assert not same_interpreter(os.path.join(os.path.dirname(sys.executable), "no-such-python"))

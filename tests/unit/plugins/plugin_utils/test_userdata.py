import base64
import gzip
import os

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import bootstrap
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import toml_document
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import userdata

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "integration", "fixtures", "bootstrap")


def test_mime_multipart_with_cloud_config_and_shell():
    with open(os.path.join(FIXTURES, "user-data-mime.txt"), "rb") as handle:
        files, notes = userdata.files_written(handle.read())
    assert sorted(files) == ["/etc/containerd/conf.d/99-nvidia.toml", "/etc/containerd/config.toml",
                             "/var/lib/kubelet/config.yaml"]
    dropin = toml_document.loads(files["/etc/containerd/conf.d/99-nvidia.toml"]["content"])
    assert list(dropin["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]) == ["nvidia"]
    assert files["/etc/containerd/conf.d/99-nvidia.toml"]["origin"] == "cloud-config write_files"
    main = toml_document.loads(files["/etc/containerd/config.toml"]["content"])
    assert main["imports"] == ["/etc/containerd/conf.d/*.toml"]
    assert "cgroupDriver: systemd" in files["/var/lib/kubelet/config.yaml"]["content"]
    assert notes == []


def test_cloud_config_encodings_and_append():
    body = 'version = 2\n'
    text = "\n".join([
        "#cloud-config",
        "write_files:",
        "  - path: /etc/a.toml",
        "    encoding: gz+b64",
        "    content: %s" % base64.b64encode(gzip.compress(body.encode())).decode(),
        "  - path: /etc/b.toml",
        "    content: |",
        "      x = 1",
        "  - path: /etc/b.toml",
        "    append: true",
        "    content: |",
        "      y = 2",
        "runcmd:",
        "  - containerd config default > /etc/containerd/config.toml",
    ])
    files, notes = userdata.files_written(text)
    assert files["/etc/a.toml"]["content"] == body
    assert files["/etc/b.toml"]["content"] == "x = 1\ny = 2\n"
    assert notes == ["runcmd not run: containerd config default > /etc/containerd/config.toml"]


@pytest.mark.parametrize("line, path", [
    ("cat > /etc/containerd/config.toml <<'EOF'", "/etc/containerd/config.toml"),
    ("cat <<EOF > /etc/containerd/config.toml", "/etc/containerd/config.toml"),
    ("cat <<-\"EOF\" | tee /etc/containerd/config.toml >/dev/null", "/etc/containerd/config.toml"),
    ("tee /etc/containerd/conf.d/x.toml <<EOF", "/etc/containerd/conf.d/x.toml"),
])
def test_shell_heredoc_forms(line, path):
    script = "#!/bin/sh\n%s\nversion = 2\nEOF\necho done\n" % line
    files, _notes = userdata.files_written(script)
    assert list(files) == [path]
    assert files[path]["content"] == "version = 2\n"


def test_shell_reports_what_it_does_not_run_and_unexpanded_variables():
    script = ("#!/bin/bash\ncontainerd config default > /etc/containerd/config.toml\n"
              "sed -i 's/SystemdCgroup = false/SystemdCgroup = true/' /etc/containerd/config.toml\n"
              "cat >> /etc/containerd/conf.d/x.toml <<EOF\nBinaryName = \"$NVIDIA_BIN\"\nEOF\n")
    files, notes = userdata.files_written(script)
    assert list(files) == ["/etc/containerd/conf.d/x.toml"]
    assert any("containerd config default" in n for n in notes)
    assert any("sed -i" in n for n in notes)
    assert any("shell expansion is not applied" in n for n in notes)


@pytest.mark.parametrize("text, message", [
    ("#!/bin/sh\ncat > /x <<EOF\nnever closed\n", "never closed"),
    ("#cloud-config\nwrite_files: [{content: x}]\n", "has no path"),
    ("#cloud-config\nwrite_files:\n  - path: /x\n    encoding: b64\n    content: '%%%'\n", "cannot decode"),
    ("#cloud-config\nwrite_files:\n  - path: /x\n    encoding: rot13\n    content: x\n", "unknown encoding"),
    ("#cloud-config\n: [\n", "not valid YAML"),
    (b"\xff\xfe", "not UTF-8"),
])
def test_bad_user_data_is_a_clear_error(text, message):
    with pytest.raises(userdata.UserDataError) as excinfo:
        userdata.files_written(text)
    assert message in str(excinfo.value)


def test_sandbox_rebases_absolute_imports_only(tmp_path):
    root = str(tmp_path)
    written = bootstrap.write_sandbox([
        {"path": "/etc/containerd/config.toml",
         "content": 'version = 3\nimports = ["/etc/containerd/conf.d/*.toml", "rel/*.toml"]\n'},
        {"path": "/etc/containerd/conf.d/99-nvidia.toml", "content": "version = 3\n"},
        {"path": "/var/lib/kubelet/config.yaml", "content": "cgroupDriver: systemd\n"},
    ], root)
    assert [w["imports_rebased"] for w in written] == [True, False, False]
    with open(os.path.join(root, "etc/containerd/config.toml")) as handle:
        doc = toml_document.loads(handle.read())
    assert doc["imports"] == [os.path.join(root, "etc/containerd/conf.d/*.toml"), "rel/*.toml"]
    assert doc["version"] == 3
    with pytest.raises(bootstrap.SandboxError):
        bootstrap.sandbox_path(root, "relative/path")
    # ../ cannot climb out of the sandbox
    assert bootstrap.sandbox_path(root, "/../../etc/passwd") == os.path.join(root, "etc/passwd")

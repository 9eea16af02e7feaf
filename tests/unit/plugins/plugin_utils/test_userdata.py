import base64
import gzip
import os

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _bootstrap as bootstrap
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _userdata as userdata

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "integration", "fixtures", "bootstrap")


def test_mime_multipart_with_cloud_config_and_shell():
    with open(os.path.join(FIXTURES, "user-data-mime.txt"), "rb") as handle:
        found = userdata.read(handle.read())
    files = found.files
    assert sorted(files) == ["/etc/containerd/conf.d/99-nvidia.toml", "/etc/containerd/config.toml",
                             "/var/lib/kubelet/config.yaml"]
    dropin = toml_codec.loads(files["/etc/containerd/conf.d/99-nvidia.toml"]["content"])
    assert list(dropin["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]) == ["nvidia"]
    assert files["/etc/containerd/conf.d/99-nvidia.toml"]["origin"] == "cloud-config write_files"
    main = toml_codec.loads(files["/etc/containerd/config.toml"]["content"])
    assert main["imports"] == ["/etc/containerd/conf.d/*.toml"]
    assert "cgroupDriver: systemd" in files["/var/lib/kubelet/config.yaml"]["content"]
    # mkdir -p /etc/containerd/conf.d and systemctl restart containerd change no file's content
    assert found.unevaluated == []


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
    found = userdata.read(text)
    assert found.files["/etc/a.toml"]["content"] == body
    assert found.files["/etc/b.toml"]["content"] == "x = 1\ny = 2\n"
    assert found.unevaluated == ["runcmd entry not run: containerd config default > /etc/containerd/config.toml "
                                 "(containerd config default/migrate)"]


@pytest.mark.parametrize("line, path", [
    ("cat > /etc/containerd/config.toml <<'EOF'", "/etc/containerd/config.toml"),
    ("cat <<EOF > /etc/containerd/config.toml", "/etc/containerd/config.toml"),
    ("cat <<-\"EOF\" | tee /etc/containerd/config.toml >/dev/null", "/etc/containerd/config.toml"),
    ("tee /etc/containerd/conf.d/x.toml <<EOF", "/etc/containerd/conf.d/x.toml"),
])
def test_shell_heredoc_forms(line, path):
    script = "#!/bin/sh\n%s\nversion = 2\nEOF\necho done\n" % line
    found = userdata.read(script)
    assert list(found.files) == [path]
    assert found.files[path]["content"] == "version = 2\n"
    assert found.unevaluated == []


def test_shell_reports_what_it_does_not_run_and_unexpanded_variables_in_order():
    script = ("#!/bin/bash\ncontainerd config default > /etc/containerd/config.toml\n"
              "sed -i 's/SystemdCgroup = false/SystemdCgroup = true/' /etc/containerd/config.toml\n"
              "cat >> /etc/containerd/conf.d/x.toml <<EOF\nBinaryName = \"$NVIDIA_BIN\"\nEOF\n")
    found = userdata.read(script)
    assert list(found.files) == ["/etc/containerd/conf.d/x.toml"]
    assert [reason.split(":")[0] for reason in found.unevaluated] == [
        "command not run", "command not run", "/etc/containerd/conf.d/x.toml"]
    assert "containerd config default" in found.unevaluated[0] and "sed -i" in found.unevaluated[1]
    assert "shell expansions" in found.unevaluated[2]


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
        userdata.read(text)
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
        doc = toml_codec.loads(handle.read())
    assert doc["imports"] == [os.path.join(root, "etc/containerd/conf.d/*.toml"), "rel/*.toml"]
    assert doc["version"] == 3
    with pytest.raises(bootstrap.SandboxError):
        bootstrap.sandbox_path(root, "relative/path")
    # ../ cannot climb out of the sandbox
    assert bootstrap.sandbox_path(root, "/../../etc/passwd") == os.path.join(root, "etc/passwd")


# --- what cannot be evaluated (NOT VALIDATED) and what can -------------------------------------

@pytest.mark.parametrize("line", [
    "nvidia-ctk runtime configure --runtime=containerd",
    "/usr/bin/nvidia-ctk runtime configure --runtime=containerd --config=/etc/containerd/conf.d/99-nvidia.toml",
    "containerd config default | tee /etc/containerd/config.toml",
    "containerd config migrate > /etc/containerd/config.toml.new",
    "/etc/eks/bootstrap.sh gpu-cluster --container-runtime containerd",
    "nodeadm init --config-source imds://user-data",
    "echo '[plugins]' >> /etc/containerd/config.toml",
    "printf 'x' > /etc/containerd/conf.d/10-x.toml",
    "echo x | sudo tee -a /etc/containerd/config.toml",
    "cp /tmp/config.toml /etc/containerd/config.toml",
    "install -m 0644 /opt/gpu/99-nvidia.toml /etc/containerd/conf.d/",
    "mv /etc/containerd/config.toml /etc/containerd/config.toml.orig",
    "rm -f /etc/containerd/config.toml",
    "touch /etc/containerd/config.toml",
    "sed -i 's/cgroupfs/systemd/' /var/lib/kubelet/config.yaml",
    "curl -fsSL -o /etc/containerd/config.toml http://10.0.0.1/config.toml",
    "apt-get install -y containerd.io",
    "dnf install -y containerd",
    "FOO=1 sudo crudini --set /etc/containerd/config.toml x y z",
    "if [ ! -f /etc/containerd/config.toml ]; then containerd config default > /etc/containerd/config.toml; fi",
    "for f in /etc/containerd/conf.d/*.toml; do sed -i s/runc/nvidia/ $f; done",
])
def test_commands_that_change_the_watched_files_are_not_evaluated(line):
    found = userdata.read("#!/bin/sh\nset -e\n%s\n" % line)
    assert len(found.unevaluated) == 1, found.unevaluated
    assert line in found.unevaluated[0]


@pytest.mark.parametrize("line", [
    "mkdir -p /etc/containerd/conf.d",
    "chmod 0644 /etc/containerd/config.toml",
    "systemctl restart containerd",
    "systemctl enable --now containerd kubelet",
    "sed -i 's/a/b/' /etc/sysctl.d/99-k8s.conf",
    "cp /etc/containerd/config.toml /root/config.toml.bak",
    "echo started > /var/log/boot-gpu.log",
    "containerd --version 2>/dev/null",
    "apt-get install -y nvidia-driver-550",
    "grep -q nvidia /etc/containerd/config.toml && echo ok",
    "if [ -f /etc/containerd/config.toml ]; then echo present; fi",
    "if grep -q nvidia /etc/containerd/config.toml; then systemctl restart containerd; fi",
])
def test_commands_that_leave_the_watched_files_alone(line):
    found = userdata.read("#!/bin/sh\n%s\n" % line)
    assert found.unevaluated == []


def test_heredoc_to_a_program_or_through_a_filter_is_not_evaluated():
    script = ("#!/bin/sh\npython3 - <<'EOF'\nopen('/etc/containerd/config.toml', 'w').write('x')\nEOF\n"
              "cat <<'EOF' | sed 's/runc/nvidia/' > /etc/containerd/conf.d/x.toml\nversion = 3\nEOF\n"
              "kubectl apply -f - <<'EOF'\nkind: ConfigMap\nEOF\n")
    found = userdata.read(script)
    assert found.files == {}
    assert found.unevaluated == [
        "command not run: python3 - <<heredoc, whose text names /etc/containerd",
        "command not run: cat | sed 's/runc/nvidia/' > /etc/containerd/conf.d/x.toml <<heredoc, piped through sed "
        "before it is written",
    ]


def test_heredoc_to_a_path_with_variables():
    script = '#!/bin/sh\nCONF=/etc/containerd\ncat > "$CONF/config.toml" <<\'EOF\'\nversion = 3\nEOF\n' \
             'cat > "$LOG_DIR/boot.log" <<EOF\nstarted\nEOF\n'
    found = userdata.read(script)
    assert found.unevaluated == ['heredoc written to "$CONF/config.toml": the path has shell expansions, '
                                 'not applied here']


def test_quoted_heredoc_and_escaped_dollar_are_evaluated():
    script = ("#!/bin/sh\ncat > /etc/containerd/conf.d/a.toml <<'EOF'\nx = \"$KEEP\"\nEOF\n"
              "cat > /etc/containerd/conf.d/b.toml <<EOF\ny = \"\\$KEEP\"\nEOF\n")
    found = userdata.read(script)
    assert found.unevaluated == []
    assert found.files["/etc/containerd/conf.d/a.toml"]["content"] == 'x = "$KEEP"\n'


@pytest.mark.parametrize("text, reason", [
    ("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: c\n", "EKS nodeadm NodeConfig"),
    ("## template: jinja\n#cloud-config\nwrite_files: []\n", "Jinja template"),
    ("#include\nhttps://10.0.0.1/user-data\n", "neither #cloud-config nor a shell script"),
    ("[settings.kubernetes]\napi-server = \"https://k8s\"\n", "neither #cloud-config nor a shell script"),
    ("#cloud-config\npackages: [containerd.io]\n", "installs the package containerd.io"),
    ("#cloud-config\nwrite_files:\n  - path: /etc/containerd/config.toml\n    source: {uri: 'https://10.0.0.1/c'}\n",
     "source URI"),
    ("#cloud-config\nbootcmd:\n  - [sh, -c, 'containerd config default > /etc/containerd/config.toml']\n",
     "bootcmd entry not run"),
])
def test_parts_it_cannot_evaluate(text, reason):
    found = userdata.read(text)
    assert len(found.unevaluated) == 1 and reason in found.unevaluated[0], found.unevaluated


def test_mime_node_config_part_by_content_type_and_gzip_user_data():
    mime = ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\n"
            "Content-Type: application/node.eks.aws\n\n---\nkind: NodeConfig\n--B--\n")
    assert "EKS nodeadm NodeConfig" in userdata.read(mime).unevaluated[0]
    script = b"#!/bin/sh\ncat > /etc/containerd/config.toml <<'EOF'\nversion = 3\nEOF\n"
    found = userdata.read(gzip.compress(script))
    assert list(found.files) == ["/etc/containerd/config.toml"] and found.unevaluated == []


def test_watched_paths_follow_the_node_layout():
    script = "#!/bin/sh\nsed -i s/a/b/ /etc/kubernetes/kubelet/config.json\nsed -i s/a/b/ /var/lib/kubelet/config.yaml\n"
    found = userdata.read(script, watched=("/etc/containerd/", "/etc/kubernetes/kubelet/config.json"))
    assert len(found.unevaluated) == 1 and "/etc/kubernetes/kubelet/config.json" in found.unevaluated[0]


def test_user_data_size_is_bounded():
    with pytest.raises(userdata.UserDataError) as excinfo:
        userdata.read(gzip.compress(b"#" * (userdata.MAX_BYTES + 10)))
    assert "once decompressed" in str(excinfo.value)

"""A small shell script standing in for containerd in unit tests, logging every call."""

V21 = "containerd github.com/containerd/containerd/v2 v2.1.9 8b3b7ca2e5ce38e8f31a34f35b2b68ceb8470d89"
V16 = "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1"


class FakeContainerd(object):
    """A containerd stand-in: `--version` prints `version`, `config dump` prints `dump` (and `stderr` on
    stderr) and exits `dump_rc`, `config default` prints `default`; every call is logged."""

    def __init__(self, tmp_path, version=V21, version_rc=0, dump="version = 3\n", dump_rc=0, stderr="",
                 default="version = 3\n# default\n", dump_prefix=""):
        self.dir = tmp_path / "fake-containerd"
        self.dir.mkdir(exist_ok=True)
        self.log = self.dir / "calls.log"
        for name, text in (("version", version), ("dump", dump), ("stderr", stderr), ("default", default)):
            (self.dir / name).write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        self.path = self.dir / "containerd"
        self.path.write_text(
            "#!/bin/sh\n"
            'echo "$*" >> "{d}/calls.log"\n'
            'if [ "$1" = --version ]; then cat "{d}/version"; echo; exit {vrc}; fi\n'
            'if [ "$1" = config ] && [ "$2" = default ]; then cat "{d}/default"; exit 0; fi\n'
            "{prefix}\n"
            'cat "{d}/stderr" >&2\ncat "{d}/dump"\nexit {drc}\n'.format(d=self.dir, vrc=version_rc, drc=dump_rc,
                                                                        prefix=dump_prefix))
        self.path.chmod(0o755)

    def calls(self):
        return self.log.read_text().splitlines() if self.log.exists() else []

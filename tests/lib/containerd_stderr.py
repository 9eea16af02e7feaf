"""What containerd prints on stderr, as the real binaries printed it, for the unit tests that read it: the
strict-mode line of a key a plugin ignores (2.x), and the goroutine dump of a dump that ran out of memory."""

STRICT = (
    'level=warning msg="Ignoring unknown key in TOML for plugin" error="strict mode: fields in the document are '
    'missing in the target struct" key=%s plugin=%s'
)


def ignored(key, plugin):
    return STRICT % ('"%s"' % key if " " in key else key, plugin)


# imports = ["/dev/zero"] (measured on 1.6, 1.7, 2.1, 2.3.4): a warning, the cause, then the goroutine dump.
GOROUTINE_DUMP = (
    'time="2026-01-01T00:00:00Z" level=warning msg="Configuration migrated from version 2, use `containerd config '
    'migrate` to avoid migration" t="5.7us"\n'
    "runtime: out of memory: cannot allocate 251658240-byte block (528220160 in use)\n"
    "fatal error: out of memory\n\n"
    "goroutine 1 gp=0x3567a66101e0 m=0 mp=0x28 [running]:\n"
    "runtime.throw({0x25cfc2f?, 0x3abf?})\n" + "\truntime/panic.go:1229 +0x48 fp=0x1 sp=0x2 pc=0x3\n" * 400)

"""Strict xfails pinned to the failure they expect: the test raises KnownFailure only when its outcome is
exactly the known wrong one, so any other failure fails the test, and the right outcome passes it (a strict
XPASS: remove the mark then)."""
import pytest


class KnownFailure(Exception):
    """The known wrong outcome of a test marked with xfail() below."""


def xfail(reason):
    return pytest.mark.xfail(strict=True, raises=KnownFailure, reason=reason)


def unless_known(got, known, reason):
    """Raise KnownFailure when got is the known wrong outcome; return otherwise (the test then asserts the
    right one)."""
    if got == known:
        raise KnownFailure("%s (got the known wrong outcome %r)" % (reason, got))

"""The outputs of `containerd config dump` the unit tests read, as real binaries printed them
(tests/unit/fixtures/dumps)."""
import os

DUMPS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "unit", "fixtures", "dumps")


def dump_text(name):
    with open(os.path.join(DUMPS, name)) as handle:
        return handle.read()

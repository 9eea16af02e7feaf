from fractions import Fraction

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _quantity as quantity


@pytest.mark.parametrize("text, value", [
    ("1", Fraction(1)),
    ("0", Fraction(0)),
    ("250m", Fraction(1, 4)),
    ("900m", Fraction(9, 10)),
    ("1500m", Fraction(3, 2)),
    ("0.5", Fraction(1, 2)),
    (".5", Fraction(1, 2)),
    ("1.", Fraction(1)),
    ("100u", Fraction(1, 10000)),
    ("5n", Fraction(5, 10 ** 9)),
    ("1k", Fraction(1000)),
    ("2M", Fraction(2 * 10 ** 6)),
    ("1G", Fraction(10 ** 9)),
    ("1T", Fraction(10 ** 12)),
    ("1P", Fraction(10 ** 15)),
    ("1E", Fraction(10 ** 18)),
    ("1Ki", Fraction(1024)),
    ("64Mi", Fraction(64 * 2 ** 20)),
    ("1.5Gi", Fraction(3 * 2 ** 29)),
    ("2Ti", Fraction(2 * 2 ** 40)),
    ("1Pi", Fraction(2 ** 50)),
    ("1Ei", Fraction(2 ** 60)),
    ("1e3", Fraction(1000)),
    ("1E3", Fraction(1000)),
    ("12e-3", Fraction(12, 1000)),
    ("+2", Fraction(2)),
    ("-1", Fraction(-1)),
    (" 250m ", Fraction(1, 4)),
])
def test_parse(text, value):
    assert quantity.parse(text) == value


@pytest.mark.parametrize("number, value", [(1, Fraction(1)), (0, Fraction(0)), (0.25, Fraction(1, 4)),
                                           (1.5, Fraction(3, 2)), (0.1, Fraction(1, 10))])
def test_parse_numbers(number, value):
    # YAML gives ints and floats for unquoted quantities
    assert quantity.parse(number) == value


@pytest.mark.parametrize("bad", ["", " ", "abc", "1K", "1mi", "1Mi5", "1.2.3", "m", "Mi", "1 Mi", "1e", "1e3Mi",
                                 "--1", "0x10", "1,5", True, False, None, [], "∞"])
def test_not_a_quantity(bad):
    with pytest.raises(ValueError) as info:
        quantity.parse(bad)
    assert repr(bad) in str(info.value)


def test_infinite_float_is_a_value_error():
    with pytest.raises(ValueError):
        quantity.parse(float("inf"))


def test_nan_is_a_value_error():
    with pytest.raises(ValueError):
        quantity.parse(float("nan"))


@pytest.mark.parametrize("resource, amount, shown", [
    ("cpu", Fraction(9, 10), "900m"),
    ("cpu", Fraction(1), "1000m"),
    ("cpu", Fraction(0), "0m"),
    ("cpu", Fraction(1, 4), "250m"),
    ("cpu", Fraction(1, 2000), "0.5m"),
    ("memory", Fraction(2 ** 30), "1073741824"),
    ("memory", Fraction(3, 2), "1.5"),
    ("nvidia.com/gpu", Fraction(1), "1"),
])
def test_show(resource, amount, shown):
    assert quantity.show(resource, amount) == shown


def test_binary_and_decimal_suffixes_differ():
    assert quantity.parse("1Mi") - quantity.parse("1M") == 48576
    assert quantity.parse("1Gi") > quantity.parse("1G")


def test_arithmetic_is_exact():
    # 0.1 + 0.2 style errors would make 900m + 100m != 1
    assert quantity.parse("900m") + quantity.parse("100m") == quantity.parse("1")
    assert sum(quantity.parse("100m") for _unused in range(10)) == 1

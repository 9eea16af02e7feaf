# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes resource quantities ("250m", "1", "64Mi", "1e3") as exact fractions."""

import math
import re
from fractions import Fraction

_SUFFIXES = {
    "": Fraction(1), "m": Fraction(1, 1000), "u": Fraction(1, 10 ** 6), "n": Fraction(1, 10 ** 9),
    "k": Fraction(10 ** 3), "M": Fraction(10 ** 6), "G": Fraction(10 ** 9), "T": Fraction(10 ** 12),
    "P": Fraction(10 ** 15), "E": Fraction(10 ** 18),
    "Ki": Fraction(2 ** 10), "Mi": Fraction(2 ** 20), "Gi": Fraction(2 ** 30), "Ti": Fraction(2 ** 40),
    "Pi": Fraction(2 ** 50), "Ei": Fraction(2 ** 60),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$")


# Kubernetes keeps quantities in int64 milli-units; far beyond that is a typo, not a size.
_MAX_TEXT = 64
_MAX_EXPONENT = 30


def parse(value):
    """A quantity as a Fraction; ValueError naming the value when it is not one."""
    if isinstance(value, bool):
        raise ValueError("not a quantity: %r" % (value,))
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        raise ValueError("not a finite quantity: %r" % (value,))
    if isinstance(value, (int, float)):
        if abs(value) >= 10 ** _MAX_EXPONENT:
            raise ValueError("quantity out of range: %r" % (value,))
        return Fraction(value).limit_denominator(10 ** 9)
    text = str(value).strip()
    match = _QUANTITY.match(text) if len(text) <= _MAX_TEXT else None
    if not match:
        raise ValueError("not a Kubernetes quantity: %r" % (value,))
    number = Fraction(match.group(1))
    if match.group(2) is not None:
        exponent = int(match.group(2))
        if abs(exponent) > _MAX_EXPONENT:
            raise ValueError("quantity out of range: %r" % (value,))
        return number * Fraction(10) ** exponent
    return number * _SUFFIXES[match.group(3) or ""]


def show(resource, amount):
    """Millicores for cpu (as the scheduler reasons), bytes otherwise."""
    if resource == "cpu":
        milli = amount * 1000
        return "%sm" % (int(milli) if milli.denominator == 1 else float(milli))
    return str(int(amount)) if amount.denominator == 1 else str(float(amount))

"""The one rule for printing a bare number that may be missing (perflab.values): every stage's
`na`, its infinities and its integers, the same from capacity/, study/, accuracy/ and report/."""

from __future__ import annotations

import math

import numpy as np

from perflab.report import numbers as fmt
from perflab.values import NA, fixed, formatted


def test_formatted_prints_na_for_what_is_not_a_number():
    for missing in (None, math.nan, "x", True):
        assert formatted(missing, ".2f") == NA
        assert formatted(missing, ".2f", suffix="%") == NA
    assert formatted(math.inf) == "inf" and formatted(-math.inf) == "-inf"


def test_formatted_keeps_integers_and_scales_fractions():
    assert formatted(12345, "d") == "12345" and formatted(np.int64(7), ",d") == "7"
    assert formatted(0.0123, "+.1f", scale=100.0, suffix="%") == "+1.2%"
    assert formatted(1234.5, ",.1f", suffix="/s") == "1,234.5/s"


def test_report_numbers_print_through_the_same_rule():
    assert fmt.fixed is fixed and fmt.NA == NA
    assert fixed(0.00042, 3) == "0.0004" and fixed(-0.0001, 2) == "-0.0001"
    assert fixed(19287, -1) == "19,290" and fixed(None, 2) == NA

"""ITRR composition: the seeds' multiplication rule, and uncertainty that adds in logs.

data/21-… and data/22-… are verbatim copies of /work/shared/spec/seed-tables (the VM/ESA 1.1
report's Table 3 measurement pairs and Table 2 release matrix).
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import numpy as np
import pytest

from perflab.capacity import ITRR, compose, transition
from perflab.errors import InputError
from perflab.stats import compare

DATA = Path(__file__).parent / "data"


def test_the_seeds_worked_examples():
    # VM/XA 2.1 → VM/ESA 1.1 = R21 × R1E = 1.04 × 1.04 = 1.08 (L773)
    sw = compose(ITRR(1.04, label="R21"), ITRR(1.04, label="R1E"))
    assert round(sw.ratio, 2) == 1.08 and sw.label == "R21·R1E"
    # new processor 1.30 × software 1.08 = 1.40 (L767)
    assert round((ITRR(1.30) * ITRR(1.08)).ratio, 2) == 1.40
    # Unrounded, 1.30 × 1.0816 = 1.406: the seeds rounded the software ratio to 1.08 first.
    assert (1.30 * sw).ratio == pytest.approx(1.40608)


def test_log_variances_add():
    a, b, c = ITRR(1.02, 0.010, 5), ITRR(1.04, 0.020, 9), ITRR(0.91, 0.005)
    total = compose(a, b, c)
    assert total.ratio == pytest.approx(1.02 * 1.04 * 0.91)
    assert total.se**2 == pytest.approx(0.010**2 + 0.020**2 + 0.005**2)
    assert math.log(total.ratio) == pytest.approx(sum(math.log(f.ratio) for f in (a, b, c)))
    # Welch–Satterthwaite: fewer df than the sum, more than the smallest
    assert 5 < total.df < 5 + 9 + 1e9
    lo, hi = total.ci(0.90)
    assert math.log(hi / total.ratio) == pytest.approx(math.log(total.ratio / lo))


def test_simulated_products_have_the_summed_log_variance():
    rng = np.random.default_rng(31)
    ses = [0.01, 0.02, 0.015]
    draws = np.prod([r * np.exp(rng.normal(0, s, 200_000)) for r, s in zip((1.02, 1.04, 0.95), ses)],
                    axis=0)
    composed = compose(*(ITRR(r, s) for r, s in zip((1.02, 1.04, 0.95), ses)))
    assert np.log(draws).std() == pytest.approx(composed.se, rel=0.01)
    assert np.exp(np.log(draws).mean()) == pytest.approx(composed.ratio, rel=1e-3)


def test_composed_interval_of_two_measured_comparisons_covers():
    """Release ITRR × processor ITRR, each from 6 paired blocks at CV 1 %: the composed 90 %
    interval covers the true product about 90 % of the time."""
    rng = np.random.default_rng(32)
    trials, hits = 400, 0
    for _ in range(trials):
        parts = []
        for true in (1.04, 1.30):
            a = 50 * np.exp(rng.normal(0, 0.01, 6))
            b = 50 * true * np.exp(rng.normal(0, 0.01, 6))
            parts.append(ITRR.from_comparison(compare(a.tolist(), b.tolist())))
        lo, hi = compose(*parts).ci(0.90)
        hits += lo <= 1.04 * 1.30 <= hi
    assert 0.86 <= hits / trials <= 0.94


def _symbols() -> dict[str, float]:
    """Per-transition ITRRs from Table 3 (file 21); R13A, not tabulated there (4381 data), is the
    value printed in Table 2 for VM/ESA 1.0 (370) → (ESA) on the 4381."""
    out = {}
    with open(DATA / "21-t03-itrr-measurement-pairs.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["symbol"]:
                out[row["symbol"].rstrip("?")] = float(row["itr_ratio"].rstrip("?"))
    with open(DATA / "22-t02-itrr-release-matrix.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["derivation"] == "R13A":
                out["R13A"] = float(row["itrr_printed"])
    return out


def _matrix_rows():
    with open(DATA / "22-t02-itrr-release-matrix.csv", newline="") as f:
        return [r for r in csv.DictReader(f) if re.fullmatch(r"R\w+\??(\*R\w+\??)*", r["derivation"])]


def test_release_matrix_is_derivable_from_the_transition_symbols():
    symbols = _symbols()
    rows = _matrix_rows()
    assert len(rows) >= 18
    for row in rows:
        names = [s.rstrip("?") for s in row["derivation"].split("*")]
        itrr = compose(*(ITRR(symbols[n], label=n) for n in names))
        expected = [float(x) for x in re.findall(r"\d\.\d+", row["itrr_recomputed_from_symbols"])[:2]]
        assert expected[0] - 0.005 <= round(itrr.ratio, 3) <= expected[-1] + 0.005, row
        if re.fullmatch(r"\d\.\d+", row["itrr_printed"]):  # printed values (not OCR-damaged)
            assert abs(itrr.ratio - float(row["itrr_printed"])) <= 0.01 + 1e-9, row
    # The headline case: VM/XA 2.0 → VM/ESA 1.1 = R20·R21·R1E = 1.10
    assert round(compose(ITRR(1.02), ITRR(1.04), ITRR(1.04)).ratio, 2) == 1.10


def test_transition_symbols_from_measurement_pairs():
    # R1E = avg(pairs 9–12), R21 = avg(pairs 6, 7) (vmesa-methodology.md §4.5)
    r1e = transition([1.059, 1.032, 1.045, 1.043], label="R1E")
    assert r1e.ratio == pytest.approx(1.0448, abs=2e-4) and round(r1e.ratio, 2) == 1.04
    assert r1e.df == 3 and r1e.se > 0
    r21 = transition([1.064, 1.029])
    assert r21.ratio == pytest.approx(1.0465, abs=5e-4)
    lo, hi = r1e.ci(0.90)
    assert lo < 1.032 < 1.059 < hi * 1.02  # the processors' spread shows up in the interval


def test_invalid_ratios_are_input_errors():
    with pytest.raises(InputError):
        ITRR(0.0)
    with pytest.raises(InputError):
        compose()
    with pytest.raises(InputError):
        transition([])

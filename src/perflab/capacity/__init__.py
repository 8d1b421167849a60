"""Capacity planning: compose ITR ratios, model closed systems, fit scalability curves.

* `compose`  -- ITRR composition (products of ratios, sums of log-variances), the seeds' rule
* `laws`     -- operational laws: response time law, asymptotic bounds, users supported
* `mva`      -- exact MVA and Bard–Schweitzer for a closed single-class network with think time
* `usl`      -- Universal Scalability Law fit (scipy curve_fit), peak and extrapolation warnings

statistics-and-capacity.md §3 is the specification; vmesa-methodology.md §1.8 the seeds' rule.
"""

# Imported eagerly, unlike perflab.stats: three names here are both a module and the function
# it exports (compose, mva, usl), and a lazy package attribute would turn into the module the
# moment anything imports the module. None of these modules loads scipy at import (usl.py
# imports it inside the fit), so `perflab --help` stays fast.
from perflab.capacity.compose import ITRR, compose, transition
from perflab.capacity.laws import Bounds, Supported, asymptotic_bounds, response_time, users_supported
from perflab.capacity.mva import MVAPoint, MVAResult, mva, schweitzer
from perflab.capacity.usl import USLFit, fit_usl, usl

__all__ = [
    "ITRR",
    "Bounds",
    "MVAPoint",
    "MVAResult",
    "Supported",
    "USLFit",
    "asymptotic_bounds",
    "compose",
    "fit_usl",
    "mva",
    "response_time",
    "schweitzer",
    "transition",
    "users_supported",
    "usl",
]

"""Capacity planning: compose ITR ratios, model closed systems, fit scalability curves.

* `compose`  -- ITRR composition (products of ratios, sums of log-variances), the seeds' rule
* `laws`     -- operational laws: response time law, asymptotic bounds, users supported
* `mva`      -- exact MVA and Bard–Schweitzer for a closed single-class network with think time
* `usl`      -- Universal Scalability Law fit (scipy curve_fit), peak and extrapolation warnings

statistics-and-capacity.md §3 is the specification; vmesa-methodology.md §1.8 the seeds' rule.
"""

import importlib
from typing import Any

# Imported on first use (PEP 562): the command line registers `perflab capacity` from
# perflab/cli/capacity.py, and a plain `perflab --help` should not load scipy to do it.
_HOME = {
    "ITRR": "compose", "compose": "compose", "transition": "compose",
    "Bounds": "laws", "Supported": "laws", "asymptotic_bounds": "laws", "response_time": "laws",
    "users_supported": "laws",
    "MVAPoint": "mva", "MVAResult": "mva", "mva": "mva", "schweitzer": "mva",
    "USLFit": "usl", "fit_usl": "usl", "usl": "usl",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'perflab.capacity' has no attribute {name!r}")
    return getattr(importlib.import_module(f"perflab.capacity.{_HOME[name]}"), name)


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

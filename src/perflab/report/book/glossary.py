"""The book's glossary: the words of a study report, and the rows the book's studies compare.

The words are the ones docs/architecture.md's glossary defines for the docs, said once more here
because a book is read without the repository beside it; the rows come from the metric registry
(label, unit, description), so a book defines exactly the rows it prints.
"""

from __future__ import annotations

from perflab.report import numbers as fmt

TERMS: tuple[tuple[str, str], ...] = (
    ("(T), (H), (S), (V), (I)", "who measured a row: the driver (the seeds' terminal simulator); the whole machine; "
     "the system under test only (its cgroup or process tree); one named component of the SUT; CPU counters or "
     "valgrind instruction counts. A row without a suffix is the SUT's own counter."),
    ("CMD", "a command: one transaction as the driver counts it; every /CMD row divides by ETR (T) over the "
            "measurement window."),
    ("Run", "one measurement: the SUT started fresh, driven through a stabilization period and a measurement "
            "window, and stored with every transaction and monitor sample."),
    ("Configuration, base", "what a study compares; the first is the base, and every ratio is new ÷ base."),
    ("Calibration", "short runs of the base that find the load at its target utilization (90%, the seeds' rule)."),
    ("Block", "one repetition of a study: every configuration once, in a seeded random order; ratios are paired "
              "within a block, so the host's slow drift cancels."),
    ("Duet", "a block whose two runs run at the same time on the same CPUs, each at half the load, so a slow "
             "spell of the host slows both and cancels from their ratio; its measured bias widens the verdict's "
             "interval."),
    ("A/A", "a study of the base against itself: every change it claims is false; it measures the noise and the "
            "blocks a margin needs."),
    ("Margin", "the equivalence margin (default ±3%, the seeds' \"equivalent\"): ratios within it are no change "
               "that matters."),
    ("Confidence interval", "the range of ratios the blocks support at the stated level; the interval printed "
                            "beside a verdict is the one that decided it."),
    ("EQUIVALENT", "the interval lies inside the margin."),
    ("BETTER, WORSE", "the interval excludes 1 on the metric's good or bad side: a claim of a change, held with "
                      "the report's other claims to a 5% error rate; \"material\": the whole interval is beyond "
                      "the margin."),
    ("INCONCLUSIVE", "neither: more blocks are needed, and the report says how many."),
    ("untested, descriptive", "a secondary row whose family the primary claims did not open (no claim); a row "
                              "a pair of runs cannot attribute to one configuration (no verdict)."),
    ("Primary metric", "the metric whose verdict answers the study (default ITR (S)); the other rows are "
                       "secondary."),
    ("Suite, Average", "one change measured under several workloads, a study each; the Average row is the "
                       "geometric mean of their ratios, with an interval that holds whenever every workload's "
                       "does (the LSPR's table)."),
    ("Gates, excluded", "the one validity rule a run must pass to count (completed, driver not saturated, "
                        "errors, steady, utilization in band); an excluded run is shown with its reasons."),
)


def metric_terms(keys: list[str]) -> list[tuple[str, str]]:
    """The rows a book's studies compare: label (unit) and the registry's description."""
    out = []
    for key in keys:
        metric = fmt.metric_of(key)
        if metric is None:
            continue
        unit = f" ({metric.unit})" if metric.unit else ""
        out.append((f"{metric.label}{unit}", metric.description))
    return sorted(dict(out).items(), key=lambda kv: kv[0].lower())


def glossary(keys: list[str]) -> list[tuple[str, str]]:
    return list(TERMS) + metric_terms(keys)

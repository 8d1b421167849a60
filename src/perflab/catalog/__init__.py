"""The metric catalog: every metric's key, label, unit, source, group, formula and role -- the one
place formulas live (../shared/spec/metrics.md is its contract). A foundation, not a stage: the
workload and study files name metric keys, reduction evaluates the formulas, reports print the
labels, so every stage reads it and it reads none of them."""

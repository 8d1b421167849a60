"""Each raw metric's sample columns are its registry entry's (catalog.metric.Sampled): the
reduction reads them from there, and the entry's prose names every one of them."""

from __future__ import annotations

from perflab.catalog.registry import REGISTRY


def test_every_sampled_column_is_named_in_its_metric_s_prose():
    missing = [(m.key, column) for m in REGISTRY.sampled() for group in m.sampled.columns for column in group
               if column.rsplit(".", 1)[-1] not in m.measurement]
    assert not missing, missing


def test_the_driver_s_own_counts_are_its_sampled_counters():
    counts = {m.key: m.sampled.driver_count for m in REGISTRY.sampled() if m.sampled.driver_count}
    assert counts == {"connects_t": "connects", "handshakes_t": "tls_handshakes", "resumed_t": "tls_resumed",
                      "commits_t": "commits", "commit_sec_t": "commit_us"}
    assert REGISTRY["commit_sec_t"].sampled.factor == 1e-6


def test_a_gauge_has_one_column_and_a_count_is_not_a_gauge():
    for metric in REGISTRY.sampled():
        spec = metric.sampled
        assert spec.columns and all(spec.columns), metric.key
        if spec.gauge:
            assert spec.columns == ((spec.columns[0][0],),) and not spec.whole and not spec.driver, metric.key

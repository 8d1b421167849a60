"""`arrangement: auto` and the measured bias an arrangement's reports state (perflab.study.arrangement)."""

from __future__ import annotations

from pathlib import Path

from perflab.records.bias import BiasFitRecord, HostBound, HostIdentity
from perflab.store.bias import write_bounds
from perflab.study.arrangement import PREFERENCE, choose, measured_bias, traits
from perflab.sut.fingerprint import machine_fingerprint


def test_auto_prefers_the_duet_when_its_drivers_keep_up():
    # the order docs/accuracy.md measured: the duet's intervals hold the truth within a point
    # on SQLite and the synthetic SUT; the split duet's are ten times wider
    assert PREFERENCE[0] == "duet"
    arrangement, why = choose(True, driver_util=30.0, sut_util=90.0, driver_cpus=1)
    assert arrangement == "duet" and "duet" in why


def test_auto_falls_back_when_the_drivers_cannot_keep_up():
    # a driver at 80% of a core cannot run beside its twin on one core; beside a SUT at 90% of the
    # other CPU, a split duet fits at 90 / 170 = 53% of the load; at 95% not even half fits
    arrangement, why = choose(True, driver_util=80.0, sut_util=90.0, driver_cpus=1)
    assert arrangement == "split-duet" and "53%" in why
    arrangement, _ = choose(True, driver_util=95.0, sut_util=90.0, driver_cpus=1)
    assert arrangement == "one-at-a-time"
    arrangement, why = choose(False, driver_util=10.0, sut_util=90.0, driver_cpus=1)
    assert arrangement == "one-at-a-time" and "cannot run its blocks as pairs" in why


def _bound(arrangement: str, target: str, k_low=-0.1, k_high=0.2, a=0.003) -> HostBound:
    return HostBound(arrangement=arrangement, target=target, k_low=k_low, k_high=k_high, a_low=-a, a_high=a,
                     k_mid=(k_low + k_high) / 2, a_mid=0.0, level=0.95,
                     fit=BiasFitRecord(k=0.05, k_se=0.02, tau_k=0.05, a=0.0, a_se=0.001, tau_a=0.001, studies=6),
                     study_ids=["s1"], days=["2026-12-06", "2026-12-07"], host_states=[0.39, 0.41], cases=[target])


def test_a_host_s_bound_is_applied_on_that_host_only_and_for_its_own_kind(tmp_path):
    here = machine_fingerprint()
    write_bounds(tmp_path, HostIdentity.of(here), [_bound("duet", "sqlite"), _bound("split-duet", "sqlite", -0.3)])
    bias = measured_bias("duet", "sqlite", tmp_path, here)
    assert bias is not None and bias.route == "host" and bias.widened and bias.level == 0.95
    assert (bias.k_low, bias.k_high, bias.a_low, bias.a_high) == (-0.1, 0.2, -0.003, 0.003)
    assert "2 day(s)" in bias.measured and bias.days == ["2026-12-06", "2026-12-07"]
    design = traits("duet", bias)
    assert design.concurrent and design.bias is not None and design.bias.k_low == -0.1
    assert measured_bias("split-duet", "sqlite", tmp_path, here).k_low == -0.3
    assert measured_bias("one-at-a-time", "sqlite", tmp_path, here) is None   # the reference
    # another kind of target: no bound of its own, so none (never another kind's, never a pool)
    other_kind = measured_bias("duet", "postgres", tmp_path, here)
    assert other_kind is not None and other_kind.route == "none" and not other_kind.widened
    assert traits("duet", other_kind).bias is None
    # another machine (a kernel build of another VM): the bound is not applied there
    elsewhere = {**here, "kernel": here.get("kernel", "") + "-other"}
    moved = measured_bias("duet", "sqlite", tmp_path, elsewhere)
    assert moved is not None and moved.route == "none" and traits("duet", moved).bias is None
    # a second write of one arrangement keeps the others
    write_bounds(tmp_path, HostIdentity.of(here), [_bound("duet", "sqlite", -0.05, 0.1)])
    assert measured_bias("duet", "sqlite", tmp_path, here).k_low == -0.05
    assert measured_bias("split-duet", "sqlite", tmp_path, here).k_low == -0.3


def test_the_installed_package_holds_no_bias_bound():
    import perflab

    package = Path(perflab.__file__).parent
    assert not list(package.rglob("*bias*.json"))


def test_perflab_bounds_shows_this_host_s_bounds_or_how_to_measure_them(tmp_path):
    from cli_helpers import perflab

    empty = perflab("bounds", "--store", tmp_path)
    said = " ".join(empty.stdout.split())   # as read, not as the terminal wrapped it
    assert empty.returncode == 0 and "no bias bound measured here" in said
    assert "perflab accuracy --studies --quick" in said
    write_bounds(tmp_path, HostIdentity.of(machine_fingerprint()), [_bound("duet", "sqlite")])
    shown = " ".join(perflab("bounds", "--store", tmp_path).stdout.split())
    assert "duet on sqlite: k -0.100 to +0.200" in shown and "95% prediction" in shown and "2 day(s)" in shown

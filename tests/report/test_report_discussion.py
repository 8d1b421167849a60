"""The generated sentences: right rows, right numbers (recomputed here from the study dict's
base/new values and intervals), right verdict words."""

from __future__ import annotations

from perflab.report import discussion

from .study_data import BASE, EXCLUDED_RUN, EXCLUSION, NEW, doc, find, pct1


def _texts(study: dict) -> list[str]:
    return [s.text for s in discussion.discuss(*doc(study))]


def _sentence_about(study: dict, label: str) -> str:
    hits = [t for t in _texts(study) if f"({label})" in t]
    assert hits, f"no sentence names ({label})"
    return hits[0]


def _ci(entry: dict) -> str:
    low, high = (100 * (entry[k] - 1) for k in ("ci_low", "ci_high"))
    if low >= 0:
        return f"[90% CI {low:.1f}% to {high:.1f}%]"
    return f"[90% CI {low:+.1f}% to {high:+.1f}%]"


def test_better_itr_is_explained_by_processor_time_per_command(study):
    metrics = study["comparisons"][0]["metrics"]
    itr, pbt = find(metrics, "itr_s"), find(metrics, "pbt_cmd_s")
    text = _sentence_about(study, "PBT/CMD (S)")
    assert text.startswith("Processor busy time per command (PBT/CMD (S)) decreased by ")
    assert f"decreased by {abs(pbt['new_value'] - pbt['base_value']):.3f} ms " in text
    assert f"({pct1(pbt['new_value'] / pbt['base_value'] - 1)})" in text
    assert f"raising internal throughput (ITR (S)) by {pct1(itr['new_value'] / itr['base_value'] - 1)} " in text
    assert _ci(itr) in text
    assert text.endswith(": BETTER.")
    # The seeds' example, to the digit.
    assert text == ("Processor busy time per command (PBT/CMD (S)) decreased by 0.051 ms (5.0%), raising internal "
                    "throughput (ITR (S)) by 5.3% [90% CI 4.1% to 6.5%]: BETTER.")


def test_worse_response_time_gives_absolute_and_relative_change(study):
    entry = find(study["comparisons"][0]["metrics"], "avg_last_t")
    text = _sentence_about(study, "AVG LAST (T)")
    assert text.startswith("External response time (AVG LAST (T)) increased by ")
    assert "0.00080 s" in text                     # 0.0131 - 0.0123, never printed as 0.001 or 0.000
    assert f"({pct1(entry['new_value'] / entry['base_value'] - 1)})" in text
    assert _ci(entry) in text
    assert ": WORSE, by more than the ±3% margin." in text


def test_equivalent_reads_like_the_seeds(study):
    entry = find(study["comparisons"][0]["metrics"], "etr_t")
    text = _sentence_about(study, "ETR (T)")
    assert "increased by 0.6 tx/s (0.15%)" in text  # to two digits of the ±0.65% interval
    assert _ci(entry) in text                      # a signed interval: it straddles no change
    assert text.endswith(": EQUIVALENT, within the ±3% margin.")


def test_inconclusive_says_how_many_blocks_the_noise_calls_for(study):
    entry = find(study["comparisons"][0]["metrics"], "resp_p90_t")
    text = _sentence_about(study, "RESP P90 (T)")
    assert ": INCONCLUSIVE;" in text
    assert f"CV of {100 * entry['cv']:.1f}%" in text
    assert f"at least {entry['blocks_needed']} blocks ({entry['n_blocks']} measured)" in text


def test_missing_metric_is_listed_as_na_not_discussed(study):
    texts = _texts(study)
    assert "Not measured in one or both configurations (na): INSTR/CMD (I)." in texts
    assert not any("(INSTR/CMD (I))" in t for t in texts)


def test_metric_without_direction_is_reported_without_verdict(study):
    text = _sentence_about(study, "UTIL/PROC (S)")
    assert "was 41.00% for the base and 39.00% for the new configuration (-4.9%)" in text
    for word in ("BETTER", "WORSE", "EQUIVALENT", "INCONCLUSIVE"):
        assert word not in text


def test_numbers_follow_the_dict_not_the_code(study):
    """Change the data and the sentence changes with it: nothing is hard-coded."""
    entry = find(study["comparisons"][0]["metrics"], "itr_s")
    entry.update(new_value=1100.0, abs_change=120.0, rel_change=1100.0 / 980.0 - 1, ci_low=1.10, ci_high=1.145)
    text = _sentence_about(study, "ITR (S)")
    assert f"by {pct1(1100.0 / 980.0 - 1)} " in text and "[90% CI 10.0% to 14.5%]" in text


def test_relative_change_is_computed_from_base_and_new_when_absent(study):
    entry = find(study["comparisons"][0]["metrics"], "avg_last_t")
    del entry["abs_change"], entry["rel_change"]
    text = _sentence_about(study, "AVG LAST (T)")
    assert f"increased by 0.00080 s ({pct1(0.0131 / 0.0123 - 1)})" in text


def test_opening_states_blocks_load_and_valid_runs(study):
    first = _texts(study)[0]
    assert f"{NEW} was measured against the base {BASE} in 6 interleaved blocks at 37 users" in first
    assert "11 of 12 runs were valid" in first


def test_general_observations_headline_response_throughput_and_caveats(study):
    obs = discussion.observation(*doc(study))
    texts = [s["text"] for s in obs["sentences"]]
    assert texts[0] == "Internal throughput (ITR (S)) increased by 5.3% [90% CI 4.1% to 6.5%, 5 blocks]: BETTER."
    assert texts[1].startswith("External response time (AVG LAST (T)) increased by 0.00080 s (6.5%)")
    assert texts[2].startswith("External throughput (ETR (T)) increased by 0.6 tx/s (0.15%)")
    caveats = obs["caveats"]
    assert any(EXCLUDED_RUN in c and EXCLUSION in c for c in caveats)
    assert any("shared processors" in c for c in caveats)
    assert any("lower utilization" in c and "39.00%" in c and "41.00%" in c for c in caveats)


def test_general_observations_carry_the_headline_warnings(study):
    entry = find(study["comparisons"][0]["metrics"], "itr_s")
    entry["warnings"] = ["CV 1.8 %: need ≥ 10 blocks at margin 3 %"]
    caveats = discussion.observation(*doc(study))["caveats"]
    assert "ITR (S): CV 1.8 %: need ≥ 10 blocks at margin 3 %" in caveats


def test_no_caveat_for_equal_utilization_or_unshared_cpus(study):
    study["design"]["placement"] = "driver on CPU 0, SUT on CPU 1"
    find(study["comparisons"][0]["metrics"], "util_proc_s").update(new_value=41.0, abs_change=0.0, rel_change=0.0)
    caveats = discussion.observation(*doc(study))["caveats"]
    assert not any("shared" in c or "utilization" in c for c in caveats)


def test_headline_falls_back_to_itr_h_and_says_when_itr_is_missing(study):
    metrics = study["comparisons"][0]["metrics"]
    itr = find(metrics, "itr_s")
    itr.update(key="itr_h", label="ITR (H)")
    obs = discussion.observation(*doc(study))
    assert obs["sentences"][0]["text"].startswith("Internal throughput (ITR (H)) increased by 5.3%")
    itr.update(base_value=None, new_value=None)
    obs = discussion.observation(*doc(study))
    assert "was not measured (na)" in obs["sentences"][0]["text"]


def test_interrupted_study_and_study_warnings_are_noted(study):
    study.update(status="interrupted", reason="SIGINT")
    notes = discussion.study_notes(doc(study)[0])
    assert notes[0].startswith("The study is interrupted: SIGINT")
    assert "Warning: one-variable rule: the configurations differ in target.driver only" in notes


def test_the_report_says_which_processor_time_the_verdicts_use(study):
    from .study_data import _entry

    metrics = study["comparisons"][0]["metrics"]
    metrics.append(_entry("harness_pct", "HARNESS SHARE (V)", "%", "Processor Util.", "none", 8.1, 9.4, decimals=1))
    metrics.append(_entry("sut_cmd_s", "SUT/CMD (S)", "ms", "Proc. Usage", "lower", 0.94, 0.88, ratio=0.936,
                          ci=(0.925, 0.947), verdict="BETTER", decimals=3))
    study["study"] = {"notes": ["make demo runs the short default."]}
    study_doc, comparison = doc(study)
    sentences = discussion.observation(study_doc, comparison)["sentences"]
    text = sentences[-1]["text"]
    assert text.startswith("The verdicts use ITR (S), whose processor time is that of the SUT's processes, perflab's "
                           "worker included (8.1% of it in the base, 9.4% in the new configuration); without it, ")
    assert "(SUT/CMD (S)) decreased by 0.060 ms (6.4%) [90% CI -7.5% to -5.3%]: BETTER" in text
    assert discussion.study_notes(study_doc)[0] == "make demo runs the short default."


def test_a_study_inconclusive_for_noise_is_told_of_the_duet_and_a_duet_is_not(study):
    itr = find(study["comparisons"][0]["metrics"], "itr_s")
    itr.update(verdict="INCONCLUSIVE", cv=0.035)
    notes = discussion.study_notes(doc(study)[0])
    (hint,) = [n for n in notes if "duet" in n]
    assert hint.startswith("ITR (S) scattered 3.5% from block to block.") and "perflab study --duet" in hint
    study["design"]["duet"] = True
    assert not [n for n in discussion.study_notes(doc(study)[0]) if "a duet (" in n]
    study["design"]["duet"] = False
    itr.update(cv=0.004)   # quiet enough: no advice
    assert not [n for n in discussion.study_notes(doc(study)[0]) if "a duet (" in n]

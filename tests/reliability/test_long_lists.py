"""Generated files of thousands of entries (issue 40): validation is linear in the entries, and a
message about a long list names the entry at fault, a few others and the count -- one readable
line, never the whole list. (How long `perflab validate` takes on 10,000 entries is timed in
bench/validate_scale.py, not here.)"""

from __future__ import annotations

import pytest
from reliability_helpers import one_line_error, run_main

from perflab.errors import repeated, some_of

N = 10_000
#: A message about a list of N entries: the entries it names and the words around them.
LONGEST_MESSAGE = 400


def workload(n: int, duplicate: int | None = None, unknown_step: str | None = None) -> str:
    lines = ["name: big", "target: {kind: python}", "transactions:"]
    lines += [f'  - {{name: t{i}, call: "perflab.sut.synthetic:noop"}}' for i in range(n)]
    if duplicate is not None:
        lines.append(f'  - {{name: t{duplicate}, call: "perflab.sut.synthetic:noop"}}')
    steps = [f"t{i}" for i in range(n)] + ([unknown_step] if unknown_step else [])
    lines += ["scripts:", "  - name: s", "    steps: [" + ", ".join(steps) + "]", "load: {users: 2}"]
    return "\n".join(lines) + "\n"


def study(n: int, duplicate: int | None = None) -> str:
    lines = ["name: many", "workload: w.yaml", "configurations:"]
    names = [f"c{i}" for i in range(n)] + ([f"c{duplicate}"] if duplicate is not None else [])
    for i, name in enumerate(names):
        lines += [f"  - name: {name}", f"    set: {{seed: {i + 1}}}"]
    return "\n".join(lines) + "\n"


def validate(tmp_path, text: str, name: str = "w.yaml") -> tuple[int | None, str, str]:
    path = tmp_path / name
    path.write_text(text)
    return run_main("validate", path, timeout=120)


def test_some_of_names_a_few_and_counts_the_rest():
    assert some_of(["a", "b"]) == "'a', 'b'"
    assert some_of([f"t{i}" for i in range(5)]) == "'t0', 't1', 't2', 't3', 't4'"
    assert some_of([f"t{i}" for i in range(N)]) == "'t0', 't1', 't2', 't3', 't4' and 9,995 more (10,000 in all)"
    assert repeated(["a", "b", "a", "c", "b", "a"]) == {"a": [0, 2, 5], "b": [1, 4]}
    assert repeated([f"t{i}" for i in range(N)]) == {}


def test_a_repeated_transaction_among_ten_thousand_is_named_at_its_line(tmp_path):
    code, _out, err = validate(tmp_path, workload(N, duplicate=4321))
    line = one_line_error(code, err)
    # the second t4321 is the file's last transaction: line 3 + N + 1
    assert f"w.yaml:{N + 4}: transactions[{N}].name: transaction name 't4321' is given again" in line, line
    assert "first at transactions[4321]" in line and len(line) < LONGEST_MESSAGE, line


def test_an_unknown_step_names_five_transactions_and_the_count(tmp_path):
    code, _out, err = validate(tmp_path, workload(N, unknown_step="nope"))
    line = one_line_error(code, err)
    assert f"w.yaml:{N + 6}: scripts[0].steps[{N}]: unknown transaction 'nope'; defined: " in line, line
    assert line.endswith("'t0', 't1', 't2', 't3', 't4' and 9,995 more (10,000 in all)"), line
    assert len(line) < LONGEST_MESSAGE


def test_several_repeated_names_are_counted_not_listed(tmp_path):
    text = workload(N).replace("scripts:", "\n".join(
        f'  - {{name: t{i}, call: "perflab.sut.synthetic:noop"}}' for i in range(0, N, 2)) + "\nscripts:")
    code, _out, err = validate(tmp_path, text)
    line = one_line_error(code, err)
    assert "transaction name 't0' is given again (first at transactions[0]); repeated names: 't0', 't2', " \
           "'t4', 't6', 't8' and 4,995 more (5,000 in all)" in line, line
    assert len(line) < LONGEST_MESSAGE


def test_a_valid_ten_thousand_transactions_is_ok(tmp_path):
    code, out, err = validate(tmp_path, workload(N))
    assert code == 0, err
    assert f"{N} transactions" in out


@pytest.mark.parametrize("duplicate", [None, 777])
def test_a_study_of_ten_thousand_configurations(tmp_path, duplicate):
    (tmp_path / "w.yaml").write_text(workload(3))
    code, out, err = validate(tmp_path, study(N, duplicate), name="s.yaml")
    if duplicate is None:
        assert code == 0, err
        assert f"{N} configurations" in out
        return
    line = one_line_error(code, err)
    # the repeated c777 is the last configuration: its name is on line 3 + 2 N + 1
    assert f"s.yaml:{2 * N + 4}:" in line and "'c777' is given again (first at configurations[777])" in line, line
    assert len(line) < LONGEST_MESSAGE

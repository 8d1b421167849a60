"""Where the pathlength went: a comparison's change in instructions per command, function by
function, as study.json keeps it (`StudyDocument.pathlength_diffs`, one per comparison).

Built once from the runs' per-function tables (perflab.reduce.function_diff) and read by every
report format (perflab.report.pathlength_diff): the seeds' table of the modules whose pathlength
grew, for today's SUTs. Every value is instructions per counted transaction (the counted pass's
mix, the same draw in both configurations of a block): the mean over the transactions both
configurations counted.
"""

from __future__ import annotations

from pydantic import Field

from perflab.records.run import Record


class FunctionChange(Record):
    """One function: its count in both configurations."""

    object: str = Field(description="the object it is in, by file name (apsw/__init__...so, postgres, libc.so.6)")
    function: str = Field(description="the function")
    library: str = Field(description="the group it is summed in (perflab.reduce.libraries)")
    base: float = Field(description="instructions per command in the base configuration")
    new: float = Field(description="instructions per command in the new configuration")
    delta_low: float | None = Field(default=None, description="the change's interval over the paired transactions "
                                    "(Bonferroni over the functions that moved): low end; null: runs not paired")
    delta_high: float | None = Field(default=None, description="its high end")
    above_noise: bool | None = Field(default=None, description="the interval excludes zero: a change above the "
                                     "noise of a count; null: not measured (one block)")

    @property
    def delta(self) -> float:
        return self.new - self.base


class LibraryChange(Record):
    name: str = Field(description="the library (perflab.reduce.libraries)")
    base: float = Field(description="its functions' exclusive instructions per command, base")
    new: float = Field(description="the same, new")
    functions: int = Field(default=0, description="its functions counted in either")

    @property
    def delta(self) -> float:
        return self.new - self.base


class TransactionChange(Record):
    name: str = Field(description="the transaction")
    base: float = Field(description="its mean instructions in the counted pass, base")
    new: float = Field(description="the same, new")
    counted: int = Field(default=0, description="its counted transactions per run, the paired runs' mean")


class FlameLabel(Record):
    name: str
    object: str
    library: str


class FlameGraph(Record):
    """A differential flame graph, drawn from callgrind's caller -> callee counts: each frame's
    width is its share of its caller's, in proportion to the calls' instructions (callgrind keeps
    one level of callers), so the first level is exact and deeper frames are estimates; the frames
    of a function re-entered through others (callgrind's inner activations, `f'2`) that call each
    other in a cycle are one frame. `nodes` are (parent index, label index, base, new), a parent
    before its children, node 0 the root (every counted instruction)."""

    labels: list[FlameLabel] = Field(default_factory=list)
    nodes: list[tuple[int, int, float, float]] = Field(default_factory=list)
    pruned_below: float = Field(default=0.0, description="frames smaller than this (instructions per command, "
                                "in both) are left out")


class PathlengthDiff(Record):
    base: str = Field(description="the base configuration")
    new: str = Field(description="the new configuration")
    blocks: int = Field(default=0, description="the paired blocks whose runs were counted per function")
    runs_base: list[str] = Field(default_factory=list, description="the base's runs used")
    runs_new: list[str] = Field(default_factory=list, description="the new's runs used")
    transactions: float = Field(default=0.0, description="counted transactions per run (the mean)")
    paired_transactions: int = Field(default=0, description="the transactions both configurations of a block counted "
                                     "(by their number in the pass), over every block: what the rows are means of")
    base_total: float = Field(default=0.0, description="instructions per command counted, base (every function)")
    new_total: float = Field(default=0.0, description="the same, new")
    total_low: float | None = Field(default=None, description="the total change's interval over the paired "
                                    "transactions: low end")
    total_high: float | None = Field(default=None, description="its high end")
    functions_changed: int = Field(default=0, description="functions whose count moved in some paired transaction "
                                   "(the Bonferroni family)")
    confidence: float = Field(default=0.95, description="the level of every interval, before Bonferroni")
    exclusive: list[FunctionChange] = Field(default_factory=list, description="the functions with the largest "
                                            "change in their own instructions, largest first")
    inclusive: list[FunctionChange] = Field(default_factory=list, description="the functions with the largest "
                                            "change in their inclusive instructions")
    libraries: list[LibraryChange] = Field(default_factory=list, description="every library, largest change first")
    per_transaction: list[TransactionChange] = Field(default_factory=list)
    flame: FlameGraph | None = None
    notes: list[str] = Field(default_factory=list, description="what the tables are and what they cannot say")

    @property
    def delta(self) -> float:
        return self.new_total - self.base_total


class ShareChange(Record):
    """One function's share of the SUT's sampled CPU time in both configurations (drive/profile.py):
    shares with their 95% Wilson intervals, and the change's (Newcombe's), never counts."""

    object: str
    function: str
    library: str
    base: float = Field(description="its share of the base's samples")
    new: float = Field(description="its share of the new's samples")
    base_samples: int = 0
    new_samples: int = 0
    delta_low: float = Field(description="the change of share's 95% interval: low end")
    delta_high: float = Field(description="its high end")


class ProfileDiff(Record):
    """Where the CPU went, sampled: each configuration's pooled profile over its runs' windows."""

    base: str
    new: str
    runs_base: list[str] = Field(default_factory=list)
    runs_new: list[str] = Field(default_factory=list)
    base_samples: int = Field(default=0, description="samples pooled over the base's runs")
    new_samples: int = Field(default=0, description="samples pooled over the new's runs")
    functions: list[ShareChange] = Field(default_factory=list, description="the largest changes of share first")
    libraries: list[ShareChange] = Field(default_factory=list, description="each library's share (function: '')")

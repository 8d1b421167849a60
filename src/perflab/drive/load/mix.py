"""The workload's scripts compiled once: each step's transaction, think time, parameter maker
and class, and the weighted mix a user (or a job, or an arrival) draws its next script from.

Both the timed load (engine.py, batch.py) and the pathlength's counted pass
(drive/pathlength/draw.py) draw from it, so the counted transactions follow the same mix and
the same parameter generators as the timed ones.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from perflab.drive.load.params import ParamMaker
from perflab.workload.model import Workload
from perflab.workload.thinktime import NO_THINK, ThinkTime


@dataclass
class Step:
    tx_index: int
    think: ThinkTime
    params: ParamMaker
    klass: int


@dataclass
class Script:
    index: int
    steps: list[Step]


@dataclass
class ScriptMix:
    """The scripts, the init script (None: none) and the weighted mix of the others."""

    scripts: list[Script]
    init: Script | None
    mix: list[Script]
    cumulative: list[float]  # cumulative weights of `mix` (UserRandom.pick)
    class_names: list[str]   # sorted; Step.klass indexes it


def compile_scripts(w: Workload) -> ScriptMix:
    tx_index = {t.name: i for i, t in enumerate(w.transactions)}
    class_names = sorted({t.tx_class for t in w.transactions})
    class_index = {c: i for i, c in enumerate(class_names)}
    default_think = w.think or NO_THINK
    makers = [ParamMaker(t.params) for t in w.transactions]
    scripts: list[Script] = []
    for si, script in enumerate(w.scripts):
        steps = []
        for step in script.steps:
            ti = tx_index[step.transaction]
            steps.append(Step(ti, step.think or default_think, makers[ti], class_index[w.transactions[ti].tx_class]))
        scripts.append(Script(si, steps))
    init = next((s for s, m in zip(scripts, w.scripts) if m.name == w.init_script), None)
    choosable = [(s, m.weight) for s, m in zip(scripts, w.scripts) if m.name != w.init_script and m.weight > 0]
    return ScriptMix(scripts, init, [s for s, _ in choosable], list(itertools.accumulate(wt for _, wt in choosable)),
                     class_names)


def sub_mix(w: Workload, scripts: list[Script], names: set[str], inside: bool) -> tuple[list[Script], list[float]]:
    """The weighted mix of the scripts named in `names` (inside) or of the others, the init
    script left out either way: mixed work's jobs and users draw from the two halves."""
    chosen = [(s, m.weight) for s, m in zip(scripts, w.scripts)
              if m.name != w.init_script and m.weight > 0 and (m.name in names) == inside]
    return [s for s, _ in chosen], list(itertools.accumulate(wt for _, wt in chosen))

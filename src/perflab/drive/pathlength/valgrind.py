"""valgrind's command lines and output formats, in one place: the command adapter's timed
valgrind mode (drive/adapters/command.py) and the counted pass both use them.

Ir, the count of guest instructions executed, is the only event asked for: cache simulation is
off (`--cache-sim=no`), so valgrind runs about as fast as it can. The count is of the program as
valgrind runs it -- the same instructions a processor would retire, except for the few that
valgrind emulates differently (CPUID, some string and vector instructions counted once per
instruction, not per iteration) -- and repeats from run to run where the program's work does.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from perflab.tools import find_tool


def valgrind_version() -> str:
    program = find_tool("valgrind")
    if program is None:
        return "valgrind (not installed)"
    try:
        return subprocess.run([program, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "valgrind"


def cachegrind_prefix(out_pattern: str) -> list[str]:
    """Every process the command starts, counted whole; `%p` in the pattern is each one's pid
    (a forked child writes its own file when it exits)."""
    return ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--trace-children=yes",
            f"--cachegrind-out-file={out_pattern}"]


def callgrind_whole_prefix(out_pattern: str) -> list[str]:
    """Every process the command starts counted whole, as cachegrind_prefix counts it, under
    callgrind instead: the same total (its `summary:` line) and each function's instructions
    and calls besides (the counted pass's per-function tables, drive/pathlength/functions.py)."""
    return ["valgrind", "--tool=callgrind", "--trace-children=yes", "--dump-line=no", "--dump-instr=no",
            "--compress-strings=no", f"--callgrind-out-file={out_pattern}"]


def callgrind_prefix(out_file: str) -> list[str]:
    """Nothing instrumented until the program asks (CALLGRIND_START_INSTRUMENTATION: its start-up
    runs several times faster), nothing counted until it toggles collection on, and every dump it
    asks for appended to one file as a `part`."""
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no", "--combine-dumps=yes",
            "--dump-line=no", "--dump-instr=no", "--compress-strings=no", f"--callgrind-out-file={out_file}"]


def cachegrind_total(path: Path) -> int | None:
    """The `summary:` (Ir) of one cachegrind output file; None while it is not written yet."""
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith("summary:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


@dataclass(frozen=True)
class Part:
    """One dump of a combined callgrind file: what triggered it (a client request's label) and its Ir."""

    trigger: str
    ir: int


def callgrind_parts(path: Path) -> list[Part]:
    """Every part of a combined callgrind file, in dump order. A part starts at its `part:` line;
    its `desc: Trigger:` line says why it was dumped (`Client Request: LABEL` for
    CALLGRIND_DUMP_STATS_AT, `Program termination` for the last); its Ir is its `totals:` line,
    else its `summary:` (the format allows either)."""
    parts: list[Part] = []
    trigger: str | None = None
    totals: int | None = None
    summary: int | None = None
    started = False

    def close() -> None:
        parts.append(Part(trigger or "", totals if totals is not None else (summary or 0)))

    with open(path) as handle:
        for line in handle:
            if line.startswith("part:"):
                if started:
                    close()
                started, trigger, totals, summary = True, None, None, None
            elif line.startswith("desc: Trigger:"):
                started = True
                trigger = line.split(":", 2)[2].strip()
            elif line.startswith("totals:"):
                totals = int(line.split()[1])
            elif line.startswith("summary:"):
                summary = int(line.split()[1])
    if started or totals is not None or summary is not None:
        close()
    return parts


def labelled_counts(parts: list[Part], prefix: str = "Client Request: ") -> dict[str, int]:
    """Ir by the label of the client request that dumped each part (parts with another trigger
    -- the program's end -- left out)."""
    return {part.trigger.removeprefix(prefix): part.ir for part in parts if part.trigger.startswith(prefix)}

"""A Python SUT whose pathlength is known exactly: the ruler for INSTR/CMD (I).

`spin(n)` calls a machine-code loop that retires exactly `2 * n + 2` instructions (a move, n
decrements and n conditional jumps, a return), whatever the Python release or the machine. The
call around it (the ctypes call, the adapter's) adds a few thousand instructions that do not
depend on n, so two transactions that differ only in n differ by exactly 2 * (n2 - n1)
instructions: perflab's pathlength counter is checked against that difference
(tests/core/test_pathlength_run.py, docs/workloads.md#pathlength).
"""

from __future__ import annotations

import ctypes

from perflab.sut.machine_code import MachineCode

#: instructions the loop retires per iteration (dec, jnz), and around the iterations (mov, ret)
PER_ITERATION = 2
FIXED = 2

_LOOP = bytes.fromhex(
    "4889f8"   # mov rax, rdi       rax = n
    "48ffc8"   # dec rax            <- loop
    "75fb"     # jnz loop           (back 5 bytes)
    "c3"       # ret
)
_code: MachineCode | None = None


def loop_instructions(n: int) -> int:
    """What `spin(n)`'s loop retires."""
    return PER_ITERATION * n + FIXED


def spin(n: int = 1000) -> None:
    """Retire exactly loop_instructions(n) instructions in machine code (n >= 1: at 0 the loop
    would count down through 2**64)."""
    global _code
    if not 1 <= n < 1 << 40:
        raise ValueError(f"spin needs 1 <= n < 2**40, got {n}")
    if _code is None:
        _code = MachineCode(_LOOP, ctypes.c_uint64, (ctypes.c_uint64,))
    _code.function(n)

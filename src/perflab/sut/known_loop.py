"""A Python SUT whose pathlength is known exactly: the ruler for INSTR/CMD (I).

`spin(n)` calls a machine-code function, `perflab_known_loop`, that retires exactly `2 * n + 2`
instructions (a move, n decrements and n conditional jumps, a return), whatever the Python
release or the machine; `spin`'s entry calls it and returns, two instructions more. The call
around it (the ctypes call, the adapter's) adds a few thousand instructions that do not depend on
n, so two transactions that differ only in n differ by exactly 2 * (n2 - n1) instructions:
perflab's pathlength counter is checked against that difference (tests/core/test_pathlength_run.py,
docs/workloads.md#pathlength).

Why the inner call: ctypes reaches foreign code through libffi, which moves the stack pointer
before its own `call`, and callgrind then takes that call for a return and counts the callee as
part of libffi's function. A real call from inside the page (the stack pointer going down) is
seen as one, so callgrind counts the loop as a function of its own, at its own address -- which
the page's name in sut/machine_code.py's map turns into `perflab_known_loop` in a per-function
table (drive/pathlength/functions.py): a function of known count, to read back from the table.
"""

from __future__ import annotations

import ctypes

from perflab.sut.machine_code import MachineCode

#: instructions the loop function retires per iteration (dec, jnz), and around the iterations (mov, ret)
PER_ITERATION = 2
FIXED = 2
#: spin's own entry around the loop function: the call into it and the return to ctypes
ENTRY = 2
#: the loop function's name in a table of functions (its page's name)
NAME = "perflab_known_loop"

_LOOP = bytes.fromhex(
    "e801000000"  # call loop_function (the next instruction but one)
    "c3"          # ret
    "4889f8"      # loop_function: mov rax, rdi       rax = n
    "48ffc8"      # dec rax            <- loop
    "75fb"        # jnz loop           (back 5 bytes)
    "c3"          # ret
)
#: known_change's page: an entry that calls the same loop function only when its second argument
#: is 2, with as many instructions of its own either way (compare, branch, then a call and a
#: return, or a no-op and a return)
_CHANGE = bytes.fromhex(
    "4883fe02"    # cmp rsi, 2
    "7506"        # jne skip
    "e803000000"  # call loop_function
    "c3"          # ret
    "90"          # skip: nop
    "c3"          # ret
    "4889f8"      # loop_function: mov rax, rdi
    "48ffc8"      # dec rax
    "75fb"        # jnz (back 5 bytes)
    "c3"          # ret
)
_code: MachineCode | None = None
_change_code: MachineCode | None = None   # known_change's page


def loop_instructions(n: int) -> int:
    """What the loop function retires for `spin(n)` (spin itself: ENTRY more)."""
    return PER_ITERATION * n + FIXED


def spin(n: int = 1000) -> None:
    """Retire exactly loop_instructions(n) + ENTRY instructions in machine code (n >= 1: at 0 the
    loop would count down through 2**64)."""
    global _code
    if not 1 <= n < 1 << 40:
        raise ValueError(f"spin needs 1 <= n < 2**40, got {n}")
    if _code is None:
        _code = MachineCode(_LOOP, ctypes.c_uint64, (ctypes.c_uint64,), name=NAME)
    _code.function(n)


def known_change(n: int = 100_000, variant: int = 1, work: int = 200) -> int:
    """A transaction with a function of known count added in its variant 2: some Python work (a
    dictionary of `work` string keys), then one call into machine code whose entry runs
    `perflab_known_loop` (2n + 2 instructions) when `variant` is 2 and returns at once when it
    is 1. The two variants differ in nothing else: the same Python instructions, the same ctypes
    call with arguments converted alike (1 and 2, not 0 and 1: Python converts a zero by a
    shorter path), the same four instructions of the entry around the loop function. So a study
    of variant 1 against 2 changes exactly one function, by exactly 2n + 2 instructions per
    transaction: the ruler for "where the pathlength went"
    (tests/pathlength/test_known_change_study.py)."""
    global _change_code
    if not 1 <= n < 1 << 40 or not 1 <= variant <= 2:   # the same comparisons for 1 and 2
        raise ValueError(f"known_change needs 1 <= n < 2**40 and variant 1 or 2, got {n}, {variant}")
    if _change_code is None:
        _change_code = MachineCode(_CHANGE, ctypes.c_uint64, (ctypes.c_uint64, ctypes.c_uint64), name=NAME)
    table = {str(i): i for i in range(work)}
    found = sum(table[str(i)] for i in range(0, work, 7))
    _change_code.function(n, variant)
    return found

"""Valgrind client requests from Python: tell callgrind, from inside the program it runs, where
a transaction starts and ends.

Why this exists: an in-process SUT (SQLite through apsw, a Python function) runs thousands of
transactions in one long-lived worker process, so the process's total instruction count says
nothing about one transaction. Callgrind can count exactly the instructions between two points
of the program -- `CALLGRIND_TOGGLE_COLLECT` around the call, `CALLGRIND_DUMP_STATS_AT` after it --
but only when the program itself asks, through a *client request*: a fixed sequence of machine
instructions that does nothing on a real processor and that valgrind's translator recognises
(valgrind.h, `VALGRIND_DO_CLIENT_REQUEST_EXPR`). No Python package issues them, and C code would
need a compiler and valgrind's headers on every machine, so the sequence is written here as the
bytes of a tiny function (sut/machine_code.py), called through ctypes.

Outside valgrind the function returns its default (0) and does nothing, so `running_on_valgrind()`
is 0 there: the caller can refuse to count instead of counting nothing.
"""

from __future__ import annotations

import ctypes

from perflab.sut.machine_code import MachineCode

# valgrind.h: VG_USERREQ__RUNNING_ON_VALGRIND; callgrind.h: VG_USERREQ_TOOL_BASE('C','T') + n.
RUNNING_ON_VALGRIND = 0x1001
_CALLGRIND = (ord("C") << 24) | (ord("T") << 16)
DUMP_STATS = _CALLGRIND + 0
ZERO_STATS = _CALLGRIND + 1
TOGGLE_COLLECT = _CALLGRIND + 2
DUMP_STATS_AT = _CALLGRIND + 3
START_INSTRUMENTATION = _CALLGRIND + 4
STOP_INSTRUMENTATION = _CALLGRIND + 5

# unsigned long request(unsigned long *args): rax <- args, rdx <- default 0, the "special
# instruction preamble" (rol rdi by 3, 13, 61, 51: 128 bits, rdi unchanged), `xchg rbx, rbx`
# (valgrind: rdx = client_request(rax)), return rdx.
_X86_64 = bytes.fromhex(
    "4889f8"        # mov rax, rdi
    "31d2"          # xor edx, edx
    "48c1c703"      # rol rdi, 3
    "48c1c70d"      # rol rdi, 13
    "48c1c73d"      # rol rdi, 61
    "48c1c733"      # rol rdi, 51
    "4887db"        # xchg rbx, rbx
    "4889d0"        # mov rax, rdx
    "c3"            # ret
)


class ClientRequests:
    """The client-request function, made once per process (an executable page of 4 KiB)."""

    def __init__(self) -> None:
        self._code = MachineCode(_X86_64, ctypes.c_ulong, (ctypes.POINTER(ctypes.c_ulong),),
                                 name="perflab_client_request")
        self._args = (ctypes.c_ulong * 6)()
        self._labels: dict[str, ctypes.Array[ctypes.c_char]] = {}

    def request(self, code: int, *args: int) -> int:
        self._args[0] = code
        for i in range(5):
            self._args[i + 1] = args[i] if i < len(args) else 0
        return int(self._code.function(self._args))

    def running_on_valgrind(self) -> int:
        """How many valgrinds this process runs under (0: none)."""
        return self.request(RUNNING_ON_VALGRIND)

    def toggle_collect(self) -> None:
        self.request(TOGGLE_COLLECT)

    def label(self, text: str) -> int:
        """The address of `text` as a C string, kept alive here (made before the counted call, so
        making it is not counted)."""
        if text not in self._labels:
            self._labels[text] = ctypes.create_string_buffer(text.encode())
        return ctypes.addressof(self._labels[text])

    def dump_stats_at(self, address: int) -> None:
        """Write the costs collected since the last dump to a new part, its `desc:` line naming
        the label at `address` (ClientRequests.label), and zero them."""
        self.request(DUMP_STATS_AT, address)

    def zero_stats(self) -> None:
        self.request(ZERO_STATS)

    def start_instrumentation(self) -> None:
        self.request(START_INSTRUMENTATION)

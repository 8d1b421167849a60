"""reuse_freed_memory (perflab.reduce.memory): the settings `perflab show --json` asks for, and
that it never fails the command where they cannot be had (another numpy, another libc). No
setting is applied to the test process itself: numpy's switch and libc are stand-ins here."""

from __future__ import annotations

import ctypes
import sys
import types

import numpy._core.multiarray as multiarray
import pytest

from perflab.reduce import memory


class _Libc:
    def __init__(self, answer: int = 1) -> None:
        self.calls: list[tuple[int, int]] = []
        self.answer = answer

    @property
    def mallopt(self):
        def mallopt(param: int, value: int) -> int:
            self.calls.append((param, value))
            return self.answer
        return mallopt


@pytest.fixture
def hugepage(monkeypatch) -> list[bool]:
    """numpy's huge-page switch, recorded instead of thrown."""
    calls: list[bool] = []
    monkeypatch.setattr(multiarray, "_set_madvise_hugepage", calls.append, raising=False)
    return calls


def test_glibc_keeps_freed_memory_and_numpy_stops_asking_for_huge_pages(monkeypatch, hugepage):
    libc = _Libc()
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: libc)
    assert memory.reuse_freed_memory() is True
    # M_MMAP_MAX 0 (no allocation gets a mapping of its own), M_TRIM_THRESHOLD at its largest
    assert libc.calls == [(-4, 0), (-1, 0x7FFFFFFF)]
    assert hugepage == [False]


def test_a_libc_that_refuses_or_has_no_mallopt_changes_nothing(monkeypatch, hugepage):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: _Libc(answer=0))
    assert memory.reuse_freed_memory() is False
    monkeypatch.setattr(ctypes, "CDLL", lambda name: types.SimpleNamespace())  # musl: no mallopt
    assert memory.reuse_freed_memory() is False

    def unloadable(name):
        raise OSError("no libc")
    monkeypatch.setattr(ctypes, "CDLL", unloadable)
    assert memory.reuse_freed_memory() is False


def test_another_platform_is_left_alone(monkeypatch, hugepage):
    libc = _Libc()
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: libc)
    assert memory.reuse_freed_memory() is False and libc.calls == []


def test_a_numpy_without_the_private_switch_is_no_failure(monkeypatch):
    monkeypatch.setitem(sys.modules, "numpy._core.multiarray", types.SimpleNamespace())  # the name is gone
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: _Libc())
    assert memory.reuse_freed_memory() is True


def test_one_arena_is_asked_for_and_nothing_fails_without_glibc(monkeypatch):
    libc = _Libc()
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: libc)
    assert memory.one_malloc_arena() is True and libc.calls == [(-8, 1)]  # M_ARENA_MAX 1
    monkeypatch.setattr(ctypes, "CDLL", lambda name: types.SimpleNamespace())  # musl: no mallopt
    assert memory.one_malloc_arena() is False
    monkeypatch.setattr(sys, "platform", "darwin")
    assert memory.one_malloc_arena() is False


def test_the_command_line_asks_for_one_arena_before_numpy_or_pyarrow_is_imported():
    """glibc fixes the number of arenas when a thread first needs one; importing numpy or
    pyarrow starts threads. So perflab.cli must ask before either is imported: a new
    interpreter that imports perflab.cli with mallopt recorded sees the call while neither is
    in sys.modules."""
    import subprocess

    code = (
        "import ctypes, sys\n"
        "seen = []\n"
        "class Libc:\n"
        "    @property\n"
        "    def mallopt(self):\n"
        "        def mallopt(param, value):\n"
        "            seen.append((param, value, 'numpy' in sys.modules or 'pyarrow' in sys.modules))\n"
        "            return 1\n"
        "        return mallopt\n"
        "ctypes.CDLL = lambda name: Libc()\n"
        "import perflab.cli\n"
        "print(seen)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[(-8, 1, False)]"

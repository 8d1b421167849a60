"""CPU time of perflab's own processes: `driver.{cpu_user,cpu_sys}` and `monitor.{cpu_user,cpu_sys}`.

A run whose driver was saturated measured the driver, not the SUT (the seeds kept TPNS on a
separate processor for this reason), so DRIVER CPU is a validity gate. The monitor's own cost
is reported so that its share of the machine is known rather than assumed.

The driver's time is its own (all threads) *without* its reaped children: the driver's children
are SUT workers, whose time belongs to s.* -- counting it here would charge the SUT to the driver.
"""

from __future__ import annotations

import resource

from . import SourceUnavailable
from .procfs import CLK_TCK, read_pid_stat


class DriverCpuSource:
    name = "driver_cpu"

    def __init__(self, pid: int) -> None:
        st = read_pid_stat(pid)
        if st is None:
            raise SourceUnavailable(f"driver process {pid} not found")
        self._pid = pid
        self._start = st.starttime
        self._last = {"driver.cpu_user": st.utime / CLK_TCK, "driver.cpu_sys": st.stime / CLK_TCK}

    def read(self) -> dict[str, float]:
        st = read_pid_stat(self._pid)
        if st is not None and st.starttime == self._start:  # gone: keep its last value
            self._last = {"driver.cpu_user": st.utime / CLK_TCK, "driver.cpu_sys": st.stime / CLK_TCK}
        return dict(self._last)

    def close(self) -> None:
        pass


class MonitorCpuSource:
    """The calling process's own CPU time (the sampler runs it inside the monitor process)."""

    name = "monitor_cpu"

    def read(self) -> dict[str, float]:
        # getrusage has microsecond resolution where /proc and os.times() have clock ticks.
        r = resource.getrusage(resource.RUSAGE_SELF)
        return {"monitor.cpu_user": r.ru_utime, "monitor.cpu_sys": r.ru_stime}

    def close(self) -> None:
        pass

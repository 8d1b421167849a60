"""Shared pieces of perflab's benchmarks: the machine, processes, CPU and memory readings,
repetition statistics.

Everything here reads the kernel directly (/proc), so every tool -- perflab, Locust, k6, wrk --
is measured the same way from the outside: CPU seconds of the load generator's process
(utime + stime of all its threads, /proc/PID/stat) and its resident set (/proc/PID/status).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PROJECT_PYTHON = REPO / ".venv" / "bin" / "python"
PEERS_VENV = Path(os.environ.get("PERFLAB_BENCH_PEERS_VENV", BENCH / ".venv-peers"))
WORK = Path(os.environ.get("PERFLAB_BENCH_WORK", BENCH / "work"))
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

# The placement every benchmark uses on the 2-core machine: the load generator on CPU 0, the
# target (nginx, perflab's SUT workers) on CPU 1.
DRIVER_CPU = 0
TARGET_CPU = 1


def python() -> str:
    """The interpreter with perflab installed (the project venv), else the running one."""
    return str(PROJECT_PYTHON) if PROJECT_PYTHON.exists() else sys.executable


def perflab_cmd() -> list[str]:
    return [python(), "-m", "perflab.cli"]


# --- tools -----------------------------------------------------------------------------------


def find_tool(name: str) -> str | None:
    """A peer tool's executable: the peers venv, Go's bin directory, then PATH."""
    candidates = [PEERS_VENV / "bin" / name]
    gopath = os.environ.get("GOPATH") or str(Path.home() / "go")
    candidates.append(Path(gopath) / "bin" / name)
    candidates += [Path("/usr/local/bin") / name]
    for c in candidates:
        if c.exists() and os.access(c, os.X_OK):
            return str(c)
    return shutil.which(name)


def tool_version(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({exc})"
    text = (proc.stdout + proc.stderr).strip().splitlines()
    return text[0].strip() if text else "unknown"


def machine() -> dict[str, Any]:
    """What the numbers were measured on (pyperf's lesson: never compare across machines)."""
    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) * 1024
    except OSError:
        pass
    info: dict[str, Any] = {
        "cpu_model": cpu_model,
        "cores": os.cpu_count(),
        "memory_gib": round(mem / 2**30, 1),
        "kernel": platform.release(),
        "os": _os_release(),
        "python": tool_version([python(), "-c", "import sys; print(sys.version.split()[0])"]),
    }
    info["perflab"] = tool_version([python(), "-c", "import perflab; print(perflab.__version__)"])
    for name, argv in (("nginx", ["-v"]), ("wrk", ["--version"]), ("k6", ["version"]),
                       ("locust", ["--version"]), ("vegeta", ["-version"]), ("wrk2", ["--version"])):
        exe = find_tool(name)
        info[name] = tool_version([exe, *argv]) if exe else "not installed"
    return info


def _os_release() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return platform.platform()


# --- processes ---------------------------------------------------------------------------------


def proc_cpu_s(pid: int) -> float | None:
    """utime + stime of every thread of a process (seconds), None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # after the command name: state is field 3; utime, stime are fields 14, 15 (1-based)
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_wakes(pid: int) -> int | None:
    """The times any thread of a process went to sleep and was woken (voluntary context switches,
    summed over /proc/PID/task/*/status), None once it is gone: a generator that pays a wake-up for
    each request pays the kernel's (and, in a guest, the hypervisor's) cost of each."""
    total = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
        except OSError:  # a thread that ended meanwhile
            continue
    return total


def proc_rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def descendants(pid: int) -> list[int]:
    """Every live descendant of a process (children, grandchildren...)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def taskset(cpu: int, argv: list[str]) -> list[str]:
    return ["taskset", "-c", str(cpu), *argv]


def port_free(port: int, name: str) -> None:
    """RuntimeError unless 127.0.0.1:port is free: a server left over from a benchmark that was
    killed answers there, and a probe of the new server would read the old one's (on 2026-12-07 a
    leftover nginx served a whole paired HTTP run while the new one had exited on EADDRINUSE)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise RuntimeError(f"{name}: 127.0.0.1:{port} is taken ({exc.strerror}): a server left over from an "
                               f"earlier benchmark? Stop it first") from None


def wait_answering(proc: subprocess.Popen, probe, name: str, timeout: float = 10.0) -> None:
    """Wait until a server just started answers `probe()` (which raises OSError until it does);
    RuntimeError with its stderr's end if it exits first, or if it never answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            probe()
            return
        except OSError:
            if proc.poll() is not None:
                err = proc.stderr.read().decode()[-500:] if proc.stderr is not None else ""
                raise RuntimeError(f"{name} exited: {err}") from None
            time.sleep(0.05)
    raise RuntimeError(f"{name} did not answer within {timeout:g} s")


def stop_process(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 15.0) -> None:
    """End a process this benchmark started (by its pid only), then kill it if it lingers."""
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(sig)
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass


def wait_rusage(proc: subprocess.Popen, timeout: float) -> tuple[int, float]:
    """Wait for a child and return (exit status, its user + system CPU seconds, reaped
    descendants included) from wait4."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_utime + usage.ru_stime
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_utime + usage.ru_stime
        time.sleep(0.05)


# --- statistics over repetitions ---------------------------------------------------------------


@dataclass
class Summary:
    """Median and spread of repeated measurements (at least 3 for a published number)."""

    values: list[float]

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None

    @property
    def low(self) -> float | None:
        return min(self.values) if self.values else None

    @property
    def high(self) -> float | None:
        return max(self.values) if self.values else None

    @property
    def spread_pct(self) -> float | None:
        """(max - min) / median, in %: the full range of the repetitions."""
        m = self.median
        if not self.values or not m:
            return None
        return 100.0 * (self.high - self.low) / abs(m)

    def to_json(self) -> dict[str, Any]:
        return {"values": self.values, "n": self.n, "median": self.median, "min": self.low, "max": self.high,
                "spread_pct": self.spread_pct}


def summarize(values: Iterable[float | None]) -> dict[str, Any]:
    return Summary([float(v) for v in values if v is not None]).to_json()


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


# --- files ------------------------------------------------------------------------------------


def workdir(name: str) -> Path:
    path = WORK / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text())


def shell_join(argv: list[str]) -> str:
    """A command line for the docs, with the repository's paths shortened."""
    import shlex

    text = " ".join(shlex.quote(str(a)) for a in argv)
    return text.replace(str(REPO) + "/", "").replace(str(Path.home()), "~")


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- a shared machine: noticing other work ----------------------------------------------------
#
# Other people's jobs (a test suite, a build) may run on the same two cores. Every measurement
# therefore waits for the machine to be quiet before it starts and, afterwards, computes the
# *background*: the CPU the machine was busy minus what the measured processes used. A
# measurement with more than BACKGROUND_LIMIT of one core in the background is repeated.

BACKGROUND_LIMIT = 0.05  # of one core


def machine_busy_s() -> float:
    """CPU seconds the machine's processes used since boot (/proc/stat: user + nice + system).

    Interrupt and softirq time is left out: the kernel charges it to no process (loopback
    networking shows up there), so it would look like someone else's work."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:4]]
    return sum(values) / CLK_TCK


def cpu_busy_s(cpu: int) -> float:
    """All busy time of one CPU since boot (everything but idle and iowait), seconds."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{cpu} "):
                values = [int(v) for v in line.split()[1:9]]
                return (sum(values) - values[3] - values[4]) / CLK_TCK
    return float("nan")


def wait_quiet(limit_cores: float = 0.15, sample_s: float = 1.0, max_wait_s: float = 900.0) -> float:
    """Wait until the machine's busy time over `sample_s` is below `limit_cores`; returns the
    seconds waited (gives up after max_wait_s and lets the measurement flag itself)."""
    started = time.monotonic()
    announced = False
    while True:
        a = machine_busy_s()
        time.sleep(sample_s)
        busy = (machine_busy_s() - a) / sample_s
        if busy < limit_cores or time.monotonic() - started > max_wait_s:
            return time.monotonic() - started
        if not announced:
            log(f"machine busy ({busy:.2f} cores by other work): waiting for it to be quiet")
            announced = True


SMOKE = False  # set by run_all --smoke: one attempt, no waiting (nothing is timed then)


def with_retries(measure, accept, attempts: int = 4):
    """measure() until accept(result) or attempts run out; the last result carries `retries`."""
    result = None
    if SMOKE:
        attempts = 1
    for attempt in range(attempts):
        if not SMOKE:
            wait_quiet()
        result = measure()
        if accept(result):
            break
        log(f"background CPU during the measurement: repeating ({attempt + 1}/{attempts})")
    if isinstance(result, dict):
        result["retries"] = attempt
    return result


def quiet_enough(row: dict) -> bool:
    bg = row.get("background_cores")
    return bg is None or bg <= BACKGROUND_LIMIT


def emit(result: dict[str, Any], out: Path | None) -> int:
    """A benchmark script's ending: its JSON result printed, also written to `out` when given, and
    its exit code (0 when the result says it passed)."""
    text = json.dumps(result, indent=2)
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
    return 0 if result["passed"] else 1

"""docs/accuracy.md's first part -- perflab's measurements of the known-cost synthetic SUT
(perflab.accuracy.metrics) -- as Markdown, and the sections other experiments keep."""

from __future__ import annotations

import platform

from perflab.accuracy.metrics import IO_WRITES, SYS_MS, TICK_HZ, USER_MS, sampling_error
from perflab.values import formatted


def _known_vio(result: dict):
    per_write = result["io"].get("requests_per_write")
    return None if per_write is None else IO_WRITES * round(per_write)


def _err(measured, known) -> str:
    error = None if measured is None or not known else measured / known - 1
    return formatted(error, "+.2f", scale=100.0, suffix="%")


def _num(value, digits=3) -> str:
    return formatted(value, f".{digits}f")


#: Sections of docs/accuracy.md measured by other experiments (the known-cost knobs,
#: bench/knob.py) start at this line; `perflab accuracy` rewrites what comes before it only.
KEPT_SECTIONS = "<!-- measured elsewhere: `perflab accuracy` keeps what follows -->"


def with_kept_sections(new_text: str, old_text: str | None) -> str:
    """The regenerated table, followed by the previous file's sections from KEPT_SECTIONS on."""
    if not old_text or KEPT_SECTIONS not in old_text:
        return new_text
    return new_text.rstrip("\n") + "\n\n" + old_text[old_text.index(KEPT_SECTIONS):]


def render_accuracy(result: dict, fingerprint: dict, kept: bool = False) -> str:
    """The page's measured part; `kept`: the runs' reports are stored beside the page
    (`--keep`), so each run id links to its report."""
    known_pbt = USER_MS + SYS_MS

    def cite(run_id: str) -> str:
        return f"[{run_id}](reports/{run_id}/report.md)" if kept else run_id

    lines = [
        "# Accuracy: perflab's measurements against a SUT of known cost",
        "",
        "Regenerate with `perflab accuracy --keep docs/accuracy.md` (about 5 minutes; the runs' reports are kept "
        "in reports/; `--quick` for a short check).",
        "",
        "The SUT is `perflab.sut.synthetic:work`: per transaction it burns "
        f"**{USER_MS:.1f} ms of user CPU** and **{SYS_MS:.1f} ms of system CPU** (loops on its own thread's "
        "CPU clock, ending within microseconds of the target), driven open loop (Poisson arrivals) at "
        "rates chosen for 20% to 90% utilization of the SUT's CPU. A second run adds "
        f"**{IO_WRITES} synchronous (O_DSYNC) 4 KiB overwrites** per transaction for the I/O rows.",
        "",
        f"Machine: {fingerprint.get('cpu_model', '?')}, {fingerprint.get('cores', '?')} CPUs, kernel "
        f"{fingerprint.get('kernel', platform.release())}; {fingerprint.get('placement', '')}.",
        "",
        f"Known values: PBT/CMD (S) = {known_pbt:.3f} ms, EMUL/CMD (S) = {USER_MS:.3f} ms, CP/CMD (S) = "
        f"{SYS_MS:.3f} ms, ITR (S) = 1000 x {result['processors']} / {known_pbt:.3f} = "
        f"{1000 * result['processors'] / known_pbt:.1f} tx/s. The cost is large against the worker "
        "framework's own few tens of microseconds per transaction, which the SUT's processes also spend.",
        "",
        "## CPU per command and ITR (S)",
        "",
        "| target util | UTIL/PROC (S) | ETR (T) | PBT/CMD (S) | err | SUT's own tx CPU | EMUL/CMD (S) | err | ±1 sd | "
        "CP/CMD (S) | err | ±1 sd | ITR (S) | err | PBT/CMD (H) less driver+monitor | err |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    worst = {"pbt": 0.0, "emul": 0.0, "cp": 0.0, "itr": 0.0, "h": 0.0}
    for level in result["levels"]:
        v = level.values
        util = v.get("util_proc_s") or 0.0
        ticks = TICK_HZ * util / 100.0 * result["processors"] * level.window_s
        pbt_h_net = None
        if v.get("busy_sec_h") is not None and v.get("tx_ok"):
            own = (v.get("driver_sec") or 0.0) + (v.get("monitor_sec") or 0.0)
            pbt_h_net = 1000.0 * (v["busy_sec_h"] - own) / v["tx_ok"]
        itr_known = 1000.0 * result["processors"] / known_pbt
        row = [
            f"{level.target_util}%", _num(v.get("util_proc_s"), 1), _num(v.get("etr_t"), 1),
            _num(v.get("pbt_cmd_s")), _err(v.get("pbt_cmd_s"), known_pbt), _num(level.tx_cpu_ms),
            _num(v.get("emul_cmd_s")), _err(v.get("emul_cmd_s"), USER_MS),
            f"{100 * sampling_error(USER_MS / known_pbt, ticks):.1f}%",
            _num(v.get("cp_cmd_s")), _err(v.get("cp_cmd_s"), SYS_MS),
            f"{100 * sampling_error(SYS_MS / known_pbt, ticks):.1f}%",
            _num(v.get("itr_s"), 1), _err(v.get("itr_s"), itr_known),
            _num(pbt_h_net), _err(pbt_h_net, known_pbt),
        ]
        lines.append("| " + " | ".join(row) + " |")
        for key, measured, known in (("pbt", v.get("pbt_cmd_s"), known_pbt), ("emul", v.get("emul_cmd_s"), USER_MS),
                                     ("cp", v.get("cp_cmd_s"), SYS_MS), ("itr", v.get("itr_s"), itr_known),
                                     ("h", pbt_h_net, known_pbt)):
            if measured is not None:
                worst[key] = max(worst[key], abs(measured / known - 1))
    io = result["io"]["values"]
    lines += [
        "",
        "## I/O per command",
        "",
        "| run | ETR (T) | IO BYTES/CMD (S) | known | err | VIO/CMD | device requests per write, measured alone | "
        "known | err |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {result['io']['run_id']} | {_num(io.get('etr_t'), 1)} | {_num(io.get('io_bytes_cmd_s'), 0)} | "
        f"{4096 * IO_WRITES} | {_err(io.get('io_bytes_cmd_s'), 4096 * IO_WRITES)} | {_num(io.get('vio_cmd'))} | "
        f"{_num(result['io'].get('requests_per_write'), 2)} | {_num(_known_vio(result), 2)} | "
        f"{_err(io.get('vio_cmd'), _known_vio(result))} |",
        "",
        "## Summary",
        "",
        f"Largest error over the levels: PBT/CMD (S) {100 * worst['pbt']:.2f}%, ITR (S) {100 * worst['itr']:.2f}%, "
        f"EMUL/CMD (S) {100 * worst['emul']:.2f}%, CP/CMD (S) {100 * worst['cp']:.2f}%, "
        f"PBT/CMD (H) less the driver's and monitor's CPU {100 * worst['h']:.2f}%.",
        "",
        "How to read it:",
        "",
        "- PBT/CMD (S) and ITR (S) come from the SUT cgroup's exact CPU time (cpuacct.usage, ns): their error is the",
        "  framework's own cost per transaction (the worker's pipe I/O and decoding, a few microseconds) plus the",
        "  synthetic SUT's function-call overhead; 'SUT's own tx CPU' is the worker thread's exact CPU clock around",
        "  each call, the per-transaction ground truth.",
        "- EMUL/CMD (S) and CP/CMD (S) split that exact total by the kernel's tick samples (user vs system at each",
        "  250 Hz tick): unbiased, but with the sampling error shown (±1 sd). Longer windows shrink it as 1/sqrt(n).",
        "- PBT/CMD (H) is whole-machine busy time (/proc/stat, both CPUs) per command, less the driver's and the",
        "  monitor's own CPU, which perflab reports separately (DRIVER CPU); what remains above 5 ms is the kernel's",
        "  work for the run (interrupts, pipe wakeups) and other processes on the machine.",
        "- IO BYTES/CMD (S) is the SUT's own storage-write bytes (/proc/<pid>/io) per command: exactly the 4 KiB",
        "  blocks it wrote. VIO/CMD counts completed block-device requests (/proc/diskstats) per command: on this",
        "  virtio disk with a write-back cache each synchronous write is two requests (the data and a cache",
        "  flush), as the isolated measurement beside it shows; other processes' disk activity also lands in it.",
        "- The split's design values are approximate where the total is exact: the system burn's Python loop between",
        "  /dev/zero reads, and the framework's per-transaction work, are user time. That tilts EMUL/CMD (S) up and",
        '  CP/CMD (S) down by a few percent beyond the sampling error; PBT/CMD (S), their sum, is unaffected.',
        '- (H) rows and VIO/CMD are whole-machine: anything else running on the machine lands in them. Regenerate on',
        '  an otherwise idle machine (`perflab accuracy`); the load average at the start is printed below.',
        "",
        f"Load average (1 min) when the experiment started: {result.get('loadavg', 'na')}.",
        "",
        "Runs: " + ", ".join(cite(run_id) for run_id in [level.run_id for level in result["levels"]]
                             + [result["io"]["run_id"]]) + ".",
        "",
    ]
    return "\n".join(lines)

"""The SUT behind an isolation layer: guest vs native, the seeds' VM/ESA question asked of gVisor.

VM/ESA's reports measured an MVS or VSE system run as a guest of CP against the same system run
native: the guest's ITR as a percentage of native, and the processor time split between the
guest's own work (EMUL) and CP's work on its behalf. The modern analog that runs on this machine
is gVisor (`runsc`): a user-space kernel, the Sentry, takes every system call of the program it
sandboxes -- on the systrap platform by seccomp traps, with no KVM -- and serves files through a
second process, the gofer. The program's own instructions run at native speed; what costs is
each system call, page fault and file open that the Sentry handles instead of the host kernel.

`wrap(argv, isolation)` returns the command line that runs a program behind the layer:

    runsc --rootless=true --platform=systrap --network=host --ignore-cgroups
          --root=/run/perflab-runsc do --quiet -- PROGRAM ARGS...

`runsc do` builds a sandbox over the host's root file system (read-only, below an in-memory
overlay: what the program writes stays in the sandbox) and runs the program in it, in the
caller's working directory with its environment. `--ignore-cgroups` leaves the sandbox in the
cgroup it was started in -- the run's SUT cgroup -- so the (S) rows count the layer's CPU with
the program's; `--network=host` gives the sandbox the host's network stack, so a service inside
is reached on 127.0.0.1 as natively (the Sentry still takes each socket call).

COMPONENTS names the sandbox's processes for the (V) rows: the Sentry (`runsc-sandbox`: the
layer's kernel, CP's analog), the gofer (`runsc-gofer`: file access on the layer's behalf) and
runsc itself (the `do` parent that builds and waits for the sandbox). The program's instructions
run in systrap's stub processes, children of the Sentry that carry no runsc name: what is not
one of those three is the program (the guest's EMUL). A service's own components (its
regexes on process names) are kept and classify the stubs where they match.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from perflab.errors import SutFailure
from perflab.tools import find_go_tool
from perflab.workload.model import Isolation

#: where runsc keeps its sandboxes' state (one directory for every run; each sandbox has its own id)
STATE_ROOT = "/run/perflab-runsc"

#: the layer's processes, by their runsc names (searched in comm and command line)
COMPONENTS = {
    "sentry": r"runsc-sandbox",
    "gofer": r"runsc-gofer",
    "runsc": r"(^|/)runsc( |$)",
}


def active(isolation: Isolation | None) -> bool:
    return isolation is not None and isolation.layer != "native"


def runsc_path(isolation: Isolation) -> str:
    found = isolation.runsc or find_go_tool("runsc")
    if found is None or not os.access(found, os.X_OK):
        raise SutFailure("gVisor's runsc was not found (isolation.layer: gvisor): install it with "
                         "`go install gvisor.dev/gvisor/runsc@go` (a pseudo-version of gVisor's go branch; "
                         "docs/real-systems.md, Guest vs native) or name it in isolation.runsc")
    return found


def prefix(isolation: Isolation | None) -> list[str]:
    """What goes before a command line to run it behind the layer (nothing when native)."""
    if not active(isolation):
        return []
    assert isolation is not None
    Path(STATE_ROOT).mkdir(parents=True, exist_ok=True)
    # `runsc do` run as root (not rootless) always builds a network of its own for the sandbox -- a
    # veth pair with a private address, NATed with iptables -- unless the network is `none`; its
    # rootless mode is the one that keeps the host's network (the sandbox still runs as root here,
    # in a user namespace mapped to root).
    rootless = "--rootless=true" if isolation.network == "host" else "--rootless=false"
    return [runsc_path(isolation), rootless, f"--platform={isolation.platform}",
            f"--network={isolation.network}", "--ignore-cgroups", f"--root={STATE_ROOT}", *isolation.options,
            "do", "--quiet", "--"]


def wrap(argv: list[str], isolation: Isolation | None) -> list[str]:
    """The command line that runs `argv` behind the layer (`argv` itself when native)."""
    return prefix(isolation) + list(argv)


def components(isolation: Isolation | None, own: dict[str, str] | None = None) -> dict[str, str]:
    """The (V) components: the layer's processes first, then the SUT's own rules."""
    rules = dict(COMPONENTS) if active(isolation) else {}
    for name, pattern in (own or {}).items():
        rules.setdefault(name, pattern)
    return rules


def describe(isolation: Isolation | None) -> str:
    """The fingerprint's `isolation`: the layer, its version and platform, or `native`."""
    if not active(isolation):
        return "native"
    assert isolation is not None
    runsc = runsc_path(isolation)
    version = _output([runsc, "--version"]).splitlines()[:1] or ["unknown"]
    text = version[0].strip()
    if "VERSION_MISSING" in text:  # built by `go install`: the module's version is in the build info
        go = find_go_tool("go") or "/usr/local/go/bin/go"
        for line in _output([go, "version", "-m", runsc]).splitlines():
            fields = line.split()
            if fields[:2] == ["mod", "gvisor.dev/gvisor"] and len(fields) > 2:
                text = f"runsc gvisor.dev/gvisor {fields[2]}"
    return f"gvisor ({text}; platform {isolation.platform}, network {isolation.network})"


def _output(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({exc})"


#: gVisor's Sentry answers uname(2) and /proc/version with a made-up kernel of its own, whatever the
#: host's: release `4.19.0-gvisor` (older releases: 4.4.0) and this build line.
GVISOR_KERNEL_VERSION = "#1 SMP Sun Jan 10 15:06:54 PST 2016"


def inside_gvisor(proc_version: str) -> bool:
    """Whether a /proc/version text (or `uname -rv`) is gVisor's Sentry's, not a real kernel's."""
    return GVISOR_KERNEL_VERSION in proc_version

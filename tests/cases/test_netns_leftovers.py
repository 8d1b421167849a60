"""A run killed with SIGKILL leaves its namespace and veth pair behind; the next run with the
same addresses must not be refused for ever (CI 2026-11-28: a session ended under a
replication test, and every later run of it failed on 169.254.78.1). What is reclaimed is only
perflab's, only old, and only empty."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from perflab.errors import SutFailure
from perflab.sut.netns import NETNS_DIR, STALE_AFTER_S, NetworkNamespace, namespaces_permitted
from perflab.workload.model import ServiceNetwork

PERMITTED, WHY_NOT = namespaces_permitted()
pytestmark = [pytest.mark.lab,
              pytest.mark.skipif(not PERMITTED, reason=f"network namespaces not permitted here: {WHY_NOT}")]

# Addresses no example or other test uses, so this cannot collide with a run beside it.
SPEC = ServiceNetwork(address="169.254.201.2/30", peer_address="169.254.201.1/30")


@pytest.fixture
def no_wait(monkeypatch):
    """Leftovers count as old at once (a namespace's mount point refuses utime, so its age cannot
    be faked; the young case below keeps the real threshold)."""
    import perflab.sut.netns as netns

    assert STALE_AFTER_S >= 30  # a live run's set-up (namespace, then its server) is never taken for dead
    monkeypatch.setattr(netns, "STALE_AFTER_S", 0.0)


def _exists(ns: NetworkNamespace) -> bool:
    return os.path.exists(os.path.join(NETNS_DIR, ns.name))


def test_an_old_empty_leftover_of_perflab_is_removed_and_the_run_goes_on(no_wait):
    killed, later = NetworkNamespace(SPEC, "killed-run"), NetworkNamespace(SPEC, "later-run")
    killed.create()  # never removed: the run was killed
    try:
        later.create()
        try:
            assert not _exists(killed)
            assert later.reclaimed is not None and killed.name in later.reclaimed
            assert killed.name in later.describe()  # the run's facts say what was removed
            holder = subprocess.run(["ip", "-o", "addr", "show", "to", "169.254.201.1"], capture_output=True,
                                    text=True).stdout.split()
            assert holder[1] == later.host_if  # the address is the new pair's now
        finally:
            later.remove()
    finally:
        killed.created = True
        killed.remove()


@pytest.mark.parametrize("why", ["young", "a process inside"])
def test_a_leftover_that_may_be_a_live_run_s_is_left_alone_and_the_run_refused(why, request):
    live, later = NetworkNamespace(SPEC, f"live-run-{why}"), NetworkNamespace(SPEC, f"later-run-{why}")
    live.create()
    sleeper = None
    try:
        if why == "a process inside":
            request.getfixturevalue("no_wait")
            sleeper = subprocess.Popen(["ip", "netns", "exec", live.name, "sleep", "60"])
            deadline = time.monotonic() + 10
            while not subprocess.run(["ip", "netns", "pids", live.name], capture_output=True,
                                     text=True).stdout.strip():
                assert time.monotonic() < deadline, "the sleeper never entered the namespace"
                time.sleep(0.05)
        with pytest.raises(SutFailure, match="169.254.201.1 is already an address"):
            later.create()
        assert _exists(live) and later.reclaimed is None and not _exists(later)
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
        live.remove()

"""`perflab` whose runs write live.json: the glue that the run lifecycle will replace.

Until the driver creates a LiveWriter itself, this script wraps the driver's progress callback
(perflab.drive.run.set_progress) so that every run the process drives -- a `perflab run`, or
each run of a `perflab study` -- also feeds a LiveWriter for its run directory (found by
wrapping Store.create_run_dir). The SUT's CPU comes from its worker processes (the cgroup is
not visible from here). Usage: python tests/serve/live_cli.py ARGS... (perflab's arguments).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


class LiveHook:
    def __init__(self) -> None:
        self.inner = None          # the progress display the CLI installed, if any
        self.run_dir: Path | None = None
        self.writer = None

    def install(self) -> None:
        import perflab.drive.run as run_module
        from perflab.store.catalog import Store

        created = Store.create_run_dir

        def create_run_dir(store, run_id):
            path = created(store, run_id)
            self.run_dir, self.writer = path, None
            return path

        def set_progress(callback):
            self.inner = callback
            run_module._TICK = self.tick

        Store.create_run_dir = create_run_dir
        run_module.set_progress = set_progress
        run_module._TICK = self.tick

    def tick(self, engine, elapsed: float) -> None:
        if self.inner is not None:
            self.inner(engine, elapsed)
        if self.run_dir is None:
            return
        if self.writer is None:
            from perflab.serve.live import LiveWriter

            config = json.loads((self.run_dir / "run.json").read_text()).get("config") or {}
            self.writer = LiveWriter(self.run_dir, self.run_dir.name, None, getattr(engine.executor, "pids", []),
                                     config.get("processors") or 1)
        self.writer.tick(engine, elapsed)


if __name__ == "__main__":
    LiveHook().install()
    from perflab.cli import main

    sys.argv = ["perflab", *sys.argv[1:]]
    main()

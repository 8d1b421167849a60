"""Pathlength: instructions per transaction (INSTR/CMD (I)), counted under valgrind in a short
pass after the timed run -- the seeds' "pathlength", which their hardware instrumentation
counted and this machine (a KVM guest without a PMU) cannot.

The pass never touches the timed rows: it starts after the window has closed, the monitor has
stopped and the timed workers have exited, and its transactions go to pathlength.parquet, not
transactions.parquet. `count.py` runs it (a fresh SUT, the worker, the table, the run record's
`pathlength`); `draw.py` draws its transactions from the workload's mix and seed; `worker.py` is
the counted worker; an in-process SUT (sqlite, python) is counted per transaction inside that
worker run under callgrind (`inprocess.py`, with `client_request.py` marking where each
transaction starts and ends), a command per process under cachegrind, a PostgreSQL server's
backend between the driver's marker calls with the server under callgrind (`server.py`); `valgrind.py` holds the
command lines and the output formats.
"""

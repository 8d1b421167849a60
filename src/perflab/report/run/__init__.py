"""The report of one run, built once and rendered every way.

`model.build_report` reads a stored run (run.json and its reduction, perflab.reduce.reduce_run)
into a `RunReport` of plain strings and tables; `export` renders it as HTML (`perflab show
--html`, the run page of `perflab serve`), Markdown and JSON, and `terminal` on the terminal
(`perflab show`). Every rendering reads the same rows, so they cannot disagree. The pieces:
`gates` (the study's validity gates applied to the run), `errors` (the failed transactions'
messages), `charts` (per-interval charts), `drivers` (a Ray run's per-driver table).
"""

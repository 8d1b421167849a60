"""`perflab serve`: a local web application over the run store, the live view of runs in
progress (live.json), and the single-run report (`perflab show RUN --html`). See docs/serve.md."""

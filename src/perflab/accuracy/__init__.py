"""How far each study arrangement's answers sit from the truth: repeated studies of systems whose
added cost is known, in every arrangement perflab offers (`perflab accuracy --studies`).

* `cases`      -- the systems under test and their knobs (an added cost a study can dial)
* `experiment` -- runs the matrix (case x arrangement x added cost x repetition), resumable: every
                  study's result is appended to a JSON-lines file as it ends
* `summary`    -- the truth, and per arrangement its bias, coverage, false claims, power and
                  machine time; the bias bound a study in that arrangement then states
* `render`     -- the Markdown section of docs/accuracy.md
"""

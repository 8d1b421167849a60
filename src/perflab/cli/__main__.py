"""`python -m perflab.cli`: the `perflab` command."""

from perflab.cli.main import main

main()

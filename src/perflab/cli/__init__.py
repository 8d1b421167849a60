"""The command line: parsing and dispatch only. Each command's module holds its options and
calls into the stages (`main.py`: run, study, compare, show and the rest; `capacity.py`,
`serve.py`, `agent.py`: their sub-commands; `options.py`: what every command shares). No domain
package imports this one: the stages know nothing of how they are invoked."""

from perflab.cli.main import app, main

__all__ = ["app", "main"]

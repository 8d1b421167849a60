"""The command line: parsing and dispatch only. Each command's module holds its options and
calls into the stages (`main.py`: run, study, compare, show and the rest; `capacity.py`,
`serve.py`, `agent.py`: their sub-commands; `options.py`: what every command shares). No domain
package imports this one: the stages know nothing of how they are invoked."""

from perflab.reduce.memory import one_malloc_arena

one_malloc_arena()  # before any import starts a thread (numpy's, pyarrow's): see its doc

from perflab.cli.main import app, main  # noqa: E402  (after the allocator's setting, on purpose)

__all__ = ["app", "main"]

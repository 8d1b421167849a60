"""What perflab's commands share: one definition of each common option, and the layout of `--help`.

cli/main.py, cli/capacity.py, cli/serve.py and cli/agent.py define commands;
an option more than one of them takes is defined here once (its check included), so
`--store` means and checks the same thing everywhere.

`--help` is laid out as a Python user expects (argparse's way): an option that takes a value
shows a name for it (`--store DIR`, `--users USERS`), a flag shows nothing, an argument its
name; no type tags (`<bool>`, `<str>`) beside them. The help text is Markdown (typer's
"markdown" markup mode): a paragraph's lines are joined and rewrapped to the terminal, so a
docstring's line breaks never break a sentence, and `perflab[ray]` prints as written (Rich
markup would take `[ray]` for a style).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

#: typer's markup mode for every command's help (set on the root app; sub-apps inherit it).
MARKUP_MODE: Final = "markdown"


def _store_location(value: Path | None) -> Path | None:
    from perflab.store.catalog import store_home
    from perflab.store.location import check_store_location

    check_store_location(store_home(value))
    return value


#: The run store: every command that reads or writes runs takes it.
StoreOpt = typer.Option(None, "--store", metavar="DIR", envvar="PERFLAB_HOME", callback=_store_location,
                        help="run store directory (default ./perflab-runs)")


#: The shells typer completes for.
SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def completion_option(action: str):
    """`--show-completion SHELL` (print the script) or `--install-completion SHELL` (add it to
    the shell's start-up file). typer's own pair guesses the shell from the parent process and
    ignores a shell that is named; these take the name, so they also work from scripts."""
    from typer.completion import completion_init, install_callback, show_callback

    completion_init()   # typer's completion classes answer the _PERFLAB_COMPLETE protocol

    def callback(ctx, param, value: str | None):
        if value is None or ctx.resilient_parsing:
            return None
        if value not in SHELLS:
            raise typer.BadParameter(f"expected a shell: {', '.join(SHELLS)}; got {value!r}")
        return (show_callback if action == "show" else install_callback)(ctx, param, value)

    text = {"show": "print the shell completion script for SHELL (bash, zsh, fish, powershell)",
            "install": "install shell completion for SHELL (bash, zsh, fish, powershell) in its start-up file"}
    return typer.Option(None, f"--{action}-completion", metavar="SHELL", callback=callback, expose_value=False,
                        is_eager=True, help=text[action])


#: study and suite: the timing every run of the study (or of each study) takes, whatever its files say.
MeasurementOpt = typer.Option(None, "--measurement", help="override every run's measurement period")
StabilizationOpt = typer.Option(None, "--stabilization", help="override the stabilization period")


#: run and study: drive without the monitors (no (H), (S), (V) rows).
NoMonitorOpt = typer.Option(False, "--no-monitor", help="do not sample machine and SUT counters")


class PerflabGroup(TyperGroup):
    """The root command group: once its commands are built, their parameters are given the
    argparse layout described in the module doc (every subcommand, at any depth)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        plain_parameters(self)


def plain_parameters(command) -> None:
    """Value names instead of type tags for `command`'s parameters and its subcommands'."""
    try:   # typer >= 0.22 carries its own copy of click (click itself may not be installed)
        from typer._click import Context
    except ImportError:
        from click import Context  # type: ignore[assignment]  # the same class, older typer

    context = Context(command, info_name=command.name)
    help_option = command.get_help_option(context)   # made once and kept by the command
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if isinstance(param, TyperOption):
            if param.is_flag or param.count:
                param.metavar = ""
            elif param.metavar is None and not _is_choice(param):
                param.metavar = (param.name or "value").upper()
        elif isinstance(param, TyperArgument):
            if param.metavar is None:
                param.metavar = (param.name or "value").upper()
            # typer has no setting for either: the argument's own methods are replaced.
            param.display_type_rich = lambda ctx: None  # type: ignore[method-assign]  # its name says what it is
            # Usage: `perflab run [OPTIONS] WORKLOAD` (click's way), not typer's `{WORKLOAD}`.
            param._usage_display_name = _usage_name(param)  # type: ignore[method-assign]
    for sub in getattr(command, "commands", {}).values():
        plain_parameters(sub)


def _usage_name(param):
    def name() -> str:
        text = param.metavar + ("..." if param.nargs != 1 and not param.metavar.endswith("...") else "")
        return text if param.required else f"[{text}]"
    return name


def _is_choice(param) -> bool:
    """A choice's values are its best value name (typer shows them)."""
    descriptor = getattr(param, "type_descriptor", None)   # typer >= 0.27
    if descriptor is not None:
        return bool(getattr(descriptor, "is_choice", False))
    return type(getattr(param, "type", None)).__name__ == "Choice"

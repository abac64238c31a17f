"""`scope-temporal`: the command line of scope-temporal.

`main(argv) -> int` is the entry point (the console script calls it; tests call it too).
Each command lives in its own module; this one only assembles them.
"""

from __future__ import annotations

import os
import sys

import click

from scope_temporal.cli import _connect
from scope_temporal.cli.answer import answer
from scope_temporal.cli.chat import chat
from scope_temporal.cli.demo import demo
from scope_temporal.cli.dev import dev
from scope_temporal.cli.inspect import inspect_command
from scope_temporal.cli.listing import list_command
from scope_temporal.cli.replay_check import replay_check
from scope_temporal.cli.resolve import resolve
from scope_temporal.cli.run import run
from scope_temporal.cli.sessions import sessions
from scope_temporal.cli.setup import setup
from scope_temporal.cli.steer import steer
from scope_temporal.cli.submit import submit
from scope_temporal.cli.worker import worker

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class _InOrder(click.Group):
    """Lists commands in the order a newcomer uses them, not alphabetically."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


@click.group(cls=_InOrder, context_settings=CONTEXT)
@click.version_option(package_name="scope-temporal", prog_name="scope-temporal")
def cli() -> None:
    """Run LLM agents durably on Temporal.

    \b
    Start here:
      scope-temporal demo              everything in one command (server, worker, agent)
    \b
    Or piece by piece:
      scope-temporal dev               a local Temporal server with its UI
      scope-temporal worker            serve the agents (the reference app by default)
      scope-temporal run ops "..."     start an Interaction and follow it live
      scope-temporal chat ops          chat in the terminal (a session, resumable by id)
    \b
    Then drive and look at Interactions and sessions:
      list, inspect, steer, answer, resolve, submit, sessions
    \b
    Before deploying a change:
      scope-temporal replay-check      replay recent runs against your current code
    \b
    On a cluster, once per namespace:
      scope-temporal setup             register the search attributes the UI and list use

    Connection options read TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, SCOPE_TASK_QUEUE (and
    TEMPORAL_API_KEY, TEMPORAL_TLS_CERT/KEY/CA for a secured cluster).
    """


for command in (
    demo,
    dev,
    worker,
    run,
    chat,
    list_command,
    inspect_command,
    steer,
    answer,
    resolve,
    sessions,
    submit,
    replay_check,
    setup,
):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with `argv` (default: the process's arguments); return the exit code.

    Run as the program itself (`argv` None, as the console script does) after a command
    connected to Temporal, the process ends with `os._exit`: the Temporal client's native
    runtime threads can crash CPython's finalization ("PyGILState_Release: thread state
    must be current", temporalio/sdk-python#300), turning a clean exit into SIGABRT.
    """
    code = _run(argv)
    if argv is None and _connect.connected():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _run(argv: list[str] | None) -> int:
    try:
        result = cli.main(args=argv, prog_name="scope-temporal", standalone_mode=False)
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 1
    except KeyboardInterrupt:
        click.echo("\ninterrupted", err=True)
        return 130
    return result if isinstance(result, int) else 0


__all__ = ["cli", "main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""`scope-temporal run`: start an Interaction and follow it live."""

from __future__ import annotations

import asyncio

import click

from scope_temporal.cli._answers import Terminal
from scope_temporal.cli._connect import Connection, connection_options, has_worker, runs_async
from scope_temporal.cli._follow import Follower, print_outcome
from scope_temporal.errors import ScopeError


@click.command(short_help="Start an Interaction and follow it live, answering its questions.")
@click.argument("definition")
@click.argument("prompt")
@click.option(
    "--id", "workflow_id", default=None, help="Workflow id (default: DEFINITION-<random>)."
)
@click.option("--detach", is_flag=True, help="Start it, print the id and return; do not follow.")
@click.option("--yes", is_flag=True, help="Approve approval requests automatically.")
@connection_options
@runs_async
async def run(
    definition: str,
    prompt: str,
    workflow_id: str | None,
    detach: bool,
    yes: bool,
    connection: Connection,
) -> int:
    """Start an Interaction of DEFINITION with PROMPT and follow it live.

    Shows each model call and what it decided, tool calls and delegates with their status,
    steers and validator feedback. When a tool asks for input you answer at the terminal:
    the answer is checked against the tool's JSON schema and asked again if it does not fit.
    When an outcome is unknown, it says so and prints the exact `resolve` command. A worker
    must be serving the task queue (`scope-temporal worker`).

    \b
    Example:
      scope-temporal run ops "checkout returns 502 errors since 09:12, investigate"

    Exit code: 0 when the Interaction completes, 1 when it fails or is cancelled.
    """
    scope = await connection.scope()
    try:
        handle = await scope.start(definition, prompt, id=workflow_id)
    except ScopeError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"started {handle.id} ({definition}) on task queue {connection.task_queue!r}")
    if await has_worker(scope.client, connection.task_queue) is False:
        click.echo(
            f"  no worker is serving task queue {connection.task_queue!r} yet: start one "
            "(scope-temporal worker); the Interaction waits for it"
        )
    if detach:
        click.echo(f"follow it with: scope-temporal inspect {handle.id}")
        return 0
    try:
        follower = Follower(
            handle, answer=Terminal(auto_approve=yes), command_args=connection.args()
        )
        outcome = await follower.follow()
    except asyncio.CancelledError:  # Ctrl-C
        click.echo(
            f"\nstopped following; {handle.id} goes on. Look at it with: "
            f"scope-temporal inspect {handle.id}"
        )
        raise
    print_outcome(outcome)
    return 0 if outcome.status == "completed" else 1

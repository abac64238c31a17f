"""`scope-temporal list`: the most recent Interactions."""

from __future__ import annotations

import click

from scope_temporal.cli._connect import Connection, run_async, server_options
from scope_temporal.errors import ConfigurationError


@click.command("list", short_help="List recent Interactions and their status.")
@click.option("--limit", default=20, show_default=True, help="At most this many.")
@click.option(
    "--query",
    default=None,
    metavar="VISIBILITY-QUERY",
    help="Extra filter, e.g. \"ExecutionStatus = 'Running'\" or \"ScopeDefinition = 'ops'\".",
)
@click.option(
    "--needs-attention",
    is_flag=True,
    help="Only runs that wait for a person: an answer (waiting_input) or an unknown "
    "outcome to resolve (unknown), anywhere in their tree.",
)
@server_options
def list_command(
    limit: int, query: str | None, needs_attention: bool, connection: Connection
) -> int:
    """List the most recent root Interactions (newest first) with their status.

    STATUS is Temporal's (running, completed, ...); NEEDS says what the run's ScopeStatus
    search attribute holds for its whole tree: running, waiting_input, unknown, paused,
    completed, failed or canceled (`-` where the attribute is not registered: run
    `scope-temporal setup`).

    \b
    Examples:
      scope-temporal list
      scope-temporal list --needs-attention
      scope-temporal list --query "ExecutionStatus = 'Running'"
    """
    return run_async(_list(limit, query, needs_attention, connection))


async def _list(
    limit: int, query: str | None, needs_attention: bool, connection: Connection
) -> int:
    scope = await connection.scope()
    try:
        found = await scope.list(query=query, limit=limit, needs_attention=needs_attention)
    except ConfigurationError as error:
        raise click.ClickException(error.message) from None
    if not found:
        click.echo(
            "no interaction needs a person"
            if needs_attention
            else 'no interactions yet (start one: scope-temporal run ops "...")'
        )
        return 0
    width = max(len(item.id) for item in found)
    click.echo(f"{'ID':<{width}}  {'STATUS':<10}  {'NEEDS':<13}  STARTED")
    for item in found:
        started = item.start_time[:19].replace("T", " ")
        needs = item.scope_status or "-"
        click.echo(f"{item.id:<{width}}  {item.status:<10}  {needs:<13}  {started}")
    if needs_attention:
        click.echo("see what each one needs: scope-temporal inspect ID")
    return 0

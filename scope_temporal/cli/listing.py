"""`scope-temporal list`: the most recent Interactions."""

from __future__ import annotations

import click

from scope_temporal.cli._connect import Connection, run_async, server_options


@click.command("list", short_help="List recent Interactions and their status.")
@click.option("--limit", default=20, show_default=True, help="At most this many.")
@click.option(
    "--query",
    default=None,
    metavar="VISIBILITY-QUERY",
    help="Extra filter, e.g. \"ExecutionStatus = 'Running'\" or \"ScopeDefinition = 'ops'\".",
)
@server_options
def list_command(limit: int, query: str | None, connection: Connection) -> int:
    """List the most recent root Interactions (newest first) with their status.

    \b
    Examples:
      scope-temporal list
      scope-temporal list --query "ExecutionStatus = 'Running'"
    """
    return run_async(_list(limit, query, connection))


async def _list(limit: int, query: str | None, connection: Connection) -> int:
    scope = await connection.scope()
    found = await scope.list(query=query, limit=limit)
    if not found:
        click.echo('no interactions yet (start one: scope-temporal run ops "...")')
        return 0
    width = max(len(item.id) for item in found)
    click.echo(f"{'ID':<{width}}  {'STATUS':<10}  STARTED")
    for item in found:
        started = item.start_time[:19].replace("T", " ")
        click.echo(f"{item.id:<{width}}  {item.status:<10}  {started}")
    return 0

"""`scope-temporal list`: the most recent Interactions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from scope_temporal.cli._connect import Connection, runs_async, server_options
from scope_temporal.errors import ConfigurationError

T = TypeVar("T")


def listing_options(example: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """`--limit` and `--query` (its help showing `example`) and the server options."""

    def decorate(fn: Callable[..., T]) -> Callable[..., T]:
        limit = click.option("--limit", default=20, show_default=True, help="At most this many.")
        query = click.option(
            "--query",
            default=None,
            metavar="VISIBILITY-QUERY",
            help=f"Extra filter, e.g. {example}.",
        )
        return limit(query(server_options(fn)))

    return decorate


@click.command("list", short_help="List recent Interactions and their status.")
@listing_options("\"ExecutionStatus = 'Running'\" or \"ScopeDefinition = 'ops'\"")
@click.option(
    "--needs-attention",
    is_flag=True,
    help="Only runs that wait for a person: an answer (waiting_input) or an unknown "
    "outcome to resolve (unknown), anywhere in their tree.",
)
@runs_async
async def list_command(
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
    echo_table(
        ("ID", "STATUS", "NEEDS", "STARTED"),
        [
            (i.id, i.status, i.scope_status or "-", i.start_time[:19].replace("T", " "))
            for i in found
        ],
    )
    if needs_attention:
        click.echo("see what each one needs: scope-temporal inspect ID")
    return 0


def echo_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """Print `rows` under `headers`, each column as wide as its widest cell."""
    widths = [max(len(row[n]) for row in [headers, *rows]) for n in range(len(headers))]
    for row in [headers, *rows]:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())

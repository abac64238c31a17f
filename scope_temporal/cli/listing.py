"""`scope-temporal list`: the most recent Interactions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from scope_temporal.cli._connect import Connection, run_async, server_options

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
    echo_table(
        ("ID", "STATUS", "STARTED"),
        [(i.id, i.status, i.start_time[:19].replace("T", " ")) for i in found],
    )
    return 0


def echo_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """Print `rows` under `headers`, each column as wide as its widest cell."""
    widths = [max(len(row[n]) for row in [headers, *rows]) for n in range(len(headers))]
    for row in [headers, *rows]:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())

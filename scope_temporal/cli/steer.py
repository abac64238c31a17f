"""`scope-temporal steer`: send a user message to a running Interaction."""

from __future__ import annotations

import click

from scope_temporal.cli._connect import Connection, runs_async, server_options
from scope_temporal.errors import ScopeError


@click.command(short_help="Send a user message to a running Interaction.")
@click.argument("interaction_id")
@click.argument("signal_id")
@click.argument("text")
@server_options
@runs_async
async def steer(interaction_id: str, signal_id: str, text: str, connection: Connection) -> int:
    """Send TEXT as a user message to the Interaction INTERACTION_ID.

    It is applied before the next model call (never in the middle of one). SIGNAL_ID
    makes it idempotent: sending the same id and text again changes nothing; the same id
    with another text is refused.

    \b
    Example:
      scope-temporal steer ops-1a2b3c note-1 "do not restart anything, just report"
    """
    scope = await connection.scope()
    try:
        accepted = await scope.get_handle(interaction_id).steer(signal_id, text)
    except ScopeError as error:
        raise click.ClickException(f"steer refused: {error}") from None
    if accepted:
        click.echo(f"steer {signal_id!r} queued: applied before the next model call")
    else:
        click.echo(f"steer {signal_id!r} was already received; nothing changed")
    return 0

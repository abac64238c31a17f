"""`scope-temporal submit`: start a background tool as a task of a running Interaction."""

from __future__ import annotations

import json
from typing import Any

import click

from scope_temporal.cli._connect import Connection, runs_async, server_options
from scope_temporal.errors import ScopeError


@click.command(short_help="Start a background tool as a task of a running Interaction.")
@click.argument("interaction_id")
@click.argument("tool")
@click.argument("arguments", default="{}")
@click.option("--key", help="Names the task; the same key and arguments again start nothing.")
@server_options
@runs_async
async def submit(
    interaction_id: str, tool: str, arguments: str, key: str | None, connection: Connection
) -> int:
    """Start background tool TOOL with ARGUMENTS (a JSON object) as a task of the
    Interaction INTERACTION_ID, checked as the model's call of it would be (schema,
    permission, the tool's own validation); nothing starts if it is refused. Its task
    id is INTERACTION_ID/task/submit/KEY; follow it with `inspect`.

    \b
    Example:
      scope-temporal submit ops-1a2b3c export_logs '{"services": ["payments-db"]}' --key ev-1
    """
    try:
        value: Any = json.loads(arguments)
    except ValueError as error:
        raise click.BadParameter(f"not JSON: {error}", param_hint="ARGUMENTS") from None
    if not isinstance(value, dict):
        raise click.BadParameter("must be a JSON object", param_hint="ARGUMENTS")
    scope = await connection.scope()
    try:
        task_id = await scope.get_handle(interaction_id).submit_task(tool, value, key=key)
    except ScopeError as error:
        raise click.ClickException(f"submit refused: {error}") from None
    click.echo(f"task {task_id} submitted: follow it with scope-temporal inspect {interaction_id}")
    return 0

"""`scope-temporal answer`: answer a tool's input request (e.g. an approval)."""

from __future__ import annotations

import uuid

import click

from scope_temporal.cli._answers import parse_answer
from scope_temporal.cli._connect import Connection, runs_async, server_options
from scope_temporal.cli._render import schema_hint
from scope_temporal.cli._snapshots import require_snapshot
from scope_temporal.errors import ScopeError


@click.command(short_help="Answer a tool's input request (e.g. an approval) with JSON.")
@click.argument("interaction_id")
@click.argument("wait_id")
@click.argument("answer_json", metavar="JSON")
@click.option("--answer-id", default=None, help="Idempotency id of this answer (default: random).")
@server_options
@runs_async
async def answer(
    interaction_id: str,
    wait_id: str,
    answer_json: str,
    answer_id: str | None,
    connection: Connection,
) -> int:
    """Answer the input request WAIT_ID of a tool in INTERACTION_ID with JSON.

    The wait is looked up in the Interaction's snapshot (`scope-temporal inspect` lists
    open waits with their schema); the answer is checked against the schema before it is
    sent, and the tool is entered again with it. For approvals, `y` / `n` work too; a
    call waiting for approval (an approval policy's wait) takes `y` (approve once), `a`
    (approve the tool for the session) or `n` (deny), each with an optional reason.

    \b
    Example:
      scope-temporal answer ops-1a2b3c ops-1a2b3c/tool/4/0/wait/1 '{"approved": true, "note": "ok"}'
      scope-temporal answer ops-1a2b3c ops-1a2b3c/tool/2/0/wait/approval 'n not in prod'
    """
    scope = await connection.scope()
    handle = scope.get_handle(interaction_id)
    tree = await require_snapshot(handle)
    waits = tree.pending_tool_inputs
    pending = next((w for w in waits if w.wait_id == wait_id), None)
    if pending is None:
        open_waits = ", ".join(w.wait_id for w in waits) or "none"
        raise click.ClickException(
            f"{interaction_id} has no open wait {wait_id!r} (open waits: {open_waits})"
        )
    value, problem = parse_answer(answer_json, pending.response_schema)
    if problem is not None:
        raise click.ClickException(
            f"the answer {problem}\n  expected: {schema_hint(pending.response_schema)}"
        )
    try:
        await handle.answer(pending, answer_id or f"cli-{uuid.uuid4().hex[:8]}", value)
    except ScopeError as error:
        raise click.ClickException(f"answer refused: {error}") from None
    click.echo(f"answered {wait_id}; the tool continues")
    return 0

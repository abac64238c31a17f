"""`scope-temporal resolve`: settle an unknown effect with what the host established, or
send an unknown model call again (`--retry`)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from pydantic import ValidationError

from scope_temporal.chat import Response, ToolResult
from scope_temporal.cli._connect import Connection, run_async, server_options
from scope_temporal.cli._snapshots import require_snapshot
from scope_temporal.client import InteractionHandle
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.effects import (
    ModelEffectRequest,
    ModelSettlement,
    ToolEffectRequest,
    ToolSettlement,
)
from scope_temporal.interaction.snapshot import UnknownEffect
from scope_temporal.models import reply
from scope_temporal.settle import settle_model_result, settle_tool_result
from scope_temporal.tools.outcome import Disposition


@click.command(short_help="Settle an unknown effect (or send a model call again).")
@click.argument("interaction_id")
@click.argument("effect_id")
@click.option(
    "--result",
    "result_text",
    metavar="TEXT|JSON",
    help="What the call produced: a tool's model-visible result text, or a model's "
    "reply text or Response JSON.",
)
@click.option(
    "--file",
    "result_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read the result from a file instead.",
)
@click.option(
    "--disposition",
    type=click.Choice(["succeeded", "failed", "rejected"]),
    default=None,
    help="Tool effects: how the call ended [default: succeeded].",
)
@click.option(
    "--advertise",
    multiple=True,
    metavar="TOOL",
    help="Tool effects: deferred tools the call advertised (repeatable).",
)
@click.option(
    "--retry",
    is_flag=True,
    help="Model effects: send the request again as a new call instead (the unknown one "
    "is recorded as superseded; it may have cost tokens). Never for tool effects.",
)
@server_options
def resolve(
    interaction_id: str,
    effect_id: str,
    result_text: str | None,
    result_file: Path | None,
    disposition: str | None,
    advertise: tuple[str, ...],
    retry: bool,
    connection: Connection,
) -> int:
    """Settle the unknown effect EFFECT_ID of INTERACTION_ID.

    An effect is unknown when nobody can prove what happened (a timeout, a lost worker, a
    garbled reply). scope-temporal never re-runs it: investigate (did the restart happen?
    what did the model answer?) and settle it with what you found. The settlement is built
    from the request the snapshot retained and refused if it does not match it.

    A model call has no effect beyond its cost, so for an unknown model call you may
    instead send the same request again with --retry: a new call (its own effect id), the
    unknown one recorded as superseded. A tool call is never sent again.

    \b
    Examples:
      scope-temporal resolve ops-1a2b ops-1a2b/call/4/0 --result "payments-worker restarted"
      scope-temporal resolve ops-1a2b ops-1a2b/call/4/0 --result "no restart" --disposition failed
      scope-temporal resolve ops-1a2b ops-1a2b/model/5 --file reply.json
      scope-temporal resolve ops-1a2b ops-1a2b/model/5 --retry
    """
    if retry:
        if result_text is not None or result_file is not None or disposition or advertise:
            raise click.UsageError("--retry takes no result, disposition or advertisement")
        return run_async(_retry(interaction_id, effect_id, connection))
    if (result_text is None) == (result_file is None):
        raise click.UsageError(
            "give the result with exactly one of --result or --file (or --retry)"
        )
    content = result_text if result_text is not None else result_file.read_text()  # type: ignore[union-attr]
    return run_async(
        _resolve(interaction_id, effect_id, content, disposition, advertise, connection)
    )


async def _unknown(
    interaction_id: str, effect_id: str, connection: Connection
) -> tuple[InteractionHandle, UnknownEffect]:
    scope = await connection.scope()
    handle = scope.get_handle(interaction_id)
    tree = await require_snapshot(handle)
    unknown = next((u for u in tree.unknown_effects if u.effect_id == effect_id), None)
    if unknown is None:
        held = ", ".join(u.effect_id for u in tree.unknown_effects) or "none"
        raise click.ClickException(
            f"{interaction_id} holds no unknown effect {effect_id!r} (unknown effects: {held})"
        )
    return handle, unknown


async def _retry(interaction_id: str, effect_id: str, connection: Connection) -> int:
    handle, unknown = await _unknown(interaction_id, effect_id, connection)
    try:
        await handle.retry_model_call(unknown)
    except ScopeError as error:
        raise click.ClickException(f"retry refused: {error}") from None
    click.echo(
        f"sent the request of {effect_id} again as a new call ({effect_id} is superseded); "
        f"the interaction continues (scope-temporal inspect {interaction_id})"
    )
    return 0


async def _resolve(
    interaction_id: str,
    effect_id: str,
    content: str,
    disposition: str | None,
    advertise: tuple[str, ...],
    connection: Connection,
) -> int:
    handle, unknown = await _unknown(interaction_id, effect_id, connection)
    try:
        settlement = settlement_for(unknown, content, disposition, advertise)
        await handle.resolve(unknown, settlement)
    except ScopeError as error:
        raise click.ClickException(f"settlement refused: {error}") from None
    kind = settlement.outcome.kind if isinstance(settlement, ToolSettlement) else "a reply"
    click.echo(
        f"settled {effect_id} as {kind}; the interaction continues "
        f"(scope-temporal inspect {interaction_id})"
    )
    return 0


def settlement_for(
    unknown: UnknownEffect, content: str, disposition: str | None, advertise: tuple[str, ...]
) -> ModelSettlement | ToolSettlement:
    """The host's settlement, from the retained request and what the user typed.

    Raises:
        click.UsageError: options that do not fit the effect's kind or invalid Response JSON.
        SettlementMismatch: it does not belong to the request.
    """
    request = unknown.request
    if isinstance(request, ToolEffectRequest):
        chosen: Disposition = "succeeded"
        if disposition == "failed":
            chosen = "failed"
        elif disposition == "rejected":
            chosen = "rejected"
        result = ToolResult(
            call_id=request.call.id,
            name=request.call.name,
            content=content,
            is_error=chosen != "succeeded",
        )
        return settle_tool_result(request, result, chosen, advertise)
    assert isinstance(request, ModelEffectRequest)
    if disposition is not None or advertise:
        raise click.UsageError("--disposition and --advertise apply to tool effects only")
    return settle_model_result(request, _response(content), request.messages)


def _response(content: str) -> Response:
    """Response JSON (`{"message": ..., "finish_reason": ...}`), or plain text: a final reply."""
    try:
        data = json.loads(content)
    except ValueError:
        return reply.text(content)
    if isinstance(data, dict) and "message" in data:
        try:
            return Response.model_validate(data)
        except ValidationError as error:
            raise click.UsageError(f"not a valid Response: {error}") from None
    return reply.text(data if isinstance(data, str) else content)

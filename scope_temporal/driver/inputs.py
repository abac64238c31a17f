"""What the drivers check before an input reaches a machine, or a command leaves one:
payload limits (refuse what the engine would reject, never loop), and where a host's
settlement belongs.

The limit is the one the Interaction recorded when it started (`RunSettings`), so a
replay decides as the first run did. See `scope_temporal.payload_limits` for the policy:
an input over the limit is refused (code `interaction.payload.too_large`), a command
over it fails the Interaction with that code instead of failing workflow tasks forever.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from scope_temporal import errors
from scope_temporal.errors import InvalidSignal
from scope_temporal.interaction.effects import ModelResend, ModelSettlement, ToolSettlement
from scope_temporal.payload_limits import size_of, too_large
from scope_temporal.payloads import ResolveInput

S = TypeVar("S", ModelSettlement, ToolSettlement)


def check_size(payload: BaseModel, what: str, limit: int) -> None:
    """Refuse an input over the limit.

    Raises:
        InvalidSignal: code `interaction.payload.too_large`.
    """
    refuse_over(what, size_of(payload), limit, "It was refused; send less.")


def check_steer_room(queued_bytes: int, payload: BaseModel, limit: int) -> None:
    """Refuse a steer that would put the next model call over the limit (`queued_bytes`:
    what that call carries already, its framing included).

    Raises:
        InvalidSignal: code `interaction.payload.too_large`.
    """
    check_size(payload, "The steer", limit)
    refuse_over(
        "With this steer, the next model request",
        queued_bytes + size_of(payload),
        limit,
        "The steer was refused; send a shorter one.",
    )


def refuse_over(what: str, size: int, limit: int, advice: str) -> None:
    """Raise InvalidSignal (`interaction.payload.too_large`) if `size` is over `limit`."""
    if size > limit:
        raise InvalidSignal(too_large(what, size, limit, advice), code=errors.PAYLOAD_TOO_LARGE)


def oversized(payload: BaseModel, what: str, limit: int, advice: str) -> str | None:
    """Why a command carrying `payload` may not be sent (None: it fits)."""
    size = size_of(payload)
    return None if size <= limit else too_large(what, size, limit, advice)


def settlement_for(input: ResolveInput, kind: type[S], limit: int) -> S:
    """The input's settlement, if it is of the `kind` this process holds.

    Raises:
        InvalidSignal: over the limit. SettlementMismatch: another kind of settlement.
    """
    check_size(input, "The settlement", limit)
    settlement = input.settlement
    if not isinstance(settlement, kind):
        where = "ToolCall process" if kind is ModelSettlement else "Interaction"
        raise errors.SettlementMismatch(
            f"A {settlement.kind} settlement must be sent to its {where} (unknown.process_id)."
        )
    return settlement


def model_settlement_for(input: ResolveInput, limit: int) -> ModelSettlement | ModelResend:
    """The input's settlement of a model Effect (an Interaction holds those): a response,
    or the choice to send the request again.

    Raises:
        InvalidSignal: over the limit. SettlementMismatch: a tool call's settlement.
    """
    check_size(input, "The settlement", limit)
    settlement = input.settlement
    if isinstance(settlement, ToolSettlement):
        raise errors.SettlementMismatch(
            "A tool settlement must be sent to its ToolCall process (unknown.process_id)."
        )
    return settlement


__all__ = [
    "check_size",
    "check_steer_room",
    "model_settlement_for",
    "oversized",
    "refuse_over",
    "settlement_for",
]

"""Payload limits inside the workflow: refuse a command Temporal would reject, never loop."""

from __future__ import annotations

from pydantic import BaseModel

from scope_temporal import errors
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.payload_limits import size_of, too_large
from scope_temporal.workflows import serving


def refuse_oversized(
    machine: InteractionMachine, payload: BaseModel, what: str, advice: str
) -> bool:
    """Fail the Interaction (`interaction.payload.too_large`) if `payload` is over the limit.

    Returns:
        True if it was refused (the machine has failed); False if it may be sent.
    """
    limit = serving.current().payload_limit
    size = size_of(payload)
    if size <= limit:
        return False
    machine.fail(errors.PAYLOAD_TOO_LARGE, too_large(what, size, limit, advice))
    return True

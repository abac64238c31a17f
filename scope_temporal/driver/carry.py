"""Continue-as-new of an Interaction run, on any engine: what the next run carries, and
whether it fits.

The next run's input carries the whole state (context, counters, steer mailbox), the
settings the first run recorded, and where the tree's events go. It must fit under the
payload limit: if not (a huge conversation and no external storage), the run goes on
instead, or fails once its history nears Temporal's limits (`history_limits`); the check
is repeated only every `RETRY_CALLS` model calls, so it never costs a copy per round.
"""

from __future__ import annotations

from scope_temporal import errors
from scope_temporal.driver.history_limits import refuse_carry
from scope_temporal.driver.transport import InteractionTransport
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.payloads import InteractionCarry, InteractionInput

RETRY_CALLS = 20


def carried(
    input: InteractionInput, machine: InteractionMachine, carry: InteractionCarry
) -> InteractionInput:
    """The next run's input, continuing the run that started from `input`: its state, and
    `carry` (see `InteractionDriver._carried`)."""
    return InteractionInput(
        definition=input.definition,
        track_status=input.track_status,
        continue_as_new_every=input.continue_as_new_every,
        state=machine.carried_state,
        carry=carry,
        route=input.route,
    )


_LATER_FIELDS = {"carry": {"context_digest", "mcp_sessions"}}
"""Fields of the next run's input this release added. The fit is decided on the bytes
an earlier release measured: a replay of its history must decide alike."""


def _carried_size(next_input: InteractionInput) -> int:
    """Bytes of `next_input`'s long JSON form, as `size_of` measured it before
    `_LATER_FIELDS` were added (the payload itself is written compact, see `wire`)."""
    return len(next_input.model_dump_json(exclude=_LATER_FIELDS).encode())


class CarryCheck:
    """Whether the next run's input fits, checked at most every `RETRY_CALLS` model
    calls once it did not."""

    def __init__(self) -> None:
        self._checked_until = 0

    def fits(
        self,
        machine: InteractionMachine,
        next_input: InteractionInput,
        limit: int,
        host: InteractionTransport,
    ) -> bool:
        """Whether `next_input` fits; if not, warn, or fail the machine with
        `interaction.state.too_large` when the run's history nears Temporal's limits."""
        if machine.model_calls_started < self._checked_until:
            return False
        size = _carried_size(next_input)
        if size <= limit:
            return True
        self._checked_until = machine.model_calls_started + RETRY_CALLS
        refused = refuse_carry(size, limit, host.history_usage())
        if refused.fail:
            machine.fail(errors.STATE_TOO_LARGE, refused.message)
        else:
            host.warn(refused.message)
        return False


__all__ = ["RETRY_CALLS", "CarryCheck", "carried"]

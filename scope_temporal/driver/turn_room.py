"""What a turn's model call will carry across the engine, measured before it runs.

A message a session takes, or a steer a turn takes, must fit the model call that carries
it: the `scope.model` input holds the new messages plus its framing (ids, options, refs).
These measure that input exactly as the Interaction will build it, so a refusal happens
when the message is sent (typed, nothing changed), never as a turn failing later.
"""

from __future__ import annotations

from collections.abc import Sequence

from scope_temporal.chat import Message
from scope_temporal.context_refs import EMPTY_REF, BaseRef
from scope_temporal.definition import Definition
from scope_temporal.ids import model_effect_id
from scope_temporal.interaction.effects import ModelEffectRequest
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.payload_limits import size_of
from scope_temporal.payloads import ModelActivityInput


def model_input_size(
    definition: Definition,
    process_id: str,
    messages: Sequence[Message],
    *,
    base: BaseRef | None,
    applied: Sequence[str] = (),
    model_call_seq: int = 1,
    events_to: str | None = None,
) -> int:
    """JSON bytes of the `scope.model` input of a call of `definition` by `process_id`
    sending `messages` as new (a turn's first call: its opening messages), having applied
    the steers `applied`."""
    request = ModelEffectRequest(
        definition=definition.name,
        digest=definition.digest,
        process_id=process_id,
        effect_id=model_effect_id(process_id, model_call_seq),
        model_call_seq=model_call_seq,
        model=definition.model,
        messages=tuple(messages),
        tools=(),
        options=definition.options,
        context_reducer=definition.context_reducer,
        applied_signals=tuple(applied),
        base=base,
        instructions=definition.instructions or None if base is not None else None,
    )
    payload = ModelActivityInput.of(
        request,
        prefix=base.ref if base is not None else EMPTY_REF,
        advertised=(),
        heartbeat=definition.model_heartbeat_timeout,
        events_to=events_to or process_id,
    )
    return size_of(payload)


def next_call_bytes(machine: InteractionMachine, events_to: str) -> int:
    """JSON bytes the Interaction's next model call would carry with the steers queued so
    far: the messages it has not sent, settled results and steers
    (`queued_message_bytes`), plus the call's framing."""
    return machine.queued_message_bytes + model_input_size(
        machine.definition,
        machine.process_id,
        (),
        base=machine.base,
        model_call_seq=machine.model_calls_started + 1,
        events_to=events_to,
    )


__all__ = ["model_input_size", "next_call_bytes"]

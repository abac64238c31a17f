"""The start of a model turn: the steers queued so far enter the context, and the
request is built (a retained request: an unknown outcome is settled from exactly it).

Runs inside the machine's transition; the machine assigns the phase.
"""

from __future__ import annotations

from scope_temporal import errors
from scope_temporal.definition import Definition
from scope_temporal.ids import model_effect_id
from scope_temporal.interaction import notices, rules
from scope_temporal.interaction.effects import ModelEffectRequest
from scope_temporal.interaction.state import InteractionState, PendingModel
from scope_temporal.outputs import Failure


def begin(definition: Definition, s: InteractionState) -> ModelEffectRequest | Failure:
    """The next model call's request, now in flight; or why no model call may start
    (the limit of model calls or the token budget is reached, or the manifest cannot be
    built)."""
    started = s.next_model_call_seq - 1
    if s.max_model_calls is not None and started >= s.max_model_calls:
        return Failure.of(
            errors.LIMIT_MODEL_CALLS,
            f"The model was called {started} times, the limit of this Interaction "
            f"(max_model_calls={s.max_model_calls}); it had not completed.",
        )
    budget, used = definition.max_total_tokens, s.usage
    if budget is not None and used.total_tokens >= budget:
        return Failure.of(
            errors.LIMIT_TOKENS,
            f"The model calls of this Interaction (delegates included) used {used}, its "
            f"budget is max_total_tokens={budget:,}; no further model call was made after "
            f"{started} call(s).",
        )
    manifest = rules.manifest(definition, s.advertised)
    if isinstance(manifest, str):
        return Failure.of(errors.HOST_FAILED, manifest)
    mailbox = notices.live(s.mailbox, s.context)  # a notification the model read: dropped
    applied = [envelope.signal_id for envelope in mailbox]
    for envelope in mailbox:
        s.context.extend(envelope.messages)
    s.mailbox = []
    s.applied_signals.extend(applied)
    seq = s.next_model_call_seq
    s.next_model_call_seq += 1
    request = ModelEffectRequest(
        definition=s.definition,
        digest=s.digest,
        process_id=s.process_id,
        effect_id=model_effect_id(s.process_id, seq),
        model_call_seq=seq,
        model=definition.model,
        messages=tuple(s.context),
        tools=manifest,
        options=s.options if s.options is not None else definition.options,
        context_reducer=definition.context_reducer,
        applied_signals=tuple(applied),
        base=s.base,
        instructions=s.instructions,
        incarnation=s.incarnation,
    )
    s.model = PendingModel(request=request, emitted=True)
    return request


__all__ = ["begin"]

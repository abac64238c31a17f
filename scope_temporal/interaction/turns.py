"""The start of a model turn: the steers queued so far enter the context, and the
request is built (a retained request: an unknown outcome is settled from exactly it).

Steers that would put the request over what the engine can carry (the driver's `Fits`)
wait, in arrival order, for a later call of the same turn: a steer accepted while a model
call ran was measured against the next call as it stood then, and the model's answer (its
tool calls and their results) may have filled that call since. A call that exists only to
apply steers (the model had already answered) takes at least one.

Runs inside the machine's transition; the machine assigns the phase.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scope_temporal import errors
from scope_temporal.definition import Definition
from scope_temporal.ids import model_effect_id
from scope_temporal.interaction import notices, rules
from scope_temporal.interaction.effects import ModelEffectRequest
from scope_temporal.interaction.state import InteractionState, PendingModel, SteerEnvelope
from scope_temporal.outputs import Failure

Fits = Callable[[ModelEffectRequest], bool]
"""Whether a model request can cross the engine (the driver measures its input)."""


def begin(
    definition: Definition, s: InteractionState, fits: Fits | None = None
) -> ModelEffectRequest | Failure:
    """The next model call's request, now in flight; or why no model call may start
    (the limit of model calls or the token budget is reached, or the manifest cannot be
    built). With `fits`, the steers applied are the most, in arrival order, that fit."""
    started = s.next_model_call_seq - 1 + s.sampled_calls  # an MCP server's sampling too
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
    seq = s.next_model_call_seq

    def request(steers: Sequence[SteerEnvelope]) -> ModelEffectRequest:
        return ModelEffectRequest(
            definition=s.definition,
            digest=s.digest,
            process_id=s.process_id,
            effect_id=model_effect_id(s.process_id, seq),
            model_call_seq=seq,
            model=definition.model,
            messages=(*s.context, *(m for envelope in steers for m in envelope.messages)),
            tools=manifest,
            options=s.options if s.options is not None else definition.options,
            context_reducer=definition.context_reducer,
            applied_signals=tuple(envelope.signal_id for envelope in steers),
            base=s.base,
            instructions=s.instructions,
            incarnation=s.incarnation,
        )

    taken = _steers_that_fit(mailbox, request, fits, at_least=1 if _answered(s) else 0)
    chosen = request(mailbox[:taken])
    s.context.extend(m for envelope in mailbox[:taken] for m in envelope.messages)
    s.mailbox = mailbox[taken:]
    s.applied_signals.extend(chosen.applied_signals)
    s.next_model_call_seq += 1
    s.model = PendingModel(request=chosen, emitted=True)
    return chosen


def _steers_that_fit(
    mailbox: Sequence[SteerEnvelope],
    request: Callable[[Sequence[SteerEnvelope]], ModelEffectRequest],
    fits: Fits | None,
    *,
    at_least: int,
) -> int:
    """How many of the queued steers the call takes: all, or the most that fit (never
    fewer than `at_least`; when even those do not fit, all of them, and the driver refuses
    the call as too large: nothing is dropped silently)."""
    if fits is None or not mailbox or fits(request(mailbox)):
        return len(mailbox)
    for taken in range(len(mailbox) - 1, at_least - 1, -1):
        if fits(request(mailbox[:taken])):
            return taken
    return len(mailbox)


def _answered(s: InteractionState) -> bool:
    """The model's last message answered without tool calls: a call now exists only to
    apply the steers that arrived meanwhile."""
    last = s.context[-1] if s.context else None
    return last is not None and last.role == "assistant" and not last.tool_calls


__all__ = ["Fits", "begin"]

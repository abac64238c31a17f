"""The attempts of one model call: what follows an attempt that gave the loop no response.

A model call is one numbered turn (`model #3`); each of its attempts is an Effect of its
own (`<id>/model/3`, then `<id>/model/3/retry/1`, ...) sending the same retained request,
to a fallback model once the Definition's model is exhausted. These functions run inside
the machine's transitions and change only the draft they are given; the machine assigns
the phase (`backoff` while a timer runs, `model` when the next attempt may go out).

 1. Not called and retryable (`interaction.model.unavailable`): the same model again after
    a backoff wait (`Definition.model_retry`), at least the provider's Retry-After, for at
    most `attempts` calls of that model. The wait before a model's k-th retry is the
    policy's k-th, for a fallback model as for the first (its retries start again at
    `initial_interval`).
 2. Not called and permanent, or the model is exhausted (its attempts used, or a
    Retry-After over `max_retry_after`): the next of `fallback_models`, at once. After the
    last model the Interaction fails with the last refusal's code.
 3. Unknown: held for the host, unless `ModelRetry.ambiguous` re-sends remain; then the
    same model again after a backoff wait.
 4. The host's re-send of an unknown (`ModelResend`): at once.
 5. Every attempt that gave no response is recorded (`ModelAttempt`, the latest
    `MAX_ATTEMPT_RECORDS`): an unknown one as superseded, never dropped silently.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal, assert_never

from scope_temporal import errors
from scope_temporal.definition import Definition
from scope_temporal.errors import ProtocolError
from scope_temporal.ids import model_effect_id
from scope_temporal.interaction.effects import ModelNotRun, ModelUnknown, WaitRetry
from scope_temporal.interaction.snapshot import ModelAttempt
from scope_temporal.interaction.state import InteractionState, PendingModel, RetryTimer
from scope_temporal.models.not_called import NotCalled
from scope_temporal.outputs import Failure

MAX_ATTEMPT_RECORDS = 100
"""Attempt records kept per Interaction (the oldest go first; the state stays bounded)."""


def after(
    definition: Definition, s: InteractionState, outcome: ModelUnknown | ModelNotRun
) -> Failure | Literal["model", "backoff"]:
    """What follows an attempt that gave no response: the phase its next step puts the
    Interaction in (`backoff` while a wait runs; `model` for an attempt that goes out at
    once, or an unknown held for the host), or the failure that ends it."""
    match outcome:
        case ModelUnknown():
            resent = after_unknown(definition, s, outcome.diagnostic)
            return "backoff" if resent else "model"
        case ModelNotRun():
            failure = after_not_called(definition, s, outcome.reason)
            if failure is not None:
                return failure
            return "backoff" if s.model is not None and s.model.timer is not None else "model"
        case _:
            assert_never(outcome)


def after_not_called(
    definition: Definition, s: InteractionState, reason: NotCalled
) -> Failure | None:
    """The next attempt after one the model provably did not run (now in `s.model`, with
    a timer or ready to go), or the failure that ends the Interaction."""
    pending = _pending(s)
    policy = definition.model_retry
    asked = reason.retry_after
    if (
        reason.retryable
        and pending.model_attempts < policy.attempts
        and (asked is None or asked <= policy.max_retry_after)
    ):
        effect_id = _next_id(s, pending)
        # each model's retries back off from the policy's initial interval (rule 1)
        delay = max(policy.backoff(pending.model_attempts, effect_id), asked or timedelta(0))
        _record(s, _refused(pending, reason, followed_by=effect_id))
        s.model = _next(pending, effect_id, model_attempts=pending.model_attempts + 1)
        s.model.timer = RetryTimer(delay=delay, reason=_label(reason))
        return None
    models = definition.models
    if pending.model_index + 1 < len(models):
        effect_id = _next_id(s, pending)
        _record(s, _refused(pending, reason, followed_by=effect_id))
        s.model = _next(pending, effect_id, model_index=pending.model_index + 1, model_attempts=1)
        s.model.request = s.model.request.model_copy(
            update={"model": models[pending.model_index + 1]}
        )
        return None
    _record(s, _refused(pending, reason, followed_by=None))
    return Failure.of(reason.code, _failure_message(definition, s, pending, reason))


def after_unknown(definition: Definition, s: InteractionState, diagnostic: str) -> bool:
    """Re-send an unknown attempt after a backoff wait if `ModelRetry.ambiguous` allows
    (True), else hold it for the host (False)."""
    pending = _pending(s)
    policy = definition.model_retry
    if pending.resends >= policy.ambiguous:
        pending.unknown = True
        pending.diagnostic = diagnostic
        return False
    effect_id = _next_id(s, pending)
    _record(s, _superseded(pending, diagnostic, "policy", effect_id))
    s.model = _next(pending, effect_id, resends=pending.resends + 1)
    delay = policy.backoff(pending.resends + 1, effect_id)
    s.model.timer = RetryTimer(delay=delay, reason="unknown outcome")
    return True


def resend(s: InteractionState) -> None:
    """The host's re-send of the held unknown attempt: the next attempt goes out at once."""
    pending = _pending(s)
    effect_id = _next_id(s, pending)
    _record(s, _superseded(pending, pending.diagnostic, "host", effect_id))
    s.model = _next(pending, effect_id)


def timer_effect(s: InteractionState) -> list[WaitRetry]:
    """The wait to start now (once) in phase `backoff`."""
    pending = _pending(s)
    timer = pending.timer
    if timer is None or timer.started:
        return []
    timer.started = True
    request = pending.request
    return [
        WaitRetry(
            effect_id=request.effect_id,
            model_call_seq=request.model_call_seq,
            retry=pending.retries,
            delay=timer.delay,
            reason=timer.reason,
        )
    ]


def timer_due(s: InteractionState, effect_id: str) -> None:
    """The wait before `effect_id` is over: the attempt may go out.

    Raises:
        ProtocolError: no wait for that attempt runs.
    """
    pending = s.model
    if pending is None or pending.timer is None or pending.request.effect_id != effect_id:
        raise ProtocolError(f"No retry wait runs for {effect_id!r}; refusing it.")
    pending.timer = None


# --- helpers ---------------------------------------------------------------------------


def _pending(s: InteractionState) -> PendingModel:
    if s.model is None:
        raise ProtocolError("No model call is in flight.")
    return s.model


def _next_id(s: InteractionState, pending: PendingModel) -> str:
    return model_effect_id(s.process_id, pending.request.model_call_seq, pending.retries + 1)


def _next(
    pending: PendingModel,
    effect_id: str,
    *,
    model_index: int | None = None,
    model_attempts: int | None = None,
    resends: int | None = None,
) -> PendingModel:
    """The next attempt of the same model call (not emitted yet)."""
    return PendingModel(
        request=pending.request.model_copy(
            update={"effect_id": effect_id, "attempt": pending.retries + 2}
        ),
        retries=pending.retries + 1,
        model_index=pending.model_index if model_index is None else model_index,
        model_attempts=pending.model_attempts if model_attempts is None else model_attempts,
        resends=pending.resends if resends is None else resends,
    )


def _refused(pending: PendingModel, reason: NotCalled, *, followed_by: str | None) -> ModelAttempt:
    return _attempt(
        pending,
        "not_called",
        reason.message,
        code=reason.code,
        status=reason.status,
        retry_after=reason.retry_after,
        followed_by=followed_by,
    )


def _superseded(
    pending: PendingModel, diagnostic: str, by: Literal["host", "policy"], followed_by: str
) -> ModelAttempt:
    return _attempt(pending, "superseded", diagnostic, resent_by=by, followed_by=followed_by)


def _attempt(
    pending: PendingModel,
    outcome: Literal["not_called", "superseded"],
    message: str,
    **details: Any,
) -> ModelAttempt:
    request = pending.request
    return ModelAttempt(
        effect_id=request.effect_id,
        model_call_seq=request.model_call_seq,
        model=request.model,
        outcome=outcome,
        message=message,
        **details,
    )


def _record(s: InteractionState, attempt: ModelAttempt) -> None:
    s.model_attempts.append(attempt)
    del s.model_attempts[:-MAX_ATTEMPT_RECORDS]


def _label(reason: NotCalled) -> str:
    """`429`, or `no connection`: why a retry waits, for people."""
    return str(reason.status) if reason.status is not None else "no connection"


def _failure_message(
    definition: Definition, s: InteractionState, pending: PendingModel, reason: NotCalled
) -> str:
    model = pending.request.model
    said = reason.message or "no message"
    if reason.status is not None and f"HTTP {reason.status}" not in said:
        said = f"HTTP {reason.status}: {said}"
    if reason.code == errors.MODEL_CONTEXT_OVERFLOW:
        text = (
            f"Model {model!r} refused the request: the conversation exceeds its context "
            f"window ({said}). Nothing ran. Give Definition {definition.name!r} a "
            "context_reducer (registered on the worker, it shortens the messages before "
            "each call), or a fallback model with a larger window."
        )
    elif reason.retryable:
        policy = definition.model_retry
        asked = reason.retry_after
        why = (
            f"it asked to wait {asked}, over model_retry.max_retry_after={policy.max_retry_after}"
            if asked is not None and asked > policy.max_retry_after
            else f"{pending.model_attempts} attempt(s), model_retry.attempts={policy.attempts}"
        )
        text = f"Model {model!r} is unavailable ({said}); gave up: {why}. Nothing ran."
    else:
        text = (
            f"Model {model!r} refused the request ({said}). Nothing ran; the same request "
            "would be refused again."
        )
    tried = _tried(s, pending.request.model_call_seq)
    return text if len(tried) < 2 else f"{text} Tried: {', '.join(tried)}."


def _tried(s: InteractionState, seq: int) -> list[str]:
    """`default: 429 x5`, ... per model, in order, for this model call."""
    counts: dict[str, dict[str, int]] = {}
    for attempt in s.model_attempts:
        if attempt.model_call_seq == seq and attempt.outcome == "not_called":
            label = str(attempt.status) if attempt.status is not None else "no connection"
            per_model = counts.setdefault(attempt.model, {})
            per_model[label] = per_model.get(label, 0) + 1
    return [
        f"{model}: " + ", ".join(f"{label} x{n}" for label, n in labels.items())
        for model, labels in counts.items()
    ]


__all__ = [
    "MAX_ATTEMPT_RECORDS",
    "after",
    "after_not_called",
    "after_unknown",
    "resend",
    "timer_due",
    "timer_effect",
]

"""What `scope.model` does, free of Temporal: reduce the context, call the model once,
classify the outcome. Shared by the activity and by `LocalRunner`.

Classification: a Response is `responded` (the loop judges it); a reducer error or a model
that is not registered is a definite `host_failed` before any external work; an exception
that proves the model did not run (`classify_model_error`: a sound `ModelRejected`,
`ModelContextOverflow` or `ModelUnavailable`) is a definite `not_called`, returned as
data so that Temporal never retries it; any other exception from the model, or a return
value that is not a Response, is `unknown`, and so is a response over the payload limit
(`within_limit`). Cancellation propagates so the caller can treat it as unknown.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import ValidationError

from scope_temporal.activities.served import ContextReducer, Served
from scope_temporal.chat import Message, Response
from scope_temporal.interaction.effects import (
    ModelEffectRequest,
    ModelHostFailed,
    ModelNotRun,
    ModelResponded,
    ModelUnknown,
)
from scope_temporal.models.not_called import NotCalled, classify_model_error
from scope_temporal.models.protocol import Model, ModelRequest
from scope_temporal.models.streaming import DeltaSink, collecting_deltas
from scope_temporal.observers import ObserverHub
from scope_temporal.payload_limits import ResponseLimit, size_of, too_large

ModelResult = ModelResponded | ModelHostFailed | ModelUnknown | ModelNotRun


async def call_model(
    request: ModelEffectRequest,
    models: Mapping[str, Model],
    reducers: Mapping[str, ContextReducer],
    observers: ObserverHub,
    on_delta: DeltaSink | None = None,
) -> ModelResult:
    """Run one model Effect exactly once and classify its outcome (see module docstring).

    `on_delta` receives the text the model streams while it runs (`stream_delta`).
    """
    messages = list(request.messages)
    if request.context_reducer is not None:
        reducer = reducers.get(request.context_reducer)
        if reducer is None:
            return ModelHostFailed(
                effect_id=request.effect_id,
                message=f"Context reducer {request.context_reducer!r} is not registered on this "
                f"worker (registered: {sorted(reducers)}). Pass it in reducers={{...}}.",
            )
        try:
            reduced: Any = reducer(list(messages))
            if inspect.isawaitable(reduced):
                reduced = await reduced
            messages = [Message.model_validate(m) for m in reduced]
            if not messages:
                raise ValueError("it returned no messages")
        except Exception as exc:
            return ModelHostFailed(
                effect_id=request.effect_id,
                message=f"Context reducer {request.context_reducer!r} failed: "
                f"{type(exc).__name__}: {exc}",
            )
    model = models.get(request.model)
    if model is None:
        return ModelHostFailed(
            effect_id=request.effect_id,
            message=f"Model {request.model!r} is not registered on this worker "
            f"(registered: {sorted(models)}). Pass it in models={{...}}.",
        )
    model_request = ModelRequest(
        messages=tuple(messages),
        tools=request.tools,
        options=request.options,
        model_call_seq=request.model_call_seq,
        process_id=request.process_id,
        attempt=request.attempt,
        incarnation=request.incarnation,
    )
    await observers.emit("model_started", request=request)
    try:
        with collecting_deltas(on_delta or _ignore):
            raw: Any = await model.complete(model_request)
        response = raw if isinstance(raw, Response) else Response.model_validate(raw)
    except asyncio.CancelledError:
        raise
    except ValidationError as exc:
        outcome: ModelResult = ModelUnknown(
            effect_id=request.effect_id,
            diagnostic=f"structurally invalid model response: {exc.error_count()} error(s): "
            f"{exc.errors()[0]['msg']}",
        )
    except Exception as exc:
        verdict = classify_model_error(exc)  # never raises
        if isinstance(verdict, NotCalled):
            outcome = ModelNotRun(effect_id=request.effect_id, reason=verdict)
        else:
            outcome = ModelUnknown(effect_id=request.effect_id, diagnostic=verdict.diagnostic)
    else:
        reduced_messages = tuple(messages) if tuple(messages) != request.messages else None
        outcome = ModelResponded(
            effect_id=request.effect_id, response=response, messages_sent=reduced_messages
        )
    await observers.emit("model_settled", request=request, outcome=outcome)
    return outcome


async def model_once(
    request: ModelEffectRequest,
    served: Served,
    *,
    on_delta: DeltaSink,
    around: Callable[[Awaitable[ModelResult]], Awaitable[ModelResult]] | None = None,
) -> ModelResult:
    """One model call as `scope.model` makes it: `call_model` with `served`'s models,
    its outcome bounded by the payload limit (or the Definition's `max_response_bytes`).
    `around` wraps the call (the activity heartbeats there)."""
    work = call_model(request, served.models, served.reducers, served.observers, on_delta)
    outcome = await (work if around is None else around(work))
    return within_limit(outcome, request, served.registry.response_limit(request.definition))


def within_limit(
    outcome: ModelResult, request: ModelEffectRequest, limit: ResponseLimit
) -> ModelResult:
    """The outcome, or unknown if the response is over `limit`: nothing can be proven
    about a response that cannot be recorded."""
    size = size_of(outcome)
    if not isinstance(outcome, ModelResponded) or size <= limit.bytes:
        return outcome
    return ModelUnknown(
        effect_id=outcome.effect_id,
        diagnostic=too_large(
            f"The response of model {request.model!r} (#{request.model_call_seq})",
            size,
            limit.bytes,
            "It was not recorded; settle the effect by hand or lower max_tokens.",
            bound=limit.bound,
        ),
    )


def _ignore(text: str) -> None:
    """Deltas nobody watches."""

"""The model call of an Interaction on Temporal (inside the workflow: deterministic).

One `scope.model` activity per model Effect, never retried. Its input carries the
messages that are new since the previous call and a reference to the rest (see
`scope_temporal.context_refs`), so history grows per round by what the round added. The
worker rebuilds the exact request; on a cache miss it asks for the prefix through the
`scope.context` query, which `page` answers. An activity that does not return data
becomes an unknown Effect.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from scope_temporal import names
from scope_temporal.chat import Message
from scope_temporal.context_refs import ContextChain
from scope_temporal.interaction.effects import (
    CallModel,
    ModelHostFailed,
    ModelResponded,
    ModelUnknown,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.payloads import ContextPage, ContextPageRequest, ModelActivityInput
from scope_temporal.telemetry import workflow_counters
from scope_temporal.workflows.limits import refuse_oversized
from scope_temporal.workflows.outcomes import describe_activity_error
from scope_temporal.workflows.summaries import model_summary

_ONCE = RetryPolicy(maximum_attempts=1)


class ModelCaller:
    """Runs the model Effects of one Interaction run and answers `scope.context`.

    Args:
        context_sent: how many leading messages of the context the previous model call
            sent (carried by continue-as-new; 0 for a new Interaction).
    """

    def __init__(self, context_sent: int = 0) -> None:
        # the messages of the latest model call, with their chain digests
        self._sent = ContextChain()
        self._context_sent = context_sent

    @property
    def context_sent(self) -> int:
        return self._context_sent

    async def call(self, machine: InteractionMachine, effect: CallModel) -> None:
        """Run one model Effect and settle it on the machine (unknown if no data came back)."""
        definition = machine.definition
        request = effect.request
        kept = self._sent.sync(request.messages)
        prefix = self._sent.ref(min(kept, self._context_sent))
        self._context_sent = len(request.messages)
        heartbeat = definition.model_heartbeat_timeout
        payload = ModelActivityInput.of(
            request, prefix=prefix, advertised=machine.advertised, heartbeat=heartbeat
        )
        # Only what is new crosses Temporal; the whole conversation may outgrow a payload
        # (the model's own context window is its bound), a single new message may not.
        if refuse_oversized(
            machine,
            payload,
            f"The new messages for model {request.model!r} (#{request.model_call_seq})",
            "A steer or tool result this large cannot be recorded; send less, or configure "
            "storage= on the worker and client.",
        ):
            return
        try:
            result = await workflow.execute_activity(
                names.MODEL_ACTIVITY,
                payload,
                result_type=ModelResponded | ModelHostFailed | ModelUnknown,  # type: ignore[arg-type]
                start_to_close_timeout=definition.model_timeout,
                heartbeat_timeout=heartbeat,
                retry_policy=_ONCE,
                summary=model_summary(request.model_call_seq, request.model),
            )
        except ActivityError as error:
            if workflow.cancellation_reason() is not None:
                return  # the Interaction is being cancelled; run() ends it as canceled
            result = ModelUnknown(
                effect_id=request.effect_id, diagnostic=describe_activity_error(error)
            )
        if not machine.done:
            machine.on_model(result)
            workflow_counters.record_outcome(request, result)  # telemetry: unknown opened

    def page(self, query: ContextPageRequest) -> ContextPage:
        """Messages [start, end) of the latest model call, at most about `max_bytes`."""
        page: list[Message] = []
        size = 0
        for message in self._sent.messages[query.start : query.end]:
            if page and size >= query.max_bytes:
                break
            page.append(message)
            size += len(message.model_dump_json())
        return ContextPage(messages=tuple(page), end=query.start + len(page))

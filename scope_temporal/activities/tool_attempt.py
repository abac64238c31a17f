"""What `scope.tool` does, free of Temporal: run one entry into a tool body and classify it.

Shared by the activity and by `LocalRunner`. The executor checks the permission and the
argument schema before any body runs; see `scope_temporal.tools.executor` for the five
outcome kinds. Cancellation propagates so the caller can treat it as unknown.
"""

from __future__ import annotations

from collections.abc import Sequence

from scope_temporal.interaction.tool_call import ToolAttempt
from scope_temporal.observers import ObserverHub
from scope_temporal.tools.context import ToolInvocation
from scope_temporal.tools.executor import execute_tool
from scope_temporal.tools.middleware import Middleware
from scope_temporal.tools.outcome import AttemptOutcome
from scope_temporal.tools.registry import ToolRegistry


def invocation_of(attempt: ToolAttempt) -> ToolInvocation:
    """The ToolInvocation a tool body sees for this attempt."""
    request = attempt.request
    return ToolInvocation(
        process_id=request.process_id,
        ref=request.ref,
        model_call_seq=request.model_call_seq,
        call_index=request.call_index,
        call=request.call,
        effect_id=request.effect_id,
        attempt=attempt.entry,
        continuation_state=attempt.continuation_state,
        continuation_response=attempt.continuation_response,
        has_continuation=attempt.has_continuation,
        deferred_tools=request.deferred_tools,
    )


async def run_tool_attempt(
    attempt: ToolAttempt,
    tools: ToolRegistry,
    middleware: Sequence[Middleware],
    observers: ObserverHub,
) -> AttemptOutcome:
    """Enter the tool body once and return exactly one classified outcome."""
    invocation = invocation_of(attempt)
    await observers.emit("tool_started", invocation=invocation)
    outcome = await execute_tool(
        tools.get(attempt.request.call.name),
        invocation,
        granted=frozenset(attempt.request.granted),
        middleware=middleware,
    )
    await observers.emit("tool_settled", invocation=invocation, outcome=outcome)
    return outcome

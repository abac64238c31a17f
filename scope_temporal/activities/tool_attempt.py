"""What `scope.tool` does, free of Temporal: run one entry into a tool body and classify it.

Shared by the activity and by `LocalRunner`. The executor checks the permission and the
argument schema before any body runs; see `scope_temporal.tools.executor` for the five
outcome kinds. Cancellation propagates so the caller can treat it as unknown.
"""

from __future__ import annotations

from collections.abc import Sequence

from scope_temporal.definition import Definition
from scope_temporal.errors import TOOL_NOT_AUTHORIZED
from scope_temporal.interaction.effects import ToolEffectRequest
from scope_temporal.interaction.tool_call import ToolAttempt
from scope_temporal.observers import ObserverHub
from scope_temporal.tools.context import ToolInvocation
from scope_temporal.tools.executor import execute_tool
from scope_temporal.tools.middleware import Middleware
from scope_temporal.tools.outcome import AttemptOutcome, Rejected
from scope_temporal.tools.registry import ToolRegistry
from scope_temporal.tools.rejections import not_authorized


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


def unauthorised(
    request: ToolEffectRequest, definition: Definition | None, tools: ToolRegistry
) -> Rejected | None:
    """Refuse a request its Definition does not grant, before anything runs.

    The Interaction only asks for what its Definition allows; this guards the worker
    against a forged request (e.g. a `scope.ToolCall` started by hand with a wider grant,
    a tool the Definition does not bind, or a Definition this worker does not serve).
    """
    call = request.call
    spec = definition.tools.get(call.name) if definition is not None else None
    tool = tools.get(call.name)
    if (
        definition is None
        or request.digest != definition.digest
        or not set(request.granted) <= definition.capabilities
        or spec is None
        or tool is None
        or tool.spec.permission != spec.permission
    ):
        permission = spec.permission if spec is not None else "exec"
        return Rejected(result=not_authorized(call, permission), code=TOOL_NOT_AUTHORIZED)
    return None

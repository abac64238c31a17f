"""What `scope.tool` does, free of Temporal: run one entry into a tool body and classify it.

Shared by the activity and by `LocalRunner` (`attempt_once`). The worker refuses a
request its Definition does not grant before anything runs; the executor checks the
permission and the argument schema before any body runs (see
`scope_temporal.tools.executor` for the five outcome kinds); an outcome over the payload
limit is unknown. Cancellation propagates so the caller can treat it as unknown.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from scope_temporal.background.runtime import BackgroundRuntime, activate
from scope_temporal.definition import Definition
from scope_temporal.errors import PAYLOAD_TOO_LARGE, TOOL_NOT_AUTHORIZED
from scope_temporal.interaction.effects import ToolEffectRequest
from scope_temporal.interaction.tool_call import ToolAttempt
from scope_temporal.mcp.calls import mcp_call_tools
from scope_temporal.mcp.connections import McpConnections
from scope_temporal.observers import ObserverHub
from scope_temporal.payload_limits import size_of, too_large
from scope_temporal.registry import Registry
from scope_temporal.tools.context import ToolInvocation
from scope_temporal.tools.executor import execute_tool
from scope_temporal.tools.middleware import Middleware
from scope_temporal.tools.outcome import AttemptOutcome, Rejected, Unknown
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
        incarnation=request.incarnation,
        continuation_state=attempt.continuation_state,
        continuation_response=attempt.continuation_response,
        has_continuation=attempt.has_continuation,
        deferred_tools=request.deferred_tools,
        context=request.context,
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


async def attempt_once(
    attempt: ToolAttempt,
    *,
    registry: Registry,
    tools: ToolRegistry,
    middleware: Sequence[Middleware],
    observers: ObserverHub,
    runtime: BackgroundRuntime,
    around: Callable[[Awaitable[AttemptOutcome]], Awaitable[AttemptOutcome]] | None = None,
    mcp: McpConnections | None = None,
) -> AttemptOutcome:
    """One attempt as `scope.tool` makes it: refused unless its Definition grants it, the
    body entered once with `runtime` reachable (`current_runtime()`), the outcome bounded
    by the payload limit (or the Definition's `max_response_bytes`). `around` wraps the
    body's run (the activity heartbeats there). An MCP tool's call (`request.mcp`) runs
    as the tool its recorded record makes, over the worker's `mcp` connections.
    """
    request = attempt.request
    definition = registry.lookup(request.definition)
    if request.mcp is not None:
        connections = mcp if mcp is not None else McpConnections({})
        definition, tools = mcp_call_tools(request, definition, connections)
    refused = unauthorised(request, definition, tools)
    if refused is not None:
        return refused
    with activate(runtime):
        work = run_tool_attempt(attempt, tools, middleware, observers)
        outcome = await (work if around is None else around(work))
    size = size_of(outcome)
    limit = registry.response_limit(request.definition)
    if size <= limit.bytes:
        return outcome
    # The body ran (its side effects happened) but its outcome cannot be recorded:
    # unknown, so the host settles it from the retained request; never re-run.
    return Unknown(
        code=PAYLOAD_TOO_LARGE,
        diagnostic=too_large(
            f"The {outcome.kind} outcome of tool {request.call.name!r}",
            size,
            limit.bytes,
            "The tool ran, but its outcome was not recorded; settle the effect by hand. "
            "Have the tool return less (or store large output elsewhere and return a "
            "reference), or give the worker storage= to offload large payloads.",
            bound=limit.bound,
        ),
    )

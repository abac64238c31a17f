"""What `scope.tool` does, free of Temporal: run one entry into a tool body and classify it.

Shared by the activity and by `LocalRunner` (`attempt_once`). The worker refuses an
attempt its Definition does not allow before anything runs (`unauthorised`: the
Interaction's admission made again, approval included); the executor checks the
argument schema again after the outer middleware, before the body (see
`scope_temporal.tools.executor` for the outcome kinds); an outcome over the payload
limit is unknown. Cancellation propagates so the caller can treat it as unknown.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from scope_temporal.activities.served import Served
from scope_temporal.background.runtime import BackgroundRuntime, activate
from scope_temporal.definition import Definition
from scope_temporal.errors import (
    PAYLOAD_TOO_LARGE,
    TOOL_NOT_AUTHORIZED,
    TOOL_SCHEMA_INVALID,
    ScopeError,
)
from scope_temporal.interaction.admission import admission_problem
from scope_temporal.interaction.tool_call import ToolAttempt
from scope_temporal.mcp.background import movable
from scope_temporal.mcp.calls import mcp_call_tool
from scope_temporal.mcp.progress import SendProgress
from scope_temporal.payload_limits import size_of, too_large
from scope_temporal.tools.context import ToolInvocation
from scope_temporal.tools.decorator import Tool
from scope_temporal.tools.executor import execute_tool
from scope_temporal.tools.outcome import AttemptOutcome, Rejected, Unknown
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


def unauthorised(
    attempt: ToolAttempt, definition: Definition | None, tool: Tool[..., Any] | None
) -> Rejected | Unknown | None:
    """Refuse an attempt its Definition does not allow, before anything runs.

    The Interaction only asks for what its Definition allows; this guards the worker
    against a forged request (e.g. a `scope.ToolCall` started by hand with a wider grant,
    a tool the Definition does not bind, a Definition this worker does not serve, or no
    approval decision for a call the approval policy covers). It makes the Interaction's
    own admission (`interaction.admission`) with the approval decision the attempt
    carries, after checking what only the worker knows: the Definition it serves under
    that name and digest, and `tool`, the one it serves the call's name with.
    """
    request = attempt.request
    call = request.call
    spec = definition.tools.get(call.name) if definition is not None else None
    if (
        definition is None
        or request.digest != definition.digest
        or tool is None
        or (spec is not None and tool.spec.permission != spec.permission)
    ):
        permission = spec.permission if spec is not None else "exec"
        return Rejected(result=not_authorized(call, permission), code=TOOL_NOT_AUTHORIZED)
    try:
        refusal = admission_problem(
            definition, call, granted=request.granted, approval=attempt.approval
        )
    except ScopeError as error:  # the tool's own schema is broken: as the executor says it
        return Unknown(code=TOOL_SCHEMA_INVALID, diagnostic=f"{type(error).__name__}: {error}")
    if refusal is not None:
        return Rejected(result=refusal.result, code=refusal.code)
    return None


def serving(
    attempt: ToolAttempt,
    served: Served,
    progress: SendProgress | None = None,
    sent_before: int = 0,
) -> tuple[Definition | None, Tool[..., Any] | None]:
    """The Definition the attempt names and the tool `served` runs its call with (None:
    not served). An MCP tool's call (`request.mcp`) runs as the tool its recorded record
    makes, over the worker's MCP connections, under the Definition with that record
    bound; its server's progress notifications go to `progress` (the tree's stream) as
    `tool_progress` events; `sent_before`: the attempts Temporal made before this one
    (only a call its Definition declares safe to retry has any)."""
    request = attempt.request
    definition = served.registry.lookup(request.definition)
    if request.mcp is None:
        return definition, served.tools.get(request.call.name)
    definition, mcp_tool = mcp_call_tool(
        request.mcp, definition, served.mcp, progress, sent_before, owner=request.parent_id
    )
    return definition, movable(mcp_tool)  # a call that may run in the background (docs/mcp.md)


async def attempt_once(
    attempt: ToolAttempt,
    served: Served,
    definition: Definition | None,
    tool: Tool[..., Any] | None,
    *,
    runtime: BackgroundRuntime,
    around: Callable[[Awaitable[AttemptOutcome]], Awaitable[AttemptOutcome]] | None = None,
) -> AttemptOutcome:
    """One attempt as `scope.tool` makes it, with `served`'s tools: `definition` and `tool`
    are what `serving` resolves for it; refused unless its Definition grants it, the
    body entered once with `runtime` reachable (`current_runtime()`), the outcome bounded
    by the payload limit (or the Definition's `max_response_bytes`). `around` wraps the
    body's run (the activity heartbeats there).
    """
    request, registry = attempt.request, served.registry
    invocation = invocation_of(attempt)  # the attempt as its body (and middleware) sees it
    refused = unauthorised(attempt, definition, tool)
    if refused is not None:
        return refused
    assert tool is not None  # the guard let only a served tool through

    async def entered() -> AttemptOutcome:  # the body once, between the observers' two calls
        await served.observers.emit("tool_started", invocation=invocation)
        outcome = await execute_tool(tool, invocation, middleware=served.middleware)
        await served.observers.emit("tool_settled", invocation=invocation, outcome=outcome)
        return outcome

    with activate(runtime):
        outcome = await (entered() if around is None else around(entered()))
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

"""How a round's calls run, on any engine (the mapping onto Temporal is in brackets).

- A tool call is a Tool call child Process that owns its Effect [`scope.ToolCall`]
  (`Definition(tool_call_workflows="always")`), or, with `"on_demand"`, first one tool
  attempt of the Interaction itself [`scope.tool`]: a definite outcome settles the call
  right there, and only a call that needs a life of its own (an input wait, an unknown
  outcome) is promoted to a child, which takes over from that first attempt's outcome
  without entering the tool again. A call that waits for approval before it runs is a
  child from the start in both mappings: the wait is its own.
- A call of a background tool whose attempt reports `Backgrounded` starts the task
  [`scope.BackgroundTask`, parent-close policy abandon: it outlives the call] and settles
  with a `launch_result`, from whichever side ran that attempt.
- A delegate is a child Interaction of its own Definition; a refused start (or a
  Definition the Interaction did not record as served) is a model-visible rejection.

Each call settles exactly once on the machine, or fails the machine with a code.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import assert_never

from scope_temporal import errors
from scope_temporal.background.envelopes import launched
from scope_temporal.chat import ToolCall
from scope_temporal.driver.inputs import oversized
from scope_temporal.driver.mcp_sessions import McpSessionRoutes, session_server
from scope_temporal.driver.transport import (
    Ended,
    InteractionTransport,
    Lost,
    Refused,
    ToolCallTransport,
)
from scope_temporal.interaction.effects import (
    CallSettled,
    DelegateSettled,
    StartDelegate,
    StartToolCall,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.tool_call import ToolAttempt, ToolCallMachine
from scope_temporal.outputs import Failure, Output
from scope_temporal.payloads import (
    InteractionInput,
    Route,
    TaskInput,
    ToolActivityInput,
    ToolCallInput,
)
from scope_temporal.tools.outcome import Backgrounded, Failed, InputRequired, ToolOutcome, Unknown
from scope_temporal.tools.rejections import error_result

_TOOL_MARGIN = timedelta(seconds=5)
_SUMMARY_CHARS = 80


def _shorten(text: str, limit: int = _SUMMARY_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_summary(kind: str, call: ToolCall) -> str:
    """`tool search_docs(query='disk full')`; unparseable arguments are shown raw."""
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError:
        arguments = None
    if isinstance(arguments, dict):
        shown = ", ".join(
            f"{k}={_shorten(json.dumps(v, ensure_ascii=False), 30)}" for k, v in arguments.items()
        )
    else:
        shown = _shorten(call.arguments, 40)
    return _shorten(f"{kind} {call.name}({shown})")


async def attempt_tool(
    transport: ToolCallTransport,
    attempt: ToolAttempt,
    *,
    start_to_close: timedelta,
    heartbeat: timedelta | None,
    route: Route,
    task_queue: str | None = None,
    titled: bool = False,
    session: bool = False,
) -> ToolOutcome:
    """Enter the tool body once (never retried).

    An attempt that returns no data (timeout, lost worker, escaped exception) is
    `Unknown`; a call that moved to the background starts its task and settles with the
    `launch_result`. A task that cannot start leaves the call unknown: its run may be
    going on (held for a handoff, or a recoverable operation), and only the host can say
    what became of it. A task started gets the call's `route`: its events, whom it tells
    when it waits for an answer, the session it notifies. `task_queue`: the pool that
    runs the body (None: the Interaction's own); an attempt no worker of it picks up
    within `start_to_close` is unknown, never run elsewhere. `titled`: the attempt runs in
    a ToolCall child, whose own summary names the call; its first entry's activity then
    carries none (re-entries say which they are). `session`: `task_queue` is the worker
    holding the Interaction's own MCP session: an attempt nobody picked up there was
    never sent, a definite `tool.mcp.session_lost` (`driver.mcp_sessions`).

    Raises:
        asyncio.CancelledError: the process itself is being cancelled; nobody will
            collect this outcome.
    """
    summary = call_summary("tool", attempt.request.call)
    if attempt.entry > 1:
        summary = f"{summary} #{attempt.entry}"
    elif titled:
        summary = ""  # the same words again in every call's history, for nothing
    outcome = await transport.run_tool(
        ToolActivityInput(
            attempt=attempt,
            heartbeat=heartbeat,
            events_to=route.events_to if attempt.request.mcp is not None else None,
        ),
        start_to_close=start_to_close,
        summary=summary,
        task_queue=task_queue,
    )
    if isinstance(outcome, Lost) and session and outcome.not_started:
        return session_lost(attempt.request.call)
    if isinstance(outcome, Lost):
        return Unknown(code=errors.TOOL_EXECUTION_FAILED, diagnostic=outcome.diagnostic)
    if not isinstance(outcome, Backgrounded):
        return outcome
    request, launch = attempt.request, outcome.launch
    problem = await transport.start_task(
        TaskInput(
            launch=launch,
            ref=request.ref,
            parent_id=request.parent_id,
            definition=request.definition,
            route=route,
        ),
        summary=call_summary("task", request.call),
    )
    if problem is not None:  # not started: nobody owns the run
        return Unknown(
            code=errors.TOOL_EXECUTION_FAILED,
            diagnostic=f"background task {launch.task_id!r} could not start ({problem}); its "
            f"run may have begun (mode {launch.mode}) and now has no owner",
        )
    return launched(request.call, launch)


def session_lost(call: ToolCall) -> Failed:
    """The definite failure of a call whose session holder never picked it up."""
    return Failed(
        result=error_result(
            call,
            f"The worker holding this Interaction's MCP session of tool {call.name!r} is "
            "gone (it did not pick the call up in time); the session's state is gone and "
            "no new session is opened. The call was not sent.",
        ),
        code=errors.MCP_SESSION_LOST,
    )


def tool_call_input(
    machine: InteractionMachine, effect: StartToolCall, limit: int, route: Route
) -> ToolCallInput:
    definition, request = machine.definition, effect.request
    spec = definition.tools.get(request.call.name)
    timeout = (spec.timeout if spec is not None else None) or definition.tool_timeout
    return ToolCallInput(
        request=request,
        start_to_close=timeout + _TOOL_MARGIN,
        heartbeat=definition.tool_heartbeat_timeout,
        payload_limit=limit,
        approval=effect.approval,
        decision=effect.decision,
        task_queue=spec.task_queue if spec is not None else None,
        route=route,
        sampling=effect.sampling,
    )


async def run_tool_call(
    machine: InteractionMachine,
    effect: StartToolCall,
    transport: InteractionTransport,
    children: set[str],
    limit: int,
    route: Route,
    sessions: McpSessionRoutes | None = None,
) -> None:
    """Run one tool call to its settlement (see the module docstring for the mapping).

    `children` holds the ids of this Interaction's running child processes (signals are
    forwarded to them); a promoted or started Tool call child is in it while it runs.
    `route`: where the call (and a task it starts) reports. `sessions`: the Interaction's
    own MCP sessions; a call of a server declared `session="interaction"` runs on the
    worker holding its session (`driver.mcp_sessions`).
    """
    request = effect.request
    payload = tool_call_input(machine, effect, limit, route)
    server = None if request.mcp is None else session_server(machine.definition, request.mcp.server)
    if server is not None and sessions is not None:
        queue = await sessions.queue_for(server, machine.definition, request.call, transport)
        if isinstance(queue, Failed):  # nothing was sent: the call fails definitely
            if not machine.done:
                machine.on_call(CallSettled(effect_id=request.effect_id, outcome=queue))
            return
        payload = payload.model_copy(update={"task_queue": queue, "mcp_session": True})
    settled = await _run_tool_call(machine, effect, transport, children, limit, payload)
    if server is not None and sessions is not None and settled is not None:
        sessions.note(server.name, settled)


async def _run_tool_call(
    machine: InteractionMachine,
    effect: StartToolCall,
    transport: InteractionTransport,
    children: set[str],
    limit: int,
    payload: ToolCallInput,
) -> ToolOutcome | None:
    """`run_tool_call` once its input is known: the call's settled outcome (None when it
    ended without one)."""
    request = effect.request
    refused = oversized(
        payload,
        f"The input of tool call {request.call.name!r} ({request.ref})",
        limit,
        "The model produced oversized arguments; nothing ran.",
    )
    if refused is not None:
        machine.fail(errors.PAYLOAD_TOO_LARGE, refused)
        return None
    if machine.definition.tool_call_workflows == "on_demand" and effect.approval is None:
        first = ToolCallMachine.start(request, decision=effect.decision).next_attempt()
        assert first is not None  # a new call is always ready for its first entry
        outcome = await attempt_tool(
            transport,
            first,
            start_to_close=payload.start_to_close,
            heartbeat=payload.heartbeat,
            route=payload.route,
            task_queue=payload.task_queue,
            session=payload.mcp_session,
        )
        if not isinstance(outcome, InputRequired | Unknown):
            if not machine.done:
                machine.on_call(CallSettled(effect_id=request.effect_id, outcome=outcome))
            return outcome
        payload = payload.model_copy(
            update={"first_outcome": outcome, "paused": machine.status == "paused"}
        )
    children.add(request.process_id)
    try:
        settled = await transport.run_tool_call(payload, summary=call_summary("tool", request.call))
    finally:
        children.discard(request.process_id)
    if machine.done:
        return None
    match settled:
        case CallSettled():
            machine.on_call(settled)
            return settled.outcome
        case Refused():
            machine.fail(
                errors.TOOL_CHILD_REJECTED,
                f"ToolCall child {request.process_id!r} could not start: {settled.reason}",
            )
        case Ended():
            failure = settled.failure(errors.HOST_FAILED)
            machine.fail(
                failure.code,
                f"ToolCall child {request.process_id!r} ended without a settlement: "
                f"{failure.message}",
            )
        case _:
            assert_never(settled)
    return None


async def run_delegate(
    machine: InteractionMachine,
    effect: StartDelegate,
    transport: InteractionTransport,
    children: set[str],
    *,
    served: tuple[str, ...],
    track_status: bool,
    route: Route,
) -> None:
    """Run one delegate as a child Interaction; a refused start is model-visible.

    `served`: the delegate Definitions the Interaction recorded as served when it started.
    `route`: the tree's event stream and the Interaction the child tells what its tree
    needs from a person (a delegate is no session's turn: it takes no `session_id`).
    """
    if effect.definition not in served:
        machine.on_call(
            DelegateSettled(
                effect_id=effect.effect_id,
                failure=Failure.of(
                    errors.DELEGATE_REJECTED,
                    f"Definition {effect.definition!r} is not registered on this "
                    "task queue; the delegate was not started.",
                ),
            )
        )
        return
    children.add(effect.process_id)
    try:
        ended = await transport.run_delegate(
            InteractionInput(
                definition=effect.definition,
                messages=effect.messages,
                max_model_calls=effect.max_model_calls,
                capabilities=effect.capabilities,
                track_status=track_status,
                context=effect.run_context or None,
                route=Route(events_to=route.events_to, report_to=route.report_to),
            ),
            process_id=effect.process_id,
            summary=f"delegate {effect.delegate} -> {effect.definition}",
        )
    finally:
        children.discard(effect.process_id)
    match ended:
        case Output():
            settled = DelegateSettled(effect_id=effect.effect_id, output=ended)
        case Refused():  # a refused start is model-visible, not a failure
            failure = Failure.of(
                errors.DELEGATE_REJECTED, f"the child could not start: {ended.reason}"
            )
            settled = DelegateSettled(effect_id=effect.effect_id, failure=failure)
        case Ended():
            failure = ended.failure(errors.DELEGATE_FAILED)
            settled = DelegateSettled(effect_id=effect.effect_id, failure=failure)
        case _:
            assert_never(ended)
    if not machine.done:
        machine.on_call(settled)


__all__ = ["attempt_tool", "call_summary", "run_delegate", "run_tool_call", "tool_call_input"]

"""How a round's calls run on Temporal (everything here runs inside the workflow).

- A tool call is a `scope.ToolCall` child workflow that owns its Effect
  (`Definition(tool_call_workflows="always")`, the default), or, with `"on_demand"`, first
  a `scope.tool` activity of the Interaction itself: a definite outcome settles the call
  right there, and only a call that needs a life of its own (an input wait, an unknown
  outcome) is promoted to a `scope.ToolCall` child, which takes over from that first
  attempt's outcome without entering the tool again.
- A call of a background tool that moves to the background (its first attempt reports
  `Backgrounded`) starts the task's `scope.BackgroundTask` workflow (id = the task id,
  parent-close policy abandon: the task outlives the call) and settles with a
  `launch_result`, from whichever side ran that attempt (the ToolCall child, or the
  Interaction with `"on_demand"`).
- A delegate is a child Interaction of its own Definition.

Each call settles exactly once on the machine, or fails the machine with a code.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta  # deterministic: a value type, no clock

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ChildWorkflowError

from scope_temporal import errors, names
from scope_temporal.background.envelopes import launched
from scope_temporal.interaction.effects import (
    CallSettled,
    DelegateSettled,
    StartDelegate,
    ToolEffectRequest,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.tool_call import ToolAttempt, ToolCallMachine
from scope_temporal.outputs import Failure, Output
from scope_temporal.payloads import InteractionInput, TaskInput, ToolActivityInput, ToolCallInput
from scope_temporal.tools.outcome import (
    AttemptOutcome,
    Backgrounded,
    Failed,
    InputRequired,
    Rejected,
    Succeeded,
    ToolOutcome,
    Unknown,
)
from scope_temporal.workflows import serving
from scope_temporal.workflows.limits import refuse_oversized
from scope_temporal.workflows.outcomes import child_failure, describe_activity_error
from scope_temporal.workflows.summaries import call_summary

_ONCE = RetryPolicy(maximum_attempts=1)
_TOOL_MARGIN = timedelta(seconds=5)


async def attempt_tool(
    attempt: ToolAttempt, *, start_to_close: timedelta, heartbeat: timedelta | None
) -> ToolOutcome:
    """Enter the tool body once (activity `scope.tool`, never retried).

    An activity that returns no data (timeout, lost worker, escaped exception) is
    `Unknown`; a call that moved to the background is launched (see `launch_task`).

    Raises:
        asyncio.CancelledError: the workflow itself is being cancelled; nobody will
            collect this outcome.
    """
    summary = call_summary("tool", attempt.request.call)
    try:
        outcome: AttemptOutcome = await workflow.execute_activity(
            names.TOOL_ACTIVITY,
            ToolActivityInput(attempt=attempt, heartbeat=heartbeat),
            result_type=Succeeded | Failed | Rejected | InputRequired | Unknown | Backgrounded,  # type: ignore[arg-type]
            start_to_close_timeout=start_to_close,
            heartbeat_timeout=heartbeat,
            retry_policy=_ONCE,
            summary=summary if attempt.entry == 1 else f"{summary} #{attempt.entry}",
        )
    except ActivityError as error:
        if workflow.cancellation_reason() is not None:
            raise asyncio.CancelledError(workflow.cancellation_reason()) from error
        return Unknown(code=errors.TOOL_EXECUTION_FAILED, diagnostic=describe_activity_error(error))
    if isinstance(outcome, Backgrounded):
        return await launch_task(outcome, attempt.request)
    return outcome


async def launch_task(outcome: Backgrounded, request: ToolEffectRequest) -> Succeeded | Unknown:
    """Start the call's `scope.BackgroundTask`; the call's settlement is its `launch_result`.

    A task that cannot start leaves the call unknown: its run may be going on (held for a
    handoff, or a recoverable operation), and only the host can say what became of it.
    """
    launch = outcome.launch
    try:
        await workflow.start_child_workflow(
            names.TASK_WORKFLOW,
            TaskInput(
                launch=launch,
                ref=request.ref,
                parent_id=request.parent_id,
                definition=request.definition,
            ),
            id=launch.task_id,
            parent_close_policy=workflow.ParentClosePolicy.ABANDON,
            static_summary=call_summary("task", request.call),
        )
    except Exception as error:  # not started: nobody owns the run
        return Unknown(
            code=errors.TOOL_EXECUTION_FAILED,
            diagnostic=f"background task {launch.task_id!r} could not start ({error}); its "
            f"run may have begun (mode {launch.mode}) and now has no owner",
        )
    return launched(request.call, launch)


def tool_call_input(machine: InteractionMachine, request: ToolEffectRequest) -> ToolCallInput:
    definition = machine.definition
    spec = definition.tools.get(request.call.name)
    timeout = (spec.timeout if spec is not None else None) or definition.tool_timeout
    return ToolCallInput(
        request=request,
        start_to_close=timeout + _TOOL_MARGIN,
        heartbeat=definition.tool_heartbeat_timeout,
    )


async def run_tool_call(
    machine: InteractionMachine, request: ToolEffectRequest, children: set[str]
) -> None:
    """Run one tool call to its settlement (see the module docstring for the mapping).

    `children` holds the ids of this Interaction's running child workflows (signals are
    forwarded to them); a promoted or started ToolCall child is in it while it runs.
    """
    payload = tool_call_input(machine, request)
    if refuse_oversized(
        machine,
        payload,
        f"The input of tool call {request.call.name!r} ({request.ref})",
        "The model produced oversized arguments; nothing ran.",
    ):
        return
    if machine.definition.tool_call_workflows == "on_demand":
        first = ToolCallMachine.start(request).next_attempt()
        assert first is not None  # a new call is always ready for its first entry
        try:
            outcome = await attempt_tool(
                first, start_to_close=payload.start_to_close, heartbeat=payload.heartbeat
            )
        except asyncio.CancelledError:
            return  # the Interaction is being cancelled; run() ends it as canceled
        if not isinstance(outcome, InputRequired | Unknown):
            if not machine.done:
                machine.on_call(CallSettled(effect_id=request.effect_id, outcome=outcome))
            return
        payload = payload.model_copy(
            update={"first_outcome": outcome, "paused": machine.status == "paused"}
        )
    await _run_child(machine, request, payload, children)


async def _run_child(
    machine: InteractionMachine,
    request: ToolEffectRequest,
    payload: ToolCallInput,
    children: set[str],
) -> None:
    children.add(request.process_id)
    try:
        settled = await _child_settlement(machine, request, payload)
    finally:
        children.discard(request.process_id)
    if settled is not None and not machine.done:
        machine.on_call(settled)


async def _child_settlement(
    machine: InteractionMachine, request: ToolEffectRequest, payload: ToolCallInput
) -> CallSettled | None:
    """The child's settlement, or None after failing the machine with the reason."""
    try:
        handle = await workflow.start_child_workflow(
            names.TOOL_CALL_WORKFLOW,
            payload,
            id=request.process_id,
            result_type=CallSettled,
            parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            static_summary=call_summary("tool", request.call),
        )
    except Exception as error:  # the child could not start: a host failure
        machine.fail(
            errors.TOOL_CHILD_REJECTED,
            f"ToolCall child {request.process_id!r} could not start: {error}",
        )
        return None
    try:
        settled: CallSettled = await handle
        return settled
    except ChildWorkflowError as error:
        failure = child_failure(error, errors.HOST_FAILED)
        machine.fail(
            failure.code,
            f"ToolCall child {request.process_id!r} ended without a settlement: {failure.message}",
        )
        return None


async def run_delegate(
    machine: InteractionMachine, effect: StartDelegate, track_status: bool, children: set[str]
) -> None:
    """Run one delegate as a child Interaction; a refused start is model-visible."""
    if serving.current().lookup(effect.definition) is None:
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
        settled = await _delegate_settlement(effect, track_status)
    finally:
        children.discard(effect.process_id)
    if not machine.done:
        machine.on_call(settled)


async def _delegate_settlement(effect: StartDelegate, track_status: bool) -> DelegateSettled:
    try:
        handle = await workflow.start_child_workflow(
            names.INTERACTION_WORKFLOW,
            InteractionInput(
                definition=effect.definition,
                messages=effect.messages,
                max_model_calls=effect.max_model_calls,
                capabilities=effect.capabilities,
                track_status=track_status,
            ),
            id=effect.process_id,
            result_type=Output,
            parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            static_summary=f"delegate {effect.delegate} -> {effect.definition}",
        )
    except Exception as error:  # a refused start is model-visible, not a failure
        return DelegateSettled(
            effect_id=effect.effect_id,
            failure=Failure.of(errors.DELEGATE_REJECTED, f"the child could not start: {error}"),
        )
    try:
        return DelegateSettled(effect_id=effect.effect_id, output=await handle)
    except ChildWorkflowError as error:
        return DelegateSettled(
            effect_id=effect.effect_id, failure=child_failure(error, errors.DELEGATE_FAILED)
        )

"""The drivers' transport on Temporal. Everything here runs inside the workflow.

Each method is one Temporal operation: an activity (never retried: `maximum_attempts=1`,
except a recoverable tool's background attempt), a child workflow, a signal to another
workflow, an upsert, a continue-as-new. What Temporal reports back is classified here
into data (`Lost`, `Refused`, `Ended`); the drivers decide what it means.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from datetime import timedelta  # deterministic: a value type, no clock
from typing import Any, NoReturn, TypeVar

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ChildWorkflowError,
)

from scope_temporal import names
from scope_temporal.driver.history_limits import HistoryUsage
from scope_temporal.driver.transport import ChildEnd, EffectRequest, Lost, OutcomeKind, Refused
from scope_temporal.interaction.attention import AttentionReport
from scope_temporal.interaction.effects import (
    CallSettled,
    McpSampleInput,
    ModelEffectRequest,
    ModelOutcome,
    ModelResend,
    ModelSettlement,
    ToolSettlement,
)
from scope_temporal.interaction.events import Event
from scope_temporal.mcp.session_values import (
    McpCloseInput,
    McpSessionInput,
    McpSessionOpened,
    McpSessionOutcome,
    McpSessionRefused,
)
from scope_temporal.mcp.values import MAX_SENDS
from scope_temporal.outputs import Output
from scope_temporal.payloads import (
    InteractionInput,
    ModelActivityInput,
    TaskInput,
    ToolActivityInput,
    ToolCallInput,
)
from scope_temporal.telemetry import workflow_counters
from scope_temporal.tools.outcome import AttemptOutcome
from scope_temporal.workflows import serving
from scope_temporal.workflows.ended import child_end, lost
from scope_temporal.workflows.events import NoEvents, Outlet, TreeStream
from scope_temporal.workflows.eviction import being_evicted
from scope_temporal.workflows.task_commands import command_issued

R = TypeVar("R")

STEERS_DEFERRED_PATCH = "scope.interaction.steers_wait_for_room"
"""Recorded once a steer waited for a later model call (`TemporalTransport.defers_steers`)."""

_ONCE = RetryPolicy(maximum_attempts=1)
SESSION_OPEN_TIMEOUT = timedelta(seconds=60)
"""How long opening an MCP session may take (starting a stdio server too)."""
SESSION_CLOSE_TIMEOUT = timedelta(seconds=10)
"""How long closing an Interaction's MCP sessions may wait for their holder, and take."""


def retried(max_attempts: int) -> RetryPolicy:
    """An activity Temporal may make again, up to `max_attempts` in all (1s, doubling, at
    most 10s apart): a recoverable tool's background attempt, or an MCP tool its
    Definition declares safe to retry."""
    return RetryPolicy(
        maximum_attempts=max_attempts,
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=10),
    )


class TemporalTransport:
    """The transport of every scope-temporal workflow (see `driver.transport`).

    Args:
        events: where the workflow's events go: the stream it hosts (a root), the root
            it sends them to, or nowhere (a process from before the stream).
    """

    def __init__(self, events: Outlet | None = None) -> None:
        self.events: Outlet = events if events is not None else NoEvents()
        self._sending: set[asyncio.Task[None]] = set()  # reports in flight (kept alive)

    # --- waiting and showing ---------------------------------------------------------

    async def wait_until(self, ready: Callable[[], bool]) -> None:
        await workflow.wait_condition(ready)

    def changed(self) -> None:
        """Nothing to do: Temporal checks every waiting condition after each step."""

    def show(self, details: str) -> None:
        workflow.set_current_details(details)

    def evicted(self) -> bool:
        return being_evicted()

    def warn(self, message: str) -> None:
        workflow.logger.warning(message)

    def publish(self, events: Sequence[Event]) -> None:
        self.events.publish(events)

    async def flush_events(self) -> None:
        await self.events.flush()

    async def close_events(self) -> None:
        """At the end of the run: every event sent, and a hosted stream's readers served."""
        await self.events.close()

    def report(self, process_id: str, report: AttentionReport) -> None:
        # a task of its own, started now: its command follows the change it reports
        sending = asyncio.create_task(self.signal(process_id, names.ATTENTION, report))
        self._sending.add(sending)
        sending.add_done_callback(self._sending.discard)

    def record_outcome(self, request: EffectRequest, outcome: OutcomeKind) -> None:
        workflow_counters.record_outcome(request, outcome)

    def record_settlement(self, settlement: ModelSettlement | ModelResend | ToolSettlement) -> None:
        workflow_counters.record_settlement(settlement)

    def spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return asyncio.create_task(work)

    # --- activities ------------------------------------------------------------------

    async def run_model(
        self,
        input: ModelActivityInput,
        request: ModelEffectRequest,
        *,
        timeout: timedelta,
        summary: str,
    ) -> ModelOutcome | Lost:
        del request  # the worker rebuilds it from `input`
        outcome: ModelOutcome | Lost = await _once(
            names.MODEL_ACTIVITY,
            input,
            ModelOutcome,
            start_to_close=timeout,
            heartbeat=input.heartbeat,
            summary=summary,
        )
        return outcome

    async def run_tool(
        self,
        input: ToolActivityInput,
        *,
        start_to_close: timedelta,
        summary: str,
        task_queue: str | None = None,
    ) -> AttemptOutcome | Lost:
        mcp = input.attempt.request.mcp
        outcome: AttemptOutcome | Lost = await _once(
            names.TOOL_ACTIVITY,
            input,
            AttemptOutcome,
            start_to_close=start_to_close,
            heartbeat=input.heartbeat,
            summary=summary,
            task_queue=task_queue,
            # a lost attempt of an MCP tool declared safe to retry is made again
            retry=retried(MAX_SENDS) if mcp is not None and mcp.retry_safe else _ONCE,
        )
        if isinstance(outcome, Lost) and task_queue is not None:
            return Lost(f"{outcome.diagnostic} [task queue {task_queue!r}]", outcome.not_started)
        return outcome

    async def run_sample(
        self,
        request: ModelEffectRequest,
        *,
        timeout: timedelta,
        heartbeat: timedelta | None,
        summary: str,
    ) -> ModelOutcome | Lost:
        outcome: ModelOutcome | Lost = await _once(
            names.MCP_SAMPLE_ACTIVITY,
            McpSampleInput(request=request),
            ModelOutcome,
            start_to_close=timeout,
            heartbeat=heartbeat,
            summary=summary,
        )
        return outcome

    async def sleep(self, delay: timedelta, *, summary: str) -> None:
        command_issued()
        await workflow.sleep(delay, summary=summary)

    # --- children --------------------------------------------------------------------

    async def start_task(self, input: TaskInput, *, summary: str) -> str | None:
        command_issued()
        bound = serving.current().task_history_events  # the starting worker's setting
        try:
            await workflow.start_child_workflow(
                names.TASK_WORKFLOW,
                input.model_copy(update={"history_events": bound}),
                id=input.launch.task_id,
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                static_summary=summary,
            )
        except Exception as error:  # not started: the driver says what that means
            return str(error)
        return None

    async def run_tool_call(self, input: ToolCallInput, *, summary: str) -> CallSettled | ChildEnd:
        return await _run_child(
            names.TOOL_CALL_WORKFLOW,
            input,
            CallSettled,
            id=input.request.process_id,
            summary=summary,
        )

    async def run_delegate(
        self,
        input: InteractionInput,
        *,
        process_id: str,
        summary: str,
        started: Callable[[], None] | None = None,
    ) -> Output | ChildEnd:
        """A child `scope.Interaction` (a delegate, or a session's turn: `started`)."""
        return await _run_child(
            names.INTERACTION_WORKFLOW,
            input,
            Output,
            id=process_id,
            summary=summary,
            started=started,
        )

    async def signal(self, process_id: str, signal: str, payload: Any) -> None:
        error = await signal_workflow(process_id, signal, payload)
        if error is not None:  # the child ended meanwhile: nothing to deliver to
            workflow.logger.info("signal %s to %s not delivered: %s", signal, process_id, error)

    async def cancel_task(self, task_id: str) -> None:
        command_issued()
        try:
            await workflow.get_external_workflow_handle(task_id).cancel()
        except Exception as error:  # ended already: nothing to stop
            workflow.logger.info("background task %s not cancelled: %s", task_id, error)

    async def open_mcp_session(self, input: McpSessionInput) -> McpSessionOutcome | Lost:
        outcome: McpSessionOutcome | Lost = await _once(
            names.MCP_SESSION_ACTIVITY,
            input,
            McpSessionOpened | McpSessionRefused,
            start_to_close=SESSION_OPEN_TIMEOUT,
            heartbeat=None,
            summary=f"MCP session: {input.server}",
        )
        return outcome

    async def close_mcp_sessions(self, input: McpCloseInput, *, queue: str) -> None:
        command_issued()
        try:  # a holder that is gone closed them with itself: never wait long for it
            await workflow.execute_activity(
                names.MCP_CLOSE_ACTIVITY,
                input,
                task_queue=queue,
                schedule_to_start_timeout=SESSION_CLOSE_TIMEOUT,
                start_to_close_timeout=SESSION_CLOSE_TIMEOUT,
                retry_policy=_ONCE,
                summary=f"close MCP sessions: {', '.join(input.servers)}",
            )
        except ActivityError as error:
            workflow.logger.info("MCP sessions of %s not closed: %s", input.owner, error)

    # --- the run ---------------------------------------------------------------------

    def record_status(self, definition: str, status: str) -> None:
        command_issued()
        workflow.upsert_search_attributes(
            [
                names.DEFINITION_ATTRIBUTE.value_set(definition),
                names.STATUS_ATTRIBUTE.value_set(status),
            ]
        )

    def continue_as_new_suggested(self) -> bool:
        return workflow.info().is_continue_as_new_suggested()

    def handlers_finished(self) -> bool:
        return workflow.all_handlers_finished()

    def defers_steers(self) -> bool:
        return workflow.patched(STEERS_DEFERRED_PATCH)

    def history_usage(self) -> HistoryUsage:
        info = workflow.info()
        return HistoryUsage(
            events=info.get_current_history_length(), bytes=info.get_current_history_size()
        )

    async def continue_as_new(self, input: InteractionInput) -> NoReturn:
        await self.events.close()
        await workflow.wait_condition(workflow.all_handlers_finished)
        if isinstance(self.events, TreeStream):  # the next run hosts the stream on
            carry = input.carry.model_copy(update={"stream": self.events.carried()})
            input = input.model_copy(update={"carry": carry})
        command_issued()
        workflow.continue_as_new(input)


async def _once(
    activity: str,
    input: BaseModel,
    result_type: Any,
    *,
    start_to_close: timedelta,
    heartbeat: timedelta | None,
    summary: str,
    task_queue: str | None = None,
    retry: RetryPolicy = _ONCE,
) -> Any:
    """Run an activity once (never retried, unless `retry` says otherwise): its result,
    or `Lost` if it returned none.

    On another pool's `task_queue` it waits at most `start_to_close` to be picked up
    (schedule-to-start): a pool that is down makes the call unknown, never run elsewhere.
    """
    command_issued()
    try:
        return await workflow.execute_activity(
            activity,
            input,
            result_type=result_type,
            task_queue=task_queue,
            start_to_close_timeout=start_to_close,
            schedule_to_start_timeout=None if task_queue is None else start_to_close,
            heartbeat_timeout=heartbeat,
            retry_policy=retry,
            summary=summary,
        )
    except ActivityError as error:
        return lost(error)


async def signal_workflow(workflow_id: str, signal: str, payload: Any) -> Exception | None:
    """Signal another workflow: None, or why it was not delivered (the workflow has ended,
    or never was)."""
    command_issued()
    try:
        await workflow.get_external_workflow_handle(workflow_id).signal(signal, payload)
    except Exception as error:
        return error
    return None


async def _run_child(
    workflow_type: str,
    input: BaseModel,
    result_type: type[R],
    *,
    id: str,
    summary: str,
    started: Callable[[], None] | None = None,
) -> R | ChildEnd:
    """Start a child workflow (cancelled with its parent; `started()` once it runs) and
    wait for its result."""
    command_issued()
    try:
        handle = await workflow.start_child_workflow(
            workflow_type,
            input,
            id=id,
            result_type=result_type,
            parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            static_summary=summary,
        )
    except Exception as error:  # the child could not start
        return Refused(str(error))
    if started is not None:
        started()
    try:
        result: R = await handle
    except ChildWorkflowError as error:
        return child_end(error)
    return result


__all__ = ["TemporalTransport", "retried", "signal_workflow"]

"""What a driver asks of the engine it runs on: the transports.

Two engines implement these: Temporal (`workflows/temporal.py`: activities, child
workflows, signals, inside the workflow) and `LocalRunner` (`testing/engine.py`: the same
activity code called in-process, child processes as tasks). A transport only carries: it
starts what it is asked to and reports what came back as data. Every rule lives in the
drivers, which are the same code on both engines.

Every process reports what happens in it to its tree's event stream (`publish`): the
root hosts the stream, the other processes of the tree send to it.

A transport method reports a lost operation (an activity that returned no data, a child
that ended without a result) as a value, never as an exception, except one: when the
process itself is being cancelled it raises `asyncio.CancelledError`, and the driver
ends the process as canceled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, NoReturn, Protocol

from scope_temporal.driver.history_limits import HistoryUsage
from scope_temporal.interaction.attention import AttentionReport
from scope_temporal.interaction.effects import (
    CallSettled,
    ModelEffectRequest,
    ModelOutcome,
    ModelResend,
    ModelSettlement,
    ToolEffectRequest,
    ToolSettlement,
)
from scope_temporal.interaction.events import Event
from scope_temporal.interaction.task_values import AttemptReport
from scope_temporal.mcp.session_values import McpCloseInput, McpSessionInput, McpSessionOutcome
from scope_temporal.outputs import Failure, Output, TokenUsage
from scope_temporal.payloads import (
    InteractionInput,
    ModelActivityInput,
    SessionInput,
    SteerInput,
    TaskAttemptInput,
    TaskInput,
    ToolActivityInput,
    ToolCallInput,
)
from scope_temporal.tools.outcome import AttemptOutcome

EffectRequest = ModelEffectRequest | ToolEffectRequest


class OutcomeKind(Protocol):
    """Any settled outcome: what telemetry reads of it."""

    @property
    def kind(self) -> str: ...


@dataclass(frozen=True)
class Lost:
    """An operation returned no data (timeout, lost worker, escaped exception): its
    outcome is unknown. `diagnostic` says why, for the host."""

    diagnostic: str
    not_started: bool = False
    """No worker picked it up in time (schedule-to-start): nothing of it ran."""


@dataclass(frozen=True)
class Refused:
    """A child process could not start; nothing ran."""

    reason: str


@dataclass(frozen=True)
class Ended:
    """A child process ended without its result (failed, cancelled, timed out)."""

    message: str
    code: str | None = None
    """The child's own failure code, when it ended with one of ours."""
    usage: TokenUsage | None = None
    """The tokens a child Interaction's tree used before it failed."""

    def failure(self, default_code: str) -> Failure:
        failure = Failure.of(self.code or default_code, self.message)
        return failure if self.usage is None else failure.model_copy(update={"usage": self.usage})


ChildEnd = Refused | Ended


class Host(Protocol):
    """Where a driver runs: how it waits for its state to change, shows it, reaches the
    rest of its tree, and learns whether its run should end. One class per engine serves
    every process (`TemporalTransport`, `LocalTransport`)."""

    async def wait_until(self, ready: Callable[[], bool]) -> None:
        """Return once `ready()` holds (checked whenever the process's state changed)."""

    def changed(self) -> None:
        """The process's state changed: waiting conditions may hold now."""

    def show(self, details: str) -> None:
        """The live one-line status (the Temporal UI's current details)."""

    def evicted(self) -> bool:
        """Whether the process's cancellation is its worker dropping it from its cache
        (Temporal: the run goes on from its history, here or elsewhere): then the driver
        cleans nothing up and lets the cancellation end it (`workflows.eviction`)."""

    def warn(self, message: str) -> None:
        """Tell the operator (never again on replay)."""

    def publish(self, events: Sequence[Event]) -> None:
        """Carry `events` to the tree's event stream, in order; never blocks, never fails
        the process (events are news: one that cannot be delivered is dropped)."""

    async def flush_events(self) -> None:
        """Return once every event published so far is in the stream (at once where
        publishing is immediate)."""

    def report(self, process_id: str, report: AttentionReport) -> None:
        """Tell the Interaction `process_id` what this Process needs from a person
        (signal `scope.attention`, fire-and-forget: one that ended has nobody to tell)."""

    def spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run `work` concurrently with the process's loop (e.g. one per effect in flight)."""

    async def signal(self, process_id: str, signal: str, payload: Any) -> None:
        """Deliver a signal to another process of the tree or a task (one that ended
        meanwhile has nothing to deliver to: the signal is dropped)."""

    def continue_as_new_suggested(self) -> bool:
        """The engine would rather carry the state into a fresh run now."""

    def handlers_finished(self) -> bool:
        """No host input (an update) is being handled: the run may end now."""


class ToolCallTransport(Host, Protocol):
    """What a Tool call Process needs: one tool attempt at a time."""

    async def run_tool(
        self,
        input: ToolActivityInput,
        *,
        start_to_close: timedelta,
        summary: str,
        task_queue: str | None = None,
    ) -> AttemptOutcome | Lost:
        """Enter the tool body once (`scope.tool`, never retried), on the workers of
        `task_queue` only (None: the process's own); an attempt none of them picks up
        within `start_to_close` is `Lost`."""

    async def start_task(self, input: TaskInput, *, summary: str) -> str | None:
        """Start a background task (it outlives the call); None, or why it did not start."""

    async def run_sample(
        self,
        request: ModelEffectRequest,
        *,
        timeout: timedelta,
        heartbeat: timedelta | None,
        summary: str,
    ) -> ModelOutcome | Lost:
        """Call the model once for an MCP server's sampling request (`scope.mcp.sample`,
        never retried): `request` whole (a few messages, no tools)."""

    def record_outcome(self, request: EffectRequest, outcome: OutcomeKind) -> None:
        """Count an unknown opened, if `outcome` is unknown (metrics; never on replay)."""

    def record_settlement(self, settlement: ModelSettlement | ModelResend | ToolSettlement) -> None:
        """Count a host's accepted settlement of an unknown (metrics; never on replay)."""


class InteractionTransport(ToolCallTransport, Protocol):
    """What an Interaction needs besides tool attempts (with `on_demand`)."""

    async def run_model(
        self,
        input: ModelActivityInput,
        request: ModelEffectRequest,
        *,
        timeout: timedelta,
        summary: str,
    ) -> ModelOutcome | Lost:
        """Call the model once (`scope.model`, never retried); `input` is what crosses
        the engine, `request` the whole request it stands for."""

    async def sleep(self, delay: timedelta, *, summary: str) -> None:
        """Wait `delay` on a durable timer (the wait survives a lost worker)."""

    async def run_tool_call(self, input: ToolCallInput, *, summary: str) -> CallSettled | ChildEnd:
        """Run a Tool call child Process to its settlement."""

    async def run_delegate(
        self, input: InteractionInput, *, process_id: str, summary: str
    ) -> Output | ChildEnd:
        """Run a Delegate child Interaction to its Output."""

    async def cancel_task(self, task_id: str) -> None:
        """Cancel a background task (one that already ended refuses: nothing to do)."""

    async def open_mcp_session(self, input: McpSessionInput) -> McpSessionOutcome | Lost:
        """Open the Interaction's own session of an MCP server (`scope.mcp.session`,
        never retried): the route of the worker holding it, or why not."""

    async def close_mcp_sessions(self, input: McpCloseInput, *, queue: str) -> None:
        """Close the Interaction's sessions held by the worker of `queue`
        (`scope.mcp.close`, never retried, best effort: a holder that is gone closed
        them with itself). Never raises, even while the run is being cancelled."""

    def record_status(self, definition: str, status: str) -> None:
        """Keep the searchable status of the Interaction current."""

    def history_usage(self) -> HistoryUsage:
        """How big this run's history is (nothing, on an engine that keeps none)."""

    def defers_steers(self) -> bool:
        """Steers that would put a model call over the payload limit wait for a later
        call; False only while replaying a history recorded before that rule."""

    async def continue_as_new(self, input: InteractionInput) -> NoReturn:
        """End this run and continue in a new one from `input` (once handlers finished)."""


class SessionTransport(Host, Protocol):
    """What a session needs: its turns (child Interactions), one at a time."""

    async def run_turn(
        self,
        input: InteractionInput,
        *,
        process_id: str,
        summary: str,
        started: Callable[[], None],
    ) -> Output | ChildEnd:
        """Run a turn (a child Interaction) to its Output; `started()` once it runs (the
        host's send returns then, so the turn's handle finds it)."""

    def asks_steer_answers(self) -> bool:
        """Steers are passed asking the turn for its answer (`SteerInput.reply_to`);
        False only while replaying a session recorded before that rule."""

    async def continue_session_as_new(self, input: SessionInput) -> NoReturn:
        """End this run now and continue in a new one from `input`; the caller made sure
        handlers finished (it computes `input` after, so nothing taken is left behind)."""


class AttemptRun(Protocol):
    """A background attempt in flight."""

    def cancel(self) -> None:
        """Ask the attempt to stop; its report says how the run ended."""

    async def report(self) -> AttemptReport:
        """How the attempt ended (an attempt without a report is lost, with its last
        checkpoint, if it heartbeat one)."""


class TaskTransport(Host, Protocol):
    """What a background task needs: one attempt at a time."""

    def start_attempt(
        self, input: TaskAttemptInput, *, start_to_close: timedelta, summary: str
    ) -> AttemptRun:
        """Start one background attempt (`scope.task.attempt`)."""

    async def notify(self, process_id: str, input: SteerInput) -> bool:
        """Steer Interaction `process_id` with a task's notification; False when it could
        not take it (it has ended, or does not exist)."""

    def task_history(self) -> HistoryUsage | None:
        """How big this run's history is; None on an engine that keeps none (the task
        never continues as new, its attempts have no report budget)."""

    async def continue_task_as_new(self, next_input: Callable[[], TaskInput]) -> None:
        """End this run and continue in a new one from `next_input()`, computed once the
        run's events are sent and its handlers finished. Returns (nothing changed) when
        this run may not: it was recorded before tasks continued as new, or the next
        input would be over the payload limit (warned)."""

    async def notify_session(self, session_id: str, input: SteerInput) -> bool:
        """Give session `session_id` a task's notification (for its running or next
        turn); False when it could not take it (it has ended, or does not exist)."""


__all__ = [
    "AttemptRun",
    "ChildEnd",
    "Ended",
    "Host",
    "InteractionTransport",
    "Lost",
    "Refused",
    "SessionTransport",
    "TaskTransport",
    "ToolCallTransport",
]

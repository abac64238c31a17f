"""The in-process engine of `LocalRunner`: the drivers' transport without Temporal.

The drivers (`scope_temporal.driver`) are the code the workflows run; here they run as
asyncio tasks of one event loop. A model call or a tool attempt calls the same code the
`scope.model` / `scope.tool` activities call; a child process is a driver awaited by its
parent's task; a signal is delivered at once. What an engine decides nothing about
differs: no history, no heartbeats or timeouts of calls, no worker to lose.

Quiescence: the engine counts the tasks that can make progress (running, not parked in
`wait_until` on a condition that does not hold); `idle` is set when none can, which is
when a run is done or waits for its host.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Sequence
from datetime import timedelta
from typing import Any, NoReturn, TypeVar

from scope_temporal import errors, names
from scope_temporal.activities.model_call import model_once
from scope_temporal.activities.served import Served
from scope_temporal.activities.tool_attempt import attempt_once, serving
from scope_temporal.chat import Message
from scope_temporal.context_refs import BaseRef, prefix_digest
from scope_temporal.driver.history_limits import NO_HISTORY, HistoryUsage
from scope_temporal.driver.interaction import InteractionDriver
from scope_temporal.driver.session import SessionDriver
from scope_temporal.driver.start import open_machine, settings_of
from scope_temporal.driver.tool_call import ToolCallDriver
from scope_temporal.driver.transport import ChildEnd, EffectRequest, Ended, Lost, OutcomeKind
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.attention import AttentionReport
from scope_temporal.interaction.effects import (
    CallSettled,
    ModelEffectRequest,
    ModelOutcome,
    ModelResend,
    ModelSettlement,
    ToolSettlement,
)
from scope_temporal.interaction.events import Event, TextEvent, ToolProgressEvent
from scope_temporal.mcp.session_values import McpCloseInput, McpSessionInput, McpSessionOutcome
from scope_temporal.mcp.sessions import open_session
from scope_temporal.models.streaming import LiveText, LiveTextBuffer
from scope_temporal.outputs import Failure, Output
from scope_temporal.payloads import (
    InteractionInput,
    ModelActivityInput,
    ResolveInput,
    SteerInput,
    SteerTaken,
    TaskAttemptInput,
    TaskInput,
    ToolActivityInput,
    ToolCallInput,
    ToolInputAnswer,
)
from scope_temporal.testing.local_events import TreeLogs
from scope_temporal.testing.local_tasks import LocalAttempt, LocalTasks
from scope_temporal.tools.outcome import AttemptOutcome

LOCAL_SESSIONS = "local"
"""The route of every MCP session a local run opens: its own process holds them."""

LocalWorker = Served
"""What a local run is served with (`LocalRunner` has it): a worker's parts."""


_log = logging.getLogger("scope_temporal.testing")

Process = InteractionDriver | ToolCallDriver

R = TypeVar("R")


class _ContinueAsNew(Exception):
    def __init__(self, input: InteractionInput) -> None:
        super().__init__("continue as new")
        self.input = input


def child_result(result: R | Failure) -> R | Ended:
    """A child run's result, or how it ended: its Failure, as a child workflow's reaches
    its parent (with its code and the tokens it used)."""
    if isinstance(result, Failure):
        return Ended(result.message, result.code, result.usage)
    return result


class LocalEngine:
    """The processes of one local run, and the tasks they run as."""

    def __init__(self, runner: LocalWorker) -> None:
        self.runner = runner
        self.processes: dict[str, Process] = {}
        self.sessions: dict[str, SessionDriver] = {}  # by session id: turns' bases
        self.live: dict[str, LiveText] = {}  # streamed text of model calls in flight
        self.logs = TreeLogs()  # each tree's events, by root Interaction
        self.transport = LocalTransport(self)
        self.tasks = LocalTasks(runner.tools, self.spawn, self.transport)
        self.idle = asyncio.Event()
        self.idle.set()
        self._running: set[asyncio.Task[Any]] = set()
        self._busy = 0
        self._waiting: list[tuple[Callable[[], bool], asyncio.Future[None], bool]] = []

    # --- scheduling ------------------------------------------------------------------

    def spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(work)
        self._running.add(task)
        self._more()

        def ended(t: asyncio.Task[Any]) -> None:
            self._running.discard(t)
            # after the task's other done callbacks, which may wake a waiting driver
            asyncio.get_running_loop().call_soon(self._less)

        task.add_done_callback(ended)
        return task

    async def wait_until(self, ready: Callable[[], bool]) -> None:
        if ready():
            return
        parked = asyncio.current_task() in self._running  # else: the host's own wait
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (ready, waiter, parked)
        self._waiting.append(entry)
        if parked:
            self._less()
        try:
            await waiter
        finally:
            if entry in self._waiting:  # cancelled while parked: running again
                self._waiting.remove(entry)
                if parked:
                    self._more()

    def changed(self) -> None:
        for entry in list(self._waiting):
            ready, waiter, parked = entry
            if not waiter.done() and ready():
                self._waiting.remove(entry)
                if parked:
                    self._more()  # the task runs again (it was counted out when it parked)
                waiter.set_result(None)

    def running(self) -> set[asyncio.Task[Any]]:
        return set(self._running)

    def _more(self) -> None:
        self._busy += 1
        self.idle.clear()

    def _less(self) -> None:
        self._busy -= 1
        if self._busy == 0:
            asyncio.get_running_loop().call_soon(self._check_idle)

    def _check_idle(self) -> None:
        if self._busy == 0:
            self.idle.set()

    # --- processes -------------------------------------------------------------------

    def open_interaction(
        self, process_id: str, input: InteractionInput
    ) -> InteractionDriver | Failure:
        """A run of an Interaction, its settings recorded as the workflow records them."""
        registry = self.runner.registry
        opened = open_machine(input, process_id, registry, "this LocalRunner")
        if isinstance(opened, Failure):
            return opened
        driver = InteractionDriver(opened, self.transport, input, limit=registry.payload_limit)
        failure = driver.begin(input.carry.settings or settings_of(opened.definition, registry))
        if failure is not None:
            return failure
        self.processes[process_id] = driver
        return driver

    async def run_interaction(self, opened: InteractionDriver | Failure) -> Output | Failure:
        """Run an opened Interaction to its end, through each continue-as-new (one that
        could not open ended so)."""
        while not isinstance(opened, Failure):
            try:
                return await opened.run()
            except _ContinueAsNew as carried:
                opened = self.open_interaction(opened.machine.process_id, carried.input)
        return opened

    def base_messages(self, base: BaseRef) -> tuple[Message, ...] | None:
        """A turn's base from its session (in this process), if it holds exactly it."""
        session = self.sessions.get(base.workflow_id)
        if session is None:
            return None
        transcript = session.machine.transcript
        messages = tuple(transcript[: base.count])
        if len(messages) != base.count:
            return None
        whole = base.count == len(transcript) and session.machine.digest == base.digest
        return messages if whole or prefix_digest(messages) == base.digest else None

    def deliver(self, process_id: str, signal: str, payload: Any) -> None:
        """A signal, at once, to a process or a background task (dropped if none)."""
        process = self.processes.get(process_id)
        session = self.sessions.get(process_id)
        if session is not None and isinstance(payload, SteerTaken):
            session.steer_taken(payload)
            return
        if process is None:
            if self.tasks.holds(process_id) and isinstance(payload, ToolInputAnswer):
                self.tasks.answer_signal(process_id, payload)
            return
        if signal == names.PAUSE:
            process.pause()
        elif signal == names.RESUME:
            process.resume()
        elif signal == names.TOOL_INPUT and isinstance(payload, ToolInputAnswer):
            process.tool_input_signal(payload)
        elif signal == names.RESOLVE and isinstance(payload, ResolveInput):
            process.resolve_signal(payload)
        elif signal == names.ATTENTION and isinstance(payload, AttentionReport):
            if isinstance(process, InteractionDriver):
                process.attention_signal(payload)
        elif signal == names.STEER and isinstance(payload, SteerInput):
            if isinstance(process, InteractionDriver):
                process.steer_signal(payload)
            else:
                process.reject(payload.signal_id, "steer", process.steer_refusal())


class LocalTransport:
    """The drivers' transport in-process (see `driver.transport`): one for every process
    of the run, Interactions, Tool calls and background tasks alike (a session's adds its
    turns). No worker caches a run, none keeps a history, and a host's input is taken
    synchronously: what those decide on Temporal is constant here."""

    def __init__(self, engine: LocalEngine) -> None:
        self._engine = engine

    async def wait_until(self, ready: Callable[[], bool]) -> None:
        await self._engine.wait_until(ready)

    def changed(self) -> None:
        self._engine.changed()

    def show(self, details: str) -> None:
        """Nothing shows a local run's details."""

    def evicted(self) -> bool:
        return False

    def warn(self, message: str) -> None:
        _log.warning(message)

    def publish(self, events: Sequence[Event]) -> None:
        self._engine.logs.publish(events)

    async def flush_events(self) -> None:
        """Published events are in the log at once."""

    def report(self, process_id: str, report: AttentionReport) -> None:
        self._engine.deliver(process_id, names.ATTENTION, report)

    def record_outcome(self, request: EffectRequest, outcome: OutcomeKind) -> None:
        """No metrics in-process."""

    def record_settlement(self, settlement: ModelSettlement | ModelResend | ToolSettlement) -> None:
        """No metrics in-process."""

    def spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return self._engine.spawn(work)

    async def run_model(
        self,
        input: ModelActivityInput,
        request: ModelEffectRequest,
        *,
        timeout: timedelta,
        summary: str,
    ) -> ModelOutcome | Lost:
        runner, live = self._engine.runner, self._engine.live
        if request.base is not None:
            base = self._engine.base_messages(request.base)
            if base is None:
                return Lost(
                    f"The session transcript {request.base.workflow_id!r} does not match the "
                    "turn's base; the model was not called."
                )
            request = request.expanded(base)
        streamed = LiveTextBuffer(request.process_id, request.model_call_seq)

        def publish(text: str) -> None:
            streamed.add(text)
            live[request.process_id] = streamed.current()
            seq = request.model_call_seq
            self.publish([TextEvent(process_id=request.process_id, model_call_seq=seq, text=text)])

        try:
            return await model_once(request, runner, on_delta=publish)
        finally:
            live.pop(request.process_id, None)

    async def run_tool(
        self,
        input: ToolActivityInput,
        *,
        start_to_close: timedelta,
        summary: str,
        task_queue: str | None = None,
    ) -> AttemptOutcome | Lost:
        del task_queue  # in-process, one pool runs every tool
        engine = self._engine
        progress = self._progress if input.events_to is not None else None
        return await attempt_once(
            input.attempt,
            engine.runner,
            *serving(input.attempt, engine.runner, progress),
            runtime=engine.tasks.runtime,
        )

    async def run_sample(
        self,
        request: ModelEffectRequest,
        *,
        timeout: timedelta,
        heartbeat: timedelta | None,
        summary: str,
    ) -> ModelOutcome | Lost:
        return await model_once(request, self._engine.runner, on_delta=_quiet)

    async def _progress(self, event: ToolProgressEvent) -> None:
        self.publish([event])

    async def sleep(self, delay: timedelta, *, summary: str) -> None:
        await asyncio.sleep(delay.total_seconds())

    async def start_task(self, input: TaskInput, *, summary: str) -> str | None:
        self._engine.tasks.start(input)
        return None

    async def run_tool_call(self, input: ToolCallInput, *, summary: str) -> CallSettled | ChildEnd:
        engine = self._engine
        child = ToolCallDriver(input, self, limit=engine.runner.registry.payload_limit)
        engine.processes[input.request.process_id] = child
        return child_result(await child.run())

    async def run_delegate(
        self, input: InteractionInput, *, process_id: str, summary: str
    ) -> Output | ChildEnd:
        engine = self._engine
        return child_result(
            await engine.run_interaction(engine.open_interaction(process_id, input))
        )

    def signal(self, process_id: str, signal: str, payload: Any) -> Coroutine[Any, Any, None]:
        self._engine.deliver(process_id, signal, payload)  # in-process: delivered at once
        return _delivered()

    async def cancel_task(self, task_id: str) -> None:
        with contextlib.suppress(errors.TaskEnded):  # ended already: nothing to stop
            await self._engine.tasks.cancel(task_id, "the task's workflow was cancelled")

    async def open_mcp_session(self, input: McpSessionInput) -> McpSessionOutcome | Lost:
        runner = self._engine.runner  # one process holds every session: one route
        return await open_session(
            input, registry=runner.registry, sessions=runner.mcp.sessions, queue=LOCAL_SESSIONS
        )

    async def close_mcp_sessions(self, input: McpCloseInput, *, queue: str) -> None:
        await self._engine.runner.mcp.sessions.close(input.owner, input.servers)

    def record_status(self, definition: str, status: str) -> None:
        """Nothing searches local runs."""

    def continue_as_new_suggested(self) -> bool:
        return False  # no history grows here

    def defers_steers(self) -> bool:
        return True  # no history recorded before the rule replays here

    def history_usage(self) -> HistoryUsage:
        return NO_HISTORY

    def task_history(self) -> None:
        """A task keeps no history here: it never continues as new."""

    def handlers_finished(self) -> bool:
        return True

    async def continue_as_new(self, input: InteractionInput) -> NoReturn:
        raise _ContinueAsNew(input)

    async def continue_task_as_new(self, next_input: Callable[[], TaskInput]) -> None:
        """Never asked: a task without history is never due."""

    # --- background tasks ------------------------------------------------------------

    def start_attempt(
        self, input: TaskAttemptInput, *, start_to_close: timedelta, summary: str
    ) -> LocalAttempt:
        return LocalAttempt(self._engine.tasks, input)

    async def notify(self, process_id: str, input: SteerInput) -> bool:
        process = self._engine.processes.get(process_id)
        if not isinstance(process, InteractionDriver):
            return False
        try:
            process.validate_steer(input)
        except ScopeError:  # refused
            return False
        process.steer_update(input)
        return True

    async def notify_session(self, session_id: str, input: SteerInput) -> bool:
        session = self._engine.sessions.get(session_id)
        return session is not None and session.notice(input)


async def _delivered() -> None:
    """A signal delivered in-process has nothing left to do."""


def _quiet(text: str) -> None:
    """A sampling call's streamed text: the server gets the whole reply, nobody else."""


__all__ = ["LocalEngine", "LocalTransport", "LocalWorker", "Process"]

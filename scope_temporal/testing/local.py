"""LocalRunner: drive Interactions through the pure core in-process, without Temporal.

It runs the same state machines, the same model-call and tool-attempt code and the same
classification as the worker; only the transport differs (asyncio tasks instead of
activities and child workflows). Users' agent tests run in milliseconds with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import Any

from scope_temporal import errors
from scope_temporal.activities.model_call import ContextReducer, call_model
from scope_temporal.activities.tool_attempt import run_tool_attempt
from scope_temporal.background.runtime import activate
from scope_temporal.background.task_tools import TASK_TOOLS
from scope_temporal.chat import Message
from scope_temporal.definition import Definition
from scope_temporal.errors import DefinitionError, InteractionCanceled, InteractionFailed
from scope_temporal.interaction.effects import (
    CallModel,
    CallSettled,
    DelegateSettled,
    ModelSettlement,
    ModelUnknown,
    StartDelegate,
    StartToolCall,
    ToolSettlement,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.snapshot import (
    PendingToolInput,
    ProcessSnapshot,
    TaskSnapshot,
    TreeSnapshot,
    UnknownEffect,
)
from scope_temporal.interaction.tool_call import ToolAttempt, ToolCallMachine
from scope_temporal.models.protocol import Model
from scope_temporal.models.streaming import LiveText, LiveTextBuffer
from scope_temporal.observers import ObserverHub
from scope_temporal.outputs import Failure, Output
from scope_temporal.testing.local_tasks import LocalTasks
from scope_temporal.tools.middleware import Middleware
from scope_temporal.tools.outcome import Backgrounded, Unknown
from scope_temporal.tools.registry import ToolRegistry


class LocalRunner:
    """Runs Definitions with local tools and models through the pure core.

    Background tools work too: their tasks run in this process (see `local_tasks`).

    Args:
        definitions: every Definition a run may start (delegates included).
        tools: the tool implementations, by name.
        models: models by the name Definitions refer to (e.g. `{"default": ScriptedModel(...)}`).
        reducers: context reducers by name.
        observers: observer objects (see `scope_temporal.observers`).
        middleware: worker-level tool middleware, outermost first.
    """

    def __init__(
        self,
        *,
        definitions: Iterable[Definition],
        tools: Iterable[Any] = (),
        models: Mapping[str, Model],
        reducers: Mapping[str, ContextReducer] | None = None,
        observers: Sequence[Any] = (),
        middleware: Sequence[Middleware] = (),
    ) -> None:
        self.definitions: dict[str, Definition] = {}
        for definition in definitions:
            if definition.name in self.definitions:
                raise DefinitionError(f"Two Definitions are named {definition.name!r}.")
            self.definitions[definition.name] = definition
        tools = list(tools)
        if any(d.binds_background_tools for d in self.definitions.values()):
            tools += TASK_TOOLS
        self.tools = ToolRegistry(tools)
        self.models = dict(models)
        self.reducers = dict(reducers or {})
        self.observers = ObserverHub(list(observers))
        self.middleware = tuple(middleware)
        self._runs = 0

    async def start(
        self, definition: str, messages: Sequence[Message], *, id: str | None = None
    ) -> LocalRun:
        """Start an Interaction of `definition`; returns at once with its handle."""
        found = self.definitions.get(definition)
        if found is None:
            raise errors.UnknownDefinition(
                f"No Definition named {definition!r} (known: {sorted(self.definitions)})."
            )
        self._runs += 1
        run = LocalRun(self, id or f"local-{self._runs}")
        root = _Interaction(
            run, InteractionMachine.start(found, run.id, list(messages)), parent=None
        )
        run._register(root)
        root.pump()
        return run


class LocalRun:
    """Handle of one local Interaction tree; the same verbs as `InteractionHandle`."""

    def __init__(self, runner: LocalRunner, run_id: str) -> None:
        self.runner = runner
        self.id = run_id
        self._processes: dict[str, _Interaction | _ToolCall] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._live: dict[str, LiveText] = {}  # streamed text of model calls in flight
        self.tasks = LocalTasks(runner.tools, self._spawn)

    # --- host verbs ------------------------------------------------------------------

    async def result(self, timeout: float | None = None) -> Output:
        """The Output; raises InteractionFailed (with `.code`) if the run failed."""
        await asyncio.wait_for(asyncio.shield(self._done), timeout)
        root = self._root.machine
        if root.output is not None:
            return root.output
        failure = root.failure or Failure.of(errors.STATE_INVALID, "ended without output")
        error = InteractionCanceled if failure.code == errors.CANCELED else InteractionFailed
        raise error(failure.message, code=failure.code)

    async def idle(self, timeout: float = 10.0) -> TreeSnapshot:
        """Wait until nothing is in flight (done, or waiting on the host); return a snapshot."""
        await asyncio.wait_for(self._idle.wait(), timeout)
        return self.snapshot()

    async def live_text(self, process_id: str | None = None) -> LiveText | None:
        """What the model call in flight has streamed so far (as `InteractionHandle`)."""
        return self._live.get(process_id or self.id)

    def snapshot(self) -> TreeSnapshot:
        snaps: list[ProcessSnapshot] = [p.snapshot() for p in self._processes.values()]
        return TreeSnapshot(root=snaps[0], processes=(*snaps, *self.tasks.processes()))

    async def steer(self, signal_id: str, *messages: Message) -> bool:
        """Queue user messages for the next model call; False if an exact duplicate."""
        accepted = self._root.machine.steer(signal_id, tuple(messages))
        self._root.pump()
        return accepted

    async def answer(self, pending: PendingToolInput, answer_id: str, response: Any) -> bool:
        """Answer a tool input wait (validated against its schema), or a background
        task's question (returns once the tool took the answer)."""
        if self.tasks.holds(pending.process_id):
            return await self.tasks.answer(pending, answer_id, response)
        process = self._processes.get(pending.process_id)
        if not isinstance(process, _ToolCall):
            raise errors.NoSuchWait(f"No tool call process {pending.process_id!r}.")
        accepted = process.machine.answer(pending.wait_id, answer_id, response)
        process.pump()
        return accepted

    async def resolve(
        self, unknown: UnknownEffect, settlement: ModelSettlement | ToolSettlement
    ) -> None:
        """Settle an unknown effect with the host's investigated settlement."""
        process = self._processes.get(unknown.process_id)
        if isinstance(process, _Interaction) and isinstance(settlement, ModelSettlement):
            process.machine.resolve(settlement)
            process.pump()
            return
        if isinstance(process, _ToolCall) and isinstance(settlement, ToolSettlement):
            process.machine.resolve(settlement)
            process.pump()
            return
        raise errors.SettlementMismatch(
            f"{type(settlement).__name__} does not settle process {unknown.process_id!r}."
        )

    async def cancel_task(self, task_id: str, reason: str = "") -> TaskSnapshot:
        """Stop a background task of this run (see `InteractionHandle.cancel_task`).

        Raises:
            TaskNotFound: no background task has this id.
            TaskEnded: it had already ended.
        """
        found = await self.tasks.cancel(task_id, reason or "host")
        if found is None:
            raise errors.TaskNotFound(f"No background task {task_id!r}.")
        return found

    async def pause(self) -> None:
        for process in self._processes.values():
            process.machine.pause()

    async def resume(self) -> None:
        for process in list(self._processes.values()):
            process.machine.resume()
            process.pump()

    async def cancel(self) -> None:
        self.tasks.cancel_all()
        for task in list(self._tasks):
            task.cancel()
        for process in self._processes.values():
            process.machine.cancel()
        self._finish()

    # --- plumbing --------------------------------------------------------------------

    @property
    def _root(self) -> _Interaction:
        root = next(iter(self._processes.values()))
        assert isinstance(root, _Interaction)
        return root

    def _register(self, process: _Interaction | _ToolCall) -> None:
        self._processes[process.process_id] = process

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        self._idle.clear()

        def finished(t: asyncio.Task[None]) -> None:
            self._tasks.discard(t)
            if not self._tasks:
                self._idle.set()

        task.add_done_callback(finished)
        return task

    def _finish(self) -> None:
        if not self._done.done():
            self._done.set_result(None)


class _Interaction:
    def __init__(
        self,
        run: LocalRun,
        machine: InteractionMachine,
        parent: _Interaction | None,
        effect_id: str | None = None,
    ) -> None:
        self.run = run
        self.machine = machine
        self.parent = parent
        self.effect_id = effect_id
        self.process_id = machine.state.process_id
        self._reported = False

    def snapshot(self) -> ProcessSnapshot:
        return self.machine.snapshot()

    def pump(self) -> None:
        for effect in self.machine.next_effects():
            if isinstance(effect, CallModel):
                self.run._spawn(self._call_model(effect))
            elif isinstance(effect, StartToolCall):
                child = _ToolCall(self.run, ToolCallMachine.start(effect.request), self)
                self.run._register(child)
                child.pump()
            elif isinstance(effect, StartDelegate):
                self._start_delegate(effect)
        if self.machine.done and not self._reported:
            self._reported = True
            if self.parent is None:
                self.run._finish()
            else:
                self.parent.child_ended(
                    DelegateSettled(
                        effect_id=self.effect_id or "",
                        output=self.machine.output,
                        failure=self.machine.failure,
                    )
                )

    def child_ended(self, outcome: CallSettled | DelegateSettled) -> None:
        if not self.machine.done:
            self.machine.on_call(outcome)
            self.pump()

    def _start_delegate(self, effect: StartDelegate) -> None:
        definition = self.run.runner.definitions.get(effect.definition)
        if definition is None:
            self.machine.on_call(
                DelegateSettled(
                    effect_id=effect.effect_id,
                    failure=Failure.of(
                        errors.DELEGATE_REJECTED,
                        f"Definition {effect.definition!r} is not registered; no child started.",
                    ),
                )
            )
            self.pump()
            return
        child = _Interaction(
            self.run,
            InteractionMachine.start(
                definition,
                effect.process_id,
                list(effect.messages),
                max_model_calls=effect.max_model_calls,
                capabilities=effect.capabilities,
            ),
            parent=self,
            effect_id=effect.effect_id,
        )
        self.run._register(child)
        child.pump()

    async def _call_model(self, effect: CallModel) -> None:
        runner = self.run.runner
        request = effect.request
        streamed = LiveTextBuffer(request.process_id, request.model_call_seq)

        def publish(text: str) -> None:
            streamed.add(text)
            self.run._live[request.process_id] = streamed.current()

        try:
            outcome = await call_model(
                request, runner.models, runner.reducers, runner.observers, publish
            )
        except asyncio.CancelledError:
            outcome = ModelUnknown(effect_id=effect.request.effect_id, diagnostic="cancelled")
            if self.machine.done:
                return
        finally:
            self.run._live.pop(request.process_id, None)
        self.machine.on_model(outcome)
        self.pump()


class _ToolCall:
    def __init__(self, run: LocalRun, machine: ToolCallMachine, parent: _Interaction) -> None:
        self.run = run
        self.machine = machine
        self.parent = parent
        self.process_id = machine.state.request.process_id
        self._reported = False

    def snapshot(self) -> ProcessSnapshot:
        return self.machine.snapshot()

    def pump(self) -> None:
        attempt = self.machine.next_attempt()
        if attempt is not None:
            self.run._spawn(self._run(attempt))
        outcome = self.machine.outcome
        if outcome is not None and not self._reported:
            self._reported = True
            self.parent.child_ended(
                CallSettled(effect_id=self.machine.state.request.effect_id, outcome=outcome)
            )

    async def _run(self, attempt: ToolAttempt) -> None:
        runner = self.run.runner
        try:
            with activate(self.run.tasks.runtime):
                attempted = await run_tool_attempt(
                    attempt, runner.tools, runner.middleware, runner.observers
                )
        except asyncio.CancelledError:
            if self.machine.status == "canceled":
                return
            attempted = Unknown(code=errors.TOOL_EXECUTION_FAILED, diagnostic="cancelled")
        outcome = (
            self.run.tasks.launch(attempted, attempt.request)
            if isinstance(attempted, Backgrounded)
            else attempted
        )
        self.machine.on_outcome(outcome)
        self.pump()

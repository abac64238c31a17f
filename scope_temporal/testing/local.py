"""LocalRunner: run Interactions in-process, without Temporal.

It runs the very drivers the workflows run (`scope_temporal.driver`), the same state
machines, and the same model-call and tool-attempt code as the worker's activities; only
the engine differs (`engine.py`: asyncio tasks instead of activities and child
workflows). So payload limits, steer checks, pause forwarding, the authority guard and
every rule of the loop behave as on Temporal, and users' agent tests run in milliseconds.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scope_temporal import errors
from scope_temporal.activities.model_call import ContextReducer
from scope_temporal.background.task_tools import TASK_TOOLS
from scope_temporal.chat import Message, Options
from scope_temporal.definition import Definition
from scope_temporal.driver.interaction import InteractionDriver
from scope_temporal.errors import InteractionCanceled, InteractionFailed
from scope_temporal.interaction.effects import ModelResend, ModelSettlement, ToolSettlement
from scope_temporal.interaction.snapshot import (
    PendingToolInput,
    ProcessSnapshot,
    TaskSnapshot,
    TreeSnapshot,
    UnknownEffect,
)
from scope_temporal.models.protocol import Model
from scope_temporal.models.streaming import LiveText
from scope_temporal.observers import ObserverHub
from scope_temporal.outputs import Failure, Output
from scope_temporal.payload_limits import DEFAULT_PAYLOAD_LIMIT_BYTES
from scope_temporal.payloads import (
    InteractionInput,
    ResolveInput,
    SteerInput,
    TaskSubmitInput,
    ToolInputAnswer,
)
from scope_temporal.registry import Registry
from scope_temporal.settle import resend_model_call
from scope_temporal.testing.engine import LocalEngine
from scope_temporal.tools.middleware import Middleware
from scope_temporal.tools.registry import ToolRegistry

_CANCEL_GRACE_SECONDS = 5.0


class LocalRunner:
    """Runs Definitions with local tools and models through the drivers, in-process.

    Background tools work too: their tasks run in this process (see `local_tasks`).

    Args:
        definitions: every Definition a run may start (delegates included).
        tools: the tool implementations, by name.
        models: models by the name Definitions refer to (e.g. `{"default": ScriptedModel(...)}`).
        reducers: context reducers by name.
        observers: observer objects (see `scope_temporal.observers`).
        middleware: worker-level tool middleware, outermost first.
        payload_limit_bytes: the largest payload accepted, as `ScopeWorker`'s (1 MB).
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
        payload_limit_bytes: int = DEFAULT_PAYLOAD_LIMIT_BYTES,
    ) -> None:
        self.registry = Registry(definitions, payload_limit=payload_limit_bytes)
        tools = list(tools)
        if any(d.binds_background_tools for d in self.registry.definitions):
            tools += TASK_TOOLS
        self.tools = ToolRegistry(tools)
        self.models = dict(models)
        self.reducers = dict(reducers or {})
        self.observers = ObserverHub(list(observers))
        self.middleware = tuple(middleware)
        self._runs = 0

    @property
    def definitions(self) -> dict[str, Definition]:
        """The Definitions by name."""
        return {d.name: d for d in self.registry.definitions}

    async def start(
        self,
        definition: str,
        messages: Sequence[Message],
        *,
        id: str | None = None,
        approved_tools: Sequence[str] = (),
        options: Options | None = None,
    ) -> LocalRun:
        """Start an Interaction of `definition`; returns at once with its handle.
        `approved_tools` and `options` as for `ScopeClient.start` (InvalidOptions for
        options a model cannot take; nothing is started)."""
        if self.registry.lookup(definition) is None:
            raise errors.UnknownDefinition(
                f"No Definition named {definition!r} (known: {self.registry.names})."
            )
        self._runs += 1
        run = LocalRun(self, id or f"local-{self._runs}")
        opened = run.engine.open_interaction(
            run.id,
            InteractionInput(
                definition=definition,
                messages=tuple(messages),
                approved_tools=tuple(approved_tools),
                options=options,
            ),
        )
        if isinstance(opened, Failure):
            raise errors.refusal(opened.code, opened.message)
        run._started(opened)
        return run


class LocalRun:
    """Handle of one local Interaction tree; the same verbs as `InteractionHandle`."""

    def __init__(self, runner: LocalRunner, run_id: str) -> None:
        self.runner = runner
        self.id = run_id
        self.engine = LocalEngine(runner)
        self.tasks = self.engine.tasks
        self._run: asyncio.Task[Output | Failure] | None = None

    def _started(self, root: InteractionDriver) -> None:
        self._run = self.engine.spawn(self.engine.run_interaction(root))

    @property
    def _root(self) -> InteractionDriver:
        root = self.engine.processes[self.id]
        assert isinstance(root, InteractionDriver)
        return root

    # --- host verbs ------------------------------------------------------------------

    async def result(self, timeout: float | None = None) -> Output:
        """The Output; raises InteractionFailed (with `.code`) if the run failed."""
        assert self._run is not None
        done, _ = await asyncio.wait([self._run], timeout=timeout)
        if not done:
            raise TimeoutError(f"Interaction {self.id!r} did not end in {timeout}s.")
        machine = self._root.machine
        if machine.output is not None:
            return machine.output
        failure = machine.failure or Failure.of(errors.STATE_INVALID, "ended without output")
        error = InteractionCanceled if failure.code == errors.CANCELED else InteractionFailed
        raise error(failure.message, code=failure.code)

    async def idle(self, timeout: float = 10.0) -> TreeSnapshot:
        """Wait until nothing is in flight (done, or waiting on the host); return a snapshot."""
        await asyncio.wait_for(self.engine.idle.wait(), timeout)
        return self.snapshot()

    async def live_text(self, process_id: str | None = None) -> LiveText | None:
        """What the model call in flight has streamed so far (as `InteractionHandle`)."""
        return self.engine.live.get(process_id or self.id)

    def snapshot(self) -> TreeSnapshot:
        """Every process the run started (ended ones included) and every task."""
        snaps: list[ProcessSnapshot] = [p.snapshot() for p in self.engine.processes.values()]
        return TreeSnapshot(root=snaps[0], processes=(*snaps, *self.tasks.processes()))

    async def steer(self, signal_id: str, *messages: Message) -> bool:
        """Queue user messages for the next model call; False if an exact duplicate."""
        input = SteerInput(signal_id=signal_id, messages=tuple(messages))
        root = self._root
        root.validate_steer(input)
        return root.steer_update(input)

    async def answer(self, pending: PendingToolInput, answer_id: str, response: Any) -> bool:
        """Answer a tool input wait (validated against its schema), or a background
        task's question (returns once the tool took the answer)."""
        if self.tasks.holds(pending.process_id):
            return await self.tasks.answer(pending, answer_id, response)
        input = ToolInputAnswer(
            wait_id=pending.wait_id,
            answer_id=answer_id,
            response=response,
            process_id=pending.process_id,
        )
        process = self.engine.processes.get(pending.process_id)
        if isinstance(process, InteractionDriver):
            raise process.answer_elsewhere(input)
        if process is None:
            raise errors.NoSuchWait(f"No tool call process {pending.process_id!r}.")
        process.validate_answer(input)
        return await process.answer_update(input)

    async def resolve(
        self, unknown: UnknownEffect, settlement: ModelSettlement | ModelResend | ToolSettlement
    ) -> None:
        """Settle an unknown effect with the host's investigated settlement."""
        input = ResolveInput(signal_id=f"resolve:{unknown.effect_id}", settlement=settlement)
        process = self.engine.processes.get(unknown.process_id)
        if process is None:
            raise errors.SettlementMismatch(f"No process {unknown.process_id!r} to settle.")
        process.validate_resolve(input)
        await process.resolve_update(input)

    async def retry_model_call(self, unknown: UnknownEffect) -> None:
        """Send an unknown model call's request again as a new Effect (see
        `InteractionHandle.retry_model_call`); never for a tool call."""
        await self.resolve(unknown, resend_model_call(unknown.request))

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

    async def submit_task(
        self, tool: str, arguments: dict[str, Any], *, key: str | None = None
    ) -> str:
        """Start a background tool as a task of this run (as `InteractionHandle.submit_task`;
        without a key, a fresh one)."""
        input = TaskSubmitInput(key=key or uuid.uuid4().hex, tool=tool, arguments=arguments)
        return await self._root.submissions.submit(input)

    async def pause(self) -> None:
        """Start nothing new (in-flight calls settle); children are paused too."""
        self._root.pause()

    async def resume(self) -> None:
        self._root.resume()

    async def cancel(self) -> None:
        """Cancel the Interaction; its children and tasks are cancelled with it."""
        assert self._run is not None
        self._run.cancel()
        await asyncio.wait([self._run])
        self.tasks.cancel_all()
        rest = self.engine.running()
        if rest:
            await asyncio.wait(rest, timeout=_CANCEL_GRACE_SECONDS)


__all__ = ["LocalRun", "LocalRunner"]

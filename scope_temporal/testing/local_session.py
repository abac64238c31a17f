"""Sessions in-process: `LocalRunner.session(...)`, the same driver as `scope.Session`.

A `LocalSession` runs the session's driver (`scope_temporal.driver.session`) and its
turns' Interaction drivers on one in-process engine; a turn's model calls get the
session's transcript as their base straight from the session (checked by its digest).
Its verbs are `SessionHandle`'s: `send`, `end`, `transcript`, `snapshot`, `turn`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import NoReturn

from scope_temporal.chat import Message
from scope_temporal.driver.session import SessionDriver
from scope_temporal.driver.session_events import read_session
from scope_temporal.driver.transport import ChildEnd
from scope_temporal.errors import InvalidSignal
from scope_temporal.ids import turn_process_id
from scope_temporal.interaction.events import Event
from scope_temporal.interaction.session import SessionMachine
from scope_temporal.interaction.session_stream import SessionPosition, after_turn
from scope_temporal.interaction.session_values import (
    SendReceipt,
    SessionSnapshot,
    SessionTranscript,
    as_messages,
    session_start_digest,
)
from scope_temporal.outputs import Failure, Output
from scope_temporal.payloads import InteractionInput, SessionEndInput, SessionInput, SessionSend
from scope_temporal.testing.engine import LocalEngine, LocalTransport, LocalWorker, child_result
from scope_temporal.testing.local_run import LocalRun


class _CarriedSession(Exception):
    def __init__(self, input: SessionInput) -> None:
        super().__init__("continue as new")
        self.input = input


class _SessionTransport(LocalTransport):
    """The session driver's transport in-process (see `driver.transport`): the engine's,
    plus its turns."""

    def __init__(self, engine: LocalEngine, turns: dict[str, asyncio.Task[Output | Failure]]):
        super().__init__(engine)
        self._turns = turns

    async def run_turn(
        self,
        input: InteractionInput,
        *,
        process_id: str,
        summary: str,
        started: Callable[[], None],
    ) -> Output | ChildEnd:
        engine = self._engine
        opened = engine.open_interaction(process_id, input)
        if isinstance(opened, Failure):
            return child_result(opened)
        log = engine.logs.of(process_id)  # the turn's events, from its start
        task: asyncio.Task[Output | Failure] = engine.spawn(engine.run_interaction(opened))
        task.add_done_callback(lambda _: log.close())
        self._turns[process_id] = task
        task.add_done_callback(lambda _: engine.changed())
        started()
        try:  # parked while the turn runs, so the engine sees the turn's own idleness
            await engine.wait_until(task.done)
        except asyncio.CancelledError:  # cancel the turn with its session's request
            task.cancel()
            await asyncio.wait([task])
            raise
        return child_result(task.result())

    def asks_steer_answers(self) -> bool:
        return True

    async def continue_session_as_new(self, input: SessionInput) -> NoReturn:
        raise _CarriedSession(input)


class SharedSession:
    """One session in-process: its driver, engine and turns, shared by every handle on
    its id (`LocalRunner.session` called again). The first handle's send starts it, with
    that handle's run context and approved tools (as update-with-start does)."""

    def __init__(self, runner: LocalWorker, session_id: str, start: SessionInput) -> None:
        self.runner = runner
        self.id = session_id
        self.definition = start.definition
        self.engine = LocalEngine(runner)
        self.turns: dict[str, asyncio.Task[Output | Failure]] = {}
        self.driver = self._open(self._machine(start), start)
        self.run: asyncio.Task[SessionSnapshot] | None = None

    def _machine(self, start: SessionInput) -> SessionMachine:
        return SessionMachine.start(self.id, start.definition, start.context, start.approved_tools)

    def _open(self, machine: SessionMachine, input: SessionInput) -> SessionDriver:
        registry = self.runner.registry
        driver = SessionDriver(
            machine,
            _SessionTransport(self.engine, self.turns),
            input,
            limit=registry.payload_limit,
            definition=registry.lookup(input.definition),
        )
        self.engine.sessions[self.id] = driver
        return driver

    def starting(self, start: SessionInput) -> None:
        """A handle sends or ends: the first starts the session with that handle's input.
        Once started it is never replaced (an ended session stays ended)."""
        if self.run is None:
            self.driver = self._open(self._machine(start), start)
            self.run = self.engine.spawn(self._drive())

    async def _drive(self) -> SessionSnapshot:
        while True:
            try:
                return await self.driver.run()
            except _CarriedSession as carried:
                assert carried.input.state is not None  # the driver always carries it
                self.driver = self._open(SessionMachine(carried.input.state), carried.input)


class LocalSession:
    """A handle on one session run in-process; the same verbs as `SessionHandle`.

    Made by `LocalRunner.session(...)`; the first `send` starts the session. Another call
    with the same id gives another handle on the same session, with its own run context,
    approved tools and view of which turns ended (a send from a handle holding another
    context than the session started with is refused, as on Temporal).
    """

    def __init__(self, shared: SharedSession, start: SessionInput) -> None:
        self.shared = shared
        self.runner = shared.runner
        self.id = shared.id
        self.definition = start.definition
        self.engine = shared.engine
        self._start = start
        self._digest = session_start_digest(start.context, start.approved_tools)
        self.last_receipt: SendReceipt | None = None
        """What the latest `send` did (started a turn, or steered the running one)."""
        self._seen = 0  # the latest turn whose end this handle saw

    @property
    def _driver(self) -> SessionDriver:
        return self.shared.driver

    # --- host verbs ------------------------------------------------------------------

    async def send(
        self, message: str | Message | Sequence[Message], *, message_id: str | None = None
    ) -> LocalRun:
        """Send one message: it opens a turn, or steers the running one. Returns the
        handle of the turn that takes it (as `SessionHandle.send`); `last_receipt` says
        how it was taken.

        Raises:
            InvalidSignal, SignalConflict, StaleMessage, SessionEnded: as
            `SessionHandle.send` (nothing changed when any is raised).
        """
        input = SessionSend(
            message_id=message_id or uuid.uuid4().hex,
            messages=as_messages(message),
            definition=self.definition,
            follows=self._seen,
            start_digest=self._digest,
        )
        if self.shared.run is None:
            self.shared.starting(self._start)
        receipt = self._driver.validate_send(input)
        if receipt is None:
            self._driver.check_room(input)
            receipt = await self._driver.send(input)
        else:
            receipt = await self._driver.duplicate(receipt)
        self.last_receipt = receipt
        return self.turn(receipt.turn)

    def turn(self, number: int) -> LocalRun:
        """The handle of turn `number` (it must have started)."""
        process_id = turn_process_id(self.id, number)
        task = self.shared.turns.get(process_id)
        if task is None:
            raise InvalidSignal(f"Session {self.id!r} has no turn {number} yet.")

        def seen() -> None:
            self._seen = max(self._seen, number)

        return LocalRun.attached(self.runner, self.engine, process_id, task, on_end=seen)

    def events(
        self, after: SessionPosition | tuple[int, int] | None = None
    ) -> AsyncIterator[Event]:
        """The session's events, turn after turn, as `SessionHandle.events` (each
        streamed piece of text is its own event here, as in `LocalRun.events`).

        Raises:
            EventOffsetError: `after` is ahead of the session, or of its turn's stream.
        """

        async def snapshot() -> SessionSnapshot:
            return self._driver.snapshot()

        async def past_turn(turn: int) -> SessionSnapshot:
            await self.engine.wait_until(
                lambda: after_turn(self._driver.snapshot(), turn) != "wait"
            )
            return self._driver.snapshot()

        async def turn_events(turn: int, offset: int | None) -> AsyncIterator[Event]:
            process_id = turn_process_id(self.id, turn)

            def began() -> bool:  # its Interaction runs, or the turn ended without one
                record = self._driver.snapshot().turns[turn - 1]
                return process_id in self.shared.turns or record.status != "running"

            await self.engine.wait_until(began)
            if process_id in self.shared.turns:
                async for event in self.engine.logs.of(process_id).read(offset):
                    yield event

        return read_session(
            self.id, after, snapshot=snapshot, past_turn=past_turn, turn_events=turn_events
        )

    async def end(self, reason: str = "ended by the host") -> None:
        """End the session (a running turn is cancelled first); returns once it ended.
        Before any message it starts the session ended (as `SessionHandle.end`): every
        later `send` on its id, from any handle, is refused with `SessionEnded`."""
        if self.shared.run is None:
            self.shared.starting(self._start)
        self._driver.end(SessionEndInput(reason=reason))
        assert self.shared.run is not None  # started above, or by a send
        await asyncio.wait([self.shared.run])

    async def snapshot(self) -> SessionSnapshot:
        """As `SessionHandle.snapshot`: a turn whose end a handle saw shows as ended."""

        def caught_up() -> bool:
            current = self._driver.machine.current
            return current is None or current.turn > self._seen

        await asyncio.wait_for(self.engine.wait_until(caught_up), 10)
        return self._driver.snapshot()

    async def transcript(self) -> SessionTranscript:
        """The conversation so far, with its turns."""
        snapshot = await self.snapshot()
        return SessionTranscript.of(snapshot, tuple(self._driver.machine.transcript))

    async def idle(self, timeout: float = 10.0) -> SessionSnapshot:
        """Wait until nothing runs (the session and its turns wait for their host)."""
        await asyncio.wait_for(self.engine.idle.wait(), timeout)
        return self._driver.snapshot()


__all__ = ["LocalSession", "SharedSession"]

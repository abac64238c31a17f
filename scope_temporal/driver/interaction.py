"""The one driver of an Interaction, on any engine (Temporal or `LocalRunner`).

Theory of operation. The machine decides; the driver carries: it starts each effect
through the transport as concurrent work, feeds each settlement back, maps the host's
inputs onto the machine, and waits until something changed. What it decides itself are
the engine-level rules, the same on every engine:

 1. Payloads: a command over the recorded limit fails it (`interaction.payload.too_large`);
    an input over it, or a steer making the next model request too large, is refused.
 2. Inputs addressed below the Interaction (a tool input, a settlement for a tool call)
    are forwarded to the child process on their path; pause and resume reach every child.
 3. The run's settings (digest, payload limit, served delegates) are recorded when it
    starts; signals that arrive before are held until then, so a replay decides alike.
 4. At a round boundary with nothing in flight the run continues as new if its state
    fits the next run's input, else fails before Temporal's history limits (`carry`).
 5. Cancelled, it cancels its children and the background tasks its calls launched.
    Ended (completed, failed, cancelled), it closes its own MCP sessions
    (`driver.mcp_sessions`); continue-as-new carries them.
 6. It reports what happens to the tree's event stream (`interaction.news`): the effects
    it starts, each model outcome, then, before each next step, what settled since. The
    root hosts the stream; a delegate reports to its root's (`route.events_to`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, assert_never

from scope_temporal import errors, names
from scope_temporal.context_refs import EMPTY_REF
from scope_temporal.driver.attention import Teller, TreeStatus
from scope_temporal.driver.calls import run_delegate, run_tool_call
from scope_temporal.driver.carry import CarryCheck, carried
from scope_temporal.driver.inputs import check_size, check_steer_room, model_settlement_for
from scope_temporal.driver.mcp_sessions import McpSessionRoutes
from scope_temporal.driver.model_calls import ModelCaller
from scope_temporal.driver.start import adopt_settings
from scope_temporal.driver.submits import Submissions
from scope_temporal.driver.transport import InteractionTransport
from scope_temporal.driver.turn_room import next_call_bytes
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.attention import NEEDS_A_PERSON, AttentionReport
from scope_temporal.interaction.effects import (
    CallModel,
    ModelEffectRequest,
    StartDelegate,
    StartToolCall,
    WaitRetry,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.snapshot import ProcessSnapshot, SignalKind
from scope_temporal.outputs import Failure, Output
from scope_temporal.payload_limits import size_of
from scope_temporal.payloads import (
    ContextPage,
    ContextPageRequest,
    ControlInput,
    InteractionCarry,
    InteractionInput,
    ResolveInput,
    Route,
    RunSettings,
    SteerInput,
    SteerTaken,
    ToolInputAnswer,
)


class InteractionDriver:
    """Drives one run of one Interaction.

    Args:
        machine: the Interaction's machine (new, or restored from a carried state).
        transport: the engine.
        input: the run's input (its options, and what continue-as-new carried).
        limit: the serving worker's payload limit, used only until the run's settings are
            recorded (and then only by update validators, which replay never runs).
    """

    def __init__(
        self,
        machine: InteractionMachine,
        transport: InteractionTransport,
        input: InteractionInput,
        *,
        limit: int,
    ) -> None:
        self.machine = machine
        self._transport = transport
        self._input = input
        carry = input.carry  # what the previous run carried (`_carried`)
        resumed = None
        if input.state is not None and carry.context_digest is not None:
            resumed = (machine.context, carry.context_digest)
        self._models = ModelCaller(
            carry.context_sent, machine.base.ref if machine.base else EMPTY_REF, resumed
        )
        self._news = machine.news()
        self._events_to = input.route.events_to or machine.process_id
        self._settings = carry.settings
        self._provisional_limit = limit
        self._held: list[Callable[[], None]] = []  # signals that came before the settings
        self._children: set[str] = set()  # running child processes (signals go to them)
        self._tasks: list[asyncio.Task[None]] = []
        self._dirty = False
        self._crash: BaseException | None = None
        self._carry = CarryCheck()
        self._mcp_sessions = McpSessionRoutes(machine.process_id, carry.mcp_sessions)
        self.submissions = Submissions(
            machine,
            transport,
            self._spawn,
            Route(events_to=self._events_to, session_id=input.route.session_id),
        )
        self.status = TreeStatus(
            machine,
            transport,
            lambda: self._children | set(machine.tasks_to_cancel),
            carried=carry.reports,
            recorded=carry.scope_status,
            track=input.track_status,
            teller=Teller(input.route.report_to, carry.told),
        )
        """Its status for people, for its tree (see `driver.attention`)."""

    # --- the run ---------------------------------------------------------------------

    @property
    def limit(self) -> int:
        """The payload limit: the recorded one, once known."""
        settings = self._settings
        return settings.payload_limit if settings is not None else self._provisional_limit

    def _fits(self, request: ModelEffectRequest) -> bool:
        """Whether `request`'s model call input fits the payload limit (the machine's
        measure for the steers it applies; `ModelCaller.fits`)."""
        payload = self._models.payload(self.machine, request, self._events_to)
        return size_of(payload) <= self.limit or not self._transport.defers_steers()

    def begin(self, recorded: RunSettings) -> Failure | None:
        """Adopt the settings recorded for this run, and deliver the signals held until
        now; or the failure if the Definition changed since they were recorded."""
        changed = adopt_settings(self.machine, recorded)
        if changed is not None:
            return changed
        self._settings = recorded
        self.status.on = recorded.attention
        held, self._held = self._held, []
        for deliver in held:
            deliver()
        return None

    async def run(self) -> Output | Failure:
        """Drive the Interaction to its end: its Output, or why it failed.

        Raises:
            asyncio.CancelledError: it was cancelled (children and tasks first), or evicted.
        """
        machine = self.machine
        try:
            await self._drive()
        except asyncio.CancelledError:
            if self._transport.evicted():  # not the run's end: nothing to clean up
                raise
            machine.cancel()
            self._transport.publish(self._news.settled())
            self.status.update()
            self.status.show()
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*(self._transport.cancel_task(t) for t in machine.tasks_to_cancel))
            await self._mcp_sessions.close(self._transport)
            raise
        await self._mcp_sessions.close(self._transport)
        if machine.output is not None:
            return machine.output
        return machine.failure or Failure.of(errors.STATE_INVALID, "no output")

    async def _drive(self) -> None:
        machine, transport = self.machine, self._transport
        calls_at_start = machine.model_calls_started
        while True:
            self._transport.publish(self._news.settled())
            if machine.at_round_boundary and not self._tasks:
                every = self._input.continue_as_new_every
                due = every is not None and machine.model_calls_started - calls_at_start >= every
                if (due or transport.continue_as_new_suggested()) and self._can_carry():
                    await transport.continue_as_new(self._carried())
            steers = machine.pending_steers
            effects = machine.next_effects(self._fits)
            self._transport.publish(self._news.started(effects, steers))
            for effect in effects:
                self._start(effect)
            self.status.update()  # next_effects may have ended it (a quota)
            self.status.show()
            if self._crash is not None and not machine.done:
                raise self._crash  # a bug outside the machine (a machine fails closed)
            if machine.done:
                for task in self._tasks:
                    task.cancel()
                return
            await transport.wait_until(lambda: self._dirty)
            self._dirty = False

    def _start(self, effect: CallModel | StartToolCall | StartDelegate | WaitRetry) -> None:
        machine, transport = self.machine, self._transport
        route = Route(  # children of a run that shows who needs a person tell it
            events_to=self._events_to,
            report_to=machine.process_id if self.status.on else None,
            session_id=self._input.route.session_id,
        )
        match effect:
            case CallModel():
                self._spawn(self._call_model(effect))
            case WaitRetry():
                self._spawn(self._models.wait(machine, effect, transport))
            case StartToolCall():
                calls, sessions = self._children, self._mcp_sessions
                self._spawn(
                    run_tool_call(machine, effect, transport, calls, self.limit, route, sessions)
                )
            case StartDelegate():
                settings = self._settings
                self._spawn(
                    run_delegate(
                        machine,
                        effect,
                        transport,
                        self._children,
                        served=settings.delegates if settings is not None else (),
                        track_status=self._input.track_status,
                        route=route,
                    )
                )
            case _:
                assert_never(effect)

    async def _call_model(self, effect: CallModel) -> None:
        outcome = await self._models.call(
            self.machine, effect, self._transport, self.limit, events_to=self._events_to
        )
        if outcome is not None:
            retried = self.machine.retry_reason is not None
            self._transport.publish(self._news.model(effect.request, outcome, retried=retried))

    def _carried(self) -> InteractionInput:
        """The next run's input: the one place its carry is built (`__init__` reads it;
        a host's transport adds its event stream's state)."""
        carry = InteractionCarry(
            context_sent=self._models.context_sent,
            context_digest=self._models.carried_digest(self.machine.context),
            settings=self._settings,
            reports=self.status.carried(),
            told=self.status.teller.told,
            scope_status=self.status.recorded if self.status.on else None,
            mcp_sessions=self._mcp_sessions.carried,
        )
        return carried(self._input, self.machine, carry)

    def _can_carry(self) -> bool:
        """Whether the state fits in the next run's input (see `carry`)."""
        return self._carry.fits(self.machine, self._carried(), self.limit, self._transport)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = self._transport.spawn(work)
        self._tasks.append(task)

        def finished(t: asyncio.Task[None]) -> None:
            self._tasks.remove(t)
            if not t.cancelled() and t.exception() is not None and self._crash is None:
                self._crash = t.exception()
            self._touch()

        task.add_done_callback(finished)

    def _touch(self) -> None:
        self._dirty = True
        self._transport.changed()  # the drive loop records and tells (driver.attention)

    # --- the host's inputs -----------------------------------------------------------

    def _hold(self, deliver: Callable[[], None]) -> bool:
        """Hold a signal until the run's settings are recorded (True: held)."""
        if self._settings is not None:
            return False
        self._held.append(deliver)
        return True

    def reject(self, signal_id: str, signal: SignalKind, error: ScopeError) -> None:
        """Record an input refused before it could be read (e.g. malformed)."""
        self.machine.record_rejected(signal_id, signal, error)
        self._touch()

    def steer_signal(self, input: SteerInput) -> None:
        """A steer sent as a signal: applied, or recorded as rejected. One its session
        passed (`reply_to`) is answered instead of recorded: the session takes or
        refuses the host's message by this very check (`SteerTaken`)."""
        if self._hold(lambda: self.steer_signal(input)):
            return
        refusal: ScopeError | None = None
        try:
            self.validate_steer(input)
            self.machine.steer(input.signal_id, input.messages)
        except ScopeError as error:
            refusal = error
            if input.reply_to is None:
                self.machine.record_rejected(input.signal_id, "steer", error)
        if input.reply_to is not None:
            answer = SteerTaken(
                signal_id=input.signal_id,
                code=refusal.code if refusal is not None else None,
                message=refusal.message if refusal is not None else "",
            )
            self._spawn(self._transport.signal(input.reply_to, names.SESSION_STEER_TAKEN, answer))
        self._touch()

    def validate_steer(self, input: SteerInput) -> None:
        """Raise the ScopeError a steer would be refused with (nothing changes)."""
        check_steer_room(next_call_bytes(self.machine, self._events_to), input, self.limit)
        self.machine.check_steer(input.signal_id, input.messages)

    def steer_update(self, input: SteerInput) -> bool:
        """Apply a validated steer; False for an exact duplicate."""
        accepted = self.machine.steer(input.signal_id, input.messages)
        self._touch()
        return accepted

    def resolve_signal(self, input: ResolveInput) -> None:
        """A settlement sent as a signal: applied here, forwarded, or recorded as rejected."""
        if self._hold(lambda: self.resolve_signal(input)):
            return
        try:
            check_size(input, "The settlement", self.limit)
        except ScopeError as error:
            self.reject(input.signal_id, "resolve", error)
            return
        if input.settlement.request.process_id != self.machine.process_id:
            self._forward(input.settlement.request.process_id, names.RESOLVE, input)
            return
        try:
            settlement = model_settlement_for(input, self.limit)
            self.machine.resolve(settlement)
            self._transport.record_settlement(settlement)
            self._transport.publish(self._news.model(settlement.request, settlement))
        except ScopeError as error:
            self.machine.record_rejected(input.signal_id, "resolve", error)
        self._touch()

    def validate_resolve(self, input: ResolveInput) -> None:
        self.machine.check_resolution(model_settlement_for(input, self.limit))

    async def resolve_update(self, input: ResolveInput) -> None:
        settlement = model_settlement_for(input, self.limit)
        machine = self.machine
        # On replay an update can be applied before the activity failure it settles,
        # when both fall in one workflow task: wait for the unknown to be recorded.
        await self._transport.wait_until(lambda: not machine.model_in_flight)
        machine.resolve(settlement)
        self._transport.record_settlement(settlement)
        self._transport.publish(self._news.model(settlement.request, settlement))
        self._touch()

    def tool_input_signal(self, input: ToolInputAnswer) -> None:
        """An answer sent here as a signal goes to the process holding the wait."""
        if self._hold(lambda: self.tool_input_signal(input)):
            return
        try:
            check_size(input, "The answer", self.limit)
        except ScopeError as error:
            self.reject(input.answer_id, "tool_input", error)
            return
        self._forward(_waiting(input), names.TOOL_INPUT, input)

    def answer_elsewhere(self, input: ToolInputAnswer) -> ScopeError:
        """An answer sent as an update must go to the process holding the wait."""
        target = _waiting(input)
        return errors.NoSuchWait(
            f"Interaction {self.machine.process_id!r} holds no input wait itself; "
            f"send the answer to the ToolCall process that waits ({target!r}), as "
            "InteractionHandle.answer does, or as a signal here (it is forwarded)."
        )

    def pause(self) -> None:
        """Start nothing new, here and in every child; in-flight calls settle."""
        self.machine.pause()
        self._control(names.PAUSE)

    def resume(self) -> None:
        self.machine.resume()
        self._control(names.RESUME)

    def _control(self, signal: str) -> None:
        for child in sorted(self._children):
            self._signal_child(child, signal, ControlInput())
        self._touch()

    def _forward(self, target: str, signal: str, payload: ResolveInput | ToolInputAnswer) -> None:
        """Pass a signal addressed to a descendant to the active child on its path (or to
        one of this Interaction's background tasks)."""
        machine = self.machine
        for child in sorted(self._children) + list(machine.background_tasks):
            if target == child or target.startswith(child + "/"):
                self._signal_child(child, signal, payload)
                return
        refusal = errors.NoSuchWait(f"No active child process {target!r} to deliver {signal} to.")
        if isinstance(payload, ResolveInput):
            self.reject(payload.signal_id, "resolve", refusal)
        else:
            self.reject(payload.answer_id, "tool_input", refusal)

    def _signal_child(self, child_id: str, signal: str, payload: Any) -> None:
        self._spawn(self._transport.signal(child_id, signal, payload))

    # --- reading ---------------------------------------------------------------------

    def attention_signal(self, report: AttentionReport) -> None:
        """A child's report of what it needs from a person (signal `scope.attention`)."""
        if self._hold(lambda: self.attention_signal(report)):
            return
        if self.status.heard(report):
            self._touch()

    def snapshot(self) -> ProcessSnapshot:
        snap = self.machine.snapshot()
        # calls running as attempts of this Interaction are not child processes
        children = tuple(c for c in snap.active_children if c in self._children)
        people = self.status.current()
        status = "waiting" if snap.status == "running" and people in NEEDS_A_PERSON else snap.status
        return snap.model_copy(
            update={"active_children": children, "scope_status": people, "status": status}
        )

    def context_page(self, query: ContextPageRequest) -> ContextPage:
        """Messages of the latest model call, for a worker whose cache missed them."""
        return self._models.page(query)


def _waiting(answer: ToolInputAnswer) -> str:
    """The process holding the wait an answer is for."""
    return answer.process_id or answer.wait_id.rsplit("/wait/", 1)[0]


__all__ = ["InteractionDriver"]

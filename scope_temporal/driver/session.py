"""The one driver of a session, on any engine (Temporal or `LocalRunner`).

Theory of operation. The machine (`interaction/session.py`) decides; the driver carries.
It asks the machine for effects and carries each out through the transport: a turn is
a child Interaction `<session id>/turn/<n>` started with the transcript by reference, a
steer goes to the running turn as `scope.steer` with the message id as its signal id, a
cancellation cancels the turn's child. How each turn ended goes back to the machine.
What it decides itself are the engine-level rules:

 1. A message over the payload limit, or for another Definition than the session runs,
    is refused before it reaches the machine; so is one whose turn's first model call
    would not fit the limit (with the steers and notices a next turn would open with,
    while a turn runs: that turn may miss them). Checked when the message is sent (the
    validator), never again on replay: a refused message changed nothing.
 1a. A message that steers the running turn is taken only if that turn takes it: the
    session passes it on asking for an answer (`SteerInput.reply_to`), the turn checks
    it as it checks any steer (what its next model call will carry, `validate_steer`)
    and answers (`SteerTaken`); refused, the message is withdrawn and the send raises
    that refusal (nothing changed). One check, the turn's, over the turn's own state:
    a `steered` receipt is never given for a steer the turn refuses. (A session from
    before this rule, replaying, keeps passing steers without asking.)
 2. A send returns once the turn that takes it runs (a new turn: once its child started),
    so the turn's handle finds it; a send whose turn the session withdrew (it ended
    first) raises `SessionEnded`. A message whose sender has seen the running turn end
    (its child's result can reach a host before the session) waits for the session to
    take that end, and opens the next turn.
 3. Idle, with nothing in flight, the session continues as new every
    `continue_as_new_every` turns or when the engine suggests it, carrying its state.
 4. `scope.context` on a session pages through its transcript: what a worker fetches as
    a turn's base.
 5. A turn runs with the session's id (its background tasks notify the session) and the
    task notifications the session kept for it.
"""

from __future__ import annotations

import asyncio
from typing import assert_never

from scope_temporal import errors, names
from scope_temporal.context_refs import BaseRef
from scope_temporal.definition import Definition
from scope_temporal.driver.inputs import check_size, refuse_over
from scope_temporal.driver.model_calls import context_page
from scope_temporal.driver.transport import Ended, Refused, SessionTransport
from scope_temporal.driver.turn_room import model_input_size
from scope_temporal.errors import InvalidSignal, ScopeError, SessionEnded
from scope_temporal.ids import turn_process_id
from scope_temporal.interaction.session import SessionMachine
from scope_temporal.interaction.session_values import (
    CancelTurn,
    SendReceipt,
    SessionEffect,
    SessionSnapshot,
    StartTurn,
    SteerTurn,
)
from scope_temporal.outputs import Failure, Output
from scope_temporal.payloads import (
    ContextPage,
    ContextPageRequest,
    InteractionInput,
    Route,
    SessionEndInput,
    SessionInput,
    SessionSend,
    SteerInput,
    SteerTaken,
)

KEPT_REFUSALS = 100
"""Steers the running turn refused, kept (the latest) for repeats of their sends."""


class SessionDriver:
    """Drives one run of one session.

    Args:
        machine: the session's machine (new, or restored from a carried state).
        transport: the engine.
        input: the run's input (its options, and what continue-as-new carried).
        limit: the payload limit a message must fit.
        definition: the Definition the turns run, as served (for `check_room`; None: no
            room check beyond the message's own size).
    """

    def __init__(
        self,
        machine: SessionMachine,
        transport: SessionTransport,
        input: SessionInput,
        *,
        limit: int,
        definition: Definition | None = None,
    ) -> None:
        self.machine = machine
        self._definition = definition
        self._transport = transport
        self._input = input
        self._limit = limit
        self._running: dict[str, asyncio.Task[None]] = {}  # turn process id -> its task
        self._started: set[int] = set()
        self._dirty = False
        self._crash: BaseException | None = None
        self._begun_turns: set[str] = set()  # turn tasks whose coroutine ran
        self._asking: set[str] = set()  # steers passed with reply_to, not answered yet
        self._answers: dict[str, SteerTaken] = {}  # the running turn's answers, by id
        self._refused: dict[str, ScopeError] = {}  # the latest steers withdrawn, by id
        self._turns_at_start = machine.turns

    # --- the run ---------------------------------------------------------------------

    async def run(self) -> SessionSnapshot:
        """Drive the session until it ends; its final snapshot.

        Raises:
            asyncio.CancelledError: the session was cancelled (its running turn with it).
        """
        machine, transport = self.machine, self._transport
        while True:
            if machine.phase == "idle" and not self._running and self._due():
                await self._continue_as_new()
            for effect in machine.next_effects():
                self._carry_out(effect)
            if self._crash is not None:
                raise self._crash
            if machine.phase in ("ended", "failed") and not self._running:
                return machine.snapshot()
            self._show()
            await transport.wait_until(lambda: self._dirty)
            self._dirty = False

    async def _continue_as_new(self) -> None:
        """Continue as new once no send is being handled, unless one opened a turn
        meanwhile; the carried state is taken after the wait, so it holds every message."""
        machine, transport = self.machine, self._transport
        await transport.wait_until(lambda: machine.phase != "idle" or transport.handlers_finished())
        if machine.phase == "idle":
            await transport.continue_session_as_new(self._carried())

    def _due(self) -> bool:
        every = self._input.continue_as_new_every
        done = self.machine.turns - self._turns_at_start
        return done > 0 and (done >= every or self._transport.continue_as_new_suggested())

    def _carried(self) -> SessionInput:
        return self._input.model_copy(update={"state": self.machine.state, "context": None})

    def _carry_out(self, effect: SessionEffect) -> None:
        match effect:
            case StartTurn():
                task = self._transport.spawn(self._run_turn(effect))
                self._running[effect.process_id] = task
                task.add_done_callback(lambda t: self._finished(effect.process_id, t))
            case SteerTurn():
                message_id = effect.message.message_id
                steer = SteerInput(
                    signal_id=message_id,
                    messages=effect.message.messages,
                    reply_to=self.machine.session_id if message_id in self._asking else None,
                )
                self._transport.spawn(self._transport.signal(effect.process_id, names.STEER, steer))
            case CancelTurn():
                running = self._running.get(effect.process_id)
                if running is not None:
                    running.cancel()
                    if effect.process_id not in self._begun_turns:
                        self._never_ran(effect.process_id)
            case _:
                assert_never(effect)

    async def _run_turn(self, effect: StartTurn) -> None:
        input = InteractionInput(
            definition=self.machine.definition,
            messages=effect.messages,
            base=effect.base,
            context=effect.run_context,
            approved_tools=effect.approved_tools,
            track_status=self._input.track_status,
            route=Route(session_id=self.machine.session_id),
            instructions_first=effect.instructions_first,
            notices=tuple(
                SteerInput(signal_id=n.message_id, messages=n.messages) for n in effect.notices
            ),
        )

        self._begun_turns.add(effect.process_id)

        def started() -> None:
            self._started.add(effect.turn)
            self._touch()

        first = effect.messages[0].text if effect.messages else ""
        try:
            ended = await self._transport.run_turn(
                input,
                process_id=effect.process_id,
                summary=f"turn {effect.turn}: {first[:60]}",
                started=started,
            )
        except asyncio.CancelledError:  # the session ends: its turn was cancelled
            if self._transport.evicted():  # or its worker evicts it: nothing ended
                raise
            ended = Ended("the turn was cancelled: the session ended", errors.CANCELED)
        self._started.add(effect.turn)  # a turn that never started will not start now
        match ended:
            case Output():
                self.machine.turn_ended(effect.turn, ended, None)
            case Refused():
                failure = Failure.of(
                    errors.HOST_FAILED, f"turn {effect.turn} could not start: {ended.reason}"
                )
                self.machine.turn_ended(effect.turn, None, failure)
            case Ended():
                self.machine.turn_ended(effect.turn, None, ended.failure(errors.HOST_FAILED))
            case _:
                assert_never(ended)

    def _never_ran(self, process_id: str) -> None:
        """A turn's task cancelled before its first step (an `end` in the step that asked
        for its start): it never reports, so its end is taken here, as cancelled."""
        current = self.machine.current
        if current is not None and current.process_id == process_id:
            self._started.add(current.turn)
            failure = Failure.of(errors.CANCELED, "the turn was cancelled: the session ended")
            self.machine.turn_ended(current.turn, None, failure)
            self._touch()

    def _finished(self, process_id: str, task: asyncio.Task[None]) -> None:
        self._running.pop(process_id, None)
        self._begun_turns.discard(process_id)
        if not task.cancelled() and task.exception() is not None and self._crash is None:
            self._crash = task.exception()
        self._touch()

    def _touch(self) -> None:
        self._dirty = True
        self._transport.changed()

    def _show(self) -> None:
        machine = self.machine
        current = machine.current
        doing = f"turn {current.turn} running" if current is not None else machine.phase
        self._transport.show(
            f"**session** · {doing} · {machine.turns} turn(s) · "
            f"{len(machine.transcript)} message(s)"
        )

    # --- the host's inputs -----------------------------------------------------------

    def validate_send(self, input: SessionSend) -> SendReceipt | None:
        """Raise the ScopeError a message would be refused with; a duplicate's receipt
        (`check_room` besides, where the message is first sent)."""
        check_size(input, "The message", self._limit)
        expected = input.definition
        running = self.machine.definition
        if expected is not None and expected != running:
            raise InvalidSignal(
                f"Session {self.machine.session_id!r} runs Definition {running!r}, not "
                f"{expected!r}; nothing was sent. Use another session id for {expected!r}."
            )
        return self.machine.check_send(input.message_id, input.messages, input.start_digest)

    def check_room(self, input: SessionSend) -> None:
        """Refuse a new message whose turn could not send it (rule 1): the first model
        call of the turn it opens, or, while a turn runs, of the next turn, which opens
        with every steer the running turn may miss and the notices kept for it.

        Raises:
            InvalidSignal: code `interaction.payload.too_large`.
        """
        definition, machine = self._definition, self.machine
        if definition is None:
            return
        current, pending = machine.current, machine.pending
        number = machine.turns + 1
        messages = [m for q in pending for m in q.messages] + list(input.messages)
        size = model_input_size(
            definition,
            turn_process_id(machine.session_id, number),
            messages,
            base=BaseRef(
                workflow_id=machine.session_id, count=len(machine.transcript), digest="0" * 64
            ),
            applied=[q.message_id for q in pending],
            events_to=machine.session_id,
        )
        what = (
            f"The first model call of turn {number}"
            if current is None
            else f"With the messages turn {current.turn} may pass on, the first model call "
            f"of turn {number}"
        )
        refuse_over(
            what,
            size,
            self._limit,
            "The message was refused and nothing changed; send a shorter one"
            + ("." if current is None else ", or wait for the running turn to end."),
        )

    async def send(self, input: SessionSend) -> SendReceipt:
        """Take a validated message; returns once the turn taking it runs (rule 2).

        A message sent after its sender saw the running turn end (`follows`) waits until
        the session has taken that end too: it opens the next turn, never steers the
        finished one.
        """
        machine = self.machine

        def seen_turn_runs() -> bool:
            current = machine.current
            return current is not None and current.turn <= input.follows

        if seen_turn_runs():
            await self._transport.wait_until(lambda: not seen_turn_runs())
        receipt = self.machine.send(input.message_id, input.messages, input.start_digest)
        if receipt.disposition == "steered" and self._transport.asks_steer_answers():
            self._asking.add(input.message_id)  # before the loop passes it on
            self._touch()
            receipt = await self._steer_taken(receipt)
        self._touch()
        await self._transport.wait_until(
            lambda: receipt.turn in self._started or machine.phase in ("ended", "failed")
        )
        if receipt.turn > machine.turns:  # withdrawn: the session ended before it started
            raise SessionEnded(
                f"Session {machine.session_id!r} ended before turn {receipt.turn}, which "
                "this message opened, could start; the message was not taken. Start a new "
                "session (a new id)."
            )
        return receipt

    async def _steer_taken(self, receipt: SendReceipt) -> SendReceipt:
        """Wait for the running turn's answer to the steer `receipt` took (rule 1a); its
        receipt then, or the turn's refusal (the steer withdrawn).

        Raises:
            ScopeError: the turn's refusal (e.g. InvalidSignal,
                `interaction.payload.too_large`); the session is as before the send.
        """
        machine, message_id = self.machine, receipt.message_id
        try:
            await self._transport.wait_until(
                lambda: message_id in self._answers or not machine.steering(message_id)
            )
        finally:
            self._asking.discard(message_id)
        answer = self._answers.pop(message_id, None)
        if answer is not None and answer.code is not None and machine.refuse_steer(message_id):
            self._touch()
            refusal = errors.refusal(
                answer.code,
                f"Turn {receipt.turn} of session {machine.session_id!r} refused the message: "
                f"{answer.message} Nothing changed: the session did not take it.",
            )
            self._refused[message_id] = refusal  # for a repeat of this send waiting too
            for old in list(self._refused)[:-KEPT_REFUSALS]:
                del self._refused[old]
            raise refusal
        # taken; or its turn ended first and passed it on to the turn its receipt names
        return machine.receipt_of(message_id) or receipt

    async def duplicate(self, receipt: SendReceipt) -> SendReceipt:
        """The outcome of a repeated send (`validate_send` gave its receipt): a repeat
        of a steer still waiting for its turn's answer waits for it too (rule 1a), so
        it never returns `steered` for a steer the turn refuses.

        Raises:
            ScopeError: the turn's refusal of that steer.
        """
        message_id = receipt.message_id
        if message_id not in self._asking:
            return receipt
        await self._transport.wait_until(lambda: message_id not in self._asking)
        refusal = self._refused.get(message_id)
        if refusal is not None:
            raise refusal
        taken = self.machine.receipt_of(message_id)
        return taken.model_copy(update={"duplicate": True}) if taken is not None else receipt

    def steer_taken(self, input: SteerTaken) -> None:
        """The running turn's answer to a steer passed with `reply_to` (rule 1a); an
        answer nobody waits for (a duplicate, or its send gone) is dropped."""
        if input.signal_id in self._asking:
            self._answers[input.signal_id] = input
            self._touch()

    def notice(self, input: SteerInput) -> bool:
        """A background task's lifecycle notification, for the running or the next turn;
        False when nothing changed (a duplicate, an ended session, or not a valid one:
        then it is logged)."""
        try:
            taken = self.machine.notice(input.signal_id, input.messages)
        except ScopeError as error:
            self._transport.warn(f"notification {input.signal_id!r} refused: {error}")
            return False
        self._touch()
        return taken

    def end(self, input: SessionEndInput) -> None:
        """End the session (its running turn is cancelled first)."""
        self.machine.end(input.reason or "ended by the host")
        self._touch()

    def end_refusal(self) -> ScopeError | None:
        """Why `end` cannot be applied now (a failed session), or None."""
        if self.machine.phase == "failed":
            return errors.SessionEnded(f"Session {self.machine.session_id!r} has failed.")
        return None

    # --- reading ---------------------------------------------------------------------

    def snapshot(self) -> SessionSnapshot:
        return self.machine.snapshot()

    def context_page(self, query: ContextPageRequest) -> ContextPage:
        """Transcript messages [start, end), at most about `max_bytes`."""
        return context_page(self.machine.transcript, query)


__all__ = ["KEPT_REFUSALS", "SessionDriver"]

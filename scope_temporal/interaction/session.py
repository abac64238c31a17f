"""A session as a pure state machine: a conversation of turns, one Interaction each.

Theory of operation. A session holds the conversation's transcript and runs one turn at a
time. Each turn is an Interaction (a child process, every guarantee of an Interaction
unchanged) whose context is the transcript *by reference* (`BaseRef`: the session's id,
the transcript's length and chain digest) followed by the turn's own messages; the
turn's input never copies the transcript. The machine never calls out: a driver asks
`next_effects()` for what to start (a turn, a steer for the running turn, its
cancellation) and feeds back how each turn ended (`turn_ended`) and the host's inputs
(`send`, `end`). It is written in the one machine style (`transitions.py`).

The rules it keeps:
 1. A message opens a turn when none runs; while one runs it steers it (applied before
    that turn's next model call, as any steer). A steer the turn did not take in (it had
    already given its final reply) opens the next turn, so no message is lost.
 2. A message id is taken once: the same id with the same content is a duplicate (its
    receipt again, nothing changes); with other content a `SignalConflict`; an id an
    earlier, ended turn took is a `StaleMessage`. Only user messages are accepted.
 3. At a turn's end the transcript grows by what the turn added (or becomes the context a
    reducer or host put in its place); a failed or cancelled turn adds its opening
    messages only (a partial round would leave a tool call without its result).
 4. Tools approved for the session reach every turn (`StartTurn.approved_tools`); a
    completed turn's `Output.approved_tools` (approvals remembered during it) replace
    them. A failed or cancelled turn leaves them as they were.
 5. `end` ends an idle session at once, and a running one once its turn is cancelled; an
    ended session refuses every message (`SessionEnded`).
 6. A background task of a turn tells the session when it ends or asks for input
    (`notice`, deduplicated by its notice id): the running turn gets it as a steer; with
    none running it is kept, and the next turn applies it before its first model call. It
    never opens a turn by itself. One a turn did not apply (it had given its final reply,
    or failed) is kept for the next turn. An ended session drops it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from scope_temporal import errors
from scope_temporal.chat import Message
from scope_temporal.context_refs import BaseRef, chain_digest, prefix_digest
from scope_temporal.errors import (
    ProtocolError,
    ScopeError,
    SessionEnded,
    SignalConflict,
    StaleMessage,
)
from scope_temporal.ids import turn_process_id
from scope_temporal.interaction.session_values import (
    CancelTurn,
    QueuedMessage,
    SeenMessage,
    SendReceipt,
    SessionEffect,
    SessionPhase,
    SessionSnapshot,
    SessionState,
    StartTurn,
    SteerTurn,
    TurnRecord,
)
from scope_temporal.interaction.steering import check_steer_messages, steer_digest
from scope_temporal.interaction.transitions import Machine, Table, same
from scope_temporal.outputs import Failure, Output
from scope_temporal.run_context import SESSION_KEY

Event = Literal["next_effects", "send", "notice", "turn_ended", "end", "fail"]

KEPT_MESSAGE_IDS = 1000
"""Message ids remembered for dedup (the latest ones): an id older than that is new."""

TABLE: Table[Event, SessionPhase] = {
    "next_effects": same("idle", "turn"),
    "send": {"idle": frozenset({"turn"}), "turn": frozenset({"turn"})},
    "notice": same("idle", "turn"),
    "turn_ended": {"turn": frozenset({"idle", "turn", "ended"})},
    "end": {"idle": frozenset({"ended"}), "turn": frozenset({"turn"}), **same("ended")},
    "fail": {p: frozenset({"failed"}) for p in ("idle", "turn", "ended", "failed")},
}
"""Every legal (phase, event) pair of a session and the phases it may lead to."""


class SessionMachine(Machine[SessionState, SessionPhase, Event]):
    """The pure session machine (see the module docstring)."""

    TABLE = TABLE

    @classmethod
    def start(
        cls,
        session_id: str,
        definition: str,
        run_context: dict[str, Any] | None = None,
        approved_tools: Sequence[str] = (),
    ) -> SessionMachine:
        """A new session; its turns' run context is `run_context` plus its `session_id`,
        and `approved_tools` are approved for it already (rule 4)."""
        context = {**(run_context or {}), SESSION_KEY: session_id}
        state = SessionState(
            session_id=session_id,
            definition=definition,
            run_context=context,
            approved_tools=sorted(set(approved_tools)),
        )
        return cls(state)

    # --- the one machine style -------------------------------------------------------

    @staticmethod
    def _phase(state: SessionState) -> SessionPhase:
        return state.phase

    def _refusal(self, event: Event, phase: SessionPhase) -> ScopeError:
        if phase in ("ended", "failed"):
            return SessionEnded(
                f"Session {self._state.session_id!r} has ended ({self._state.ending or phase}); "
                "it takes no more messages and nothing changed. Start a new session (a new "
                "id); its transcript stays readable."
            )
        return ProtocolError(f"{event} is not legal in phase {phase} of the session.")

    @staticmethod
    def _crash(state: SessionState, message: str) -> None:
        state.phase = "failed"
        state.failure = message

    # --- reading ---------------------------------------------------------------------

    @property
    def state(self) -> SessionState:
        """A copy of the whole state (what continue-as-new carries)."""
        return self._state.model_copy(deep=True)

    @property
    def phase(self) -> SessionPhase:
        return self._state.phase

    @property
    def session_id(self) -> str:
        return self._state.session_id

    @property
    def definition(self) -> str:
        """The Definition each turn runs."""
        return self._state.definition

    @property
    def transcript(self) -> list[Message]:
        """The transcript (do not change it)."""
        return self._state.transcript

    @property
    def digest(self) -> str:
        """The transcript's chain digest."""
        return self._state.digest

    @property
    def turns(self) -> int:
        return len(self._state.turns)

    @property
    def current(self) -> TurnRecord | None:
        """The running turn, if any."""
        s = self._state
        return s.turns[-1] if s.phase == "turn" and s.turns else None

    def snapshot(self) -> SessionSnapshot:
        return SessionSnapshot.of(self._state)

    # --- the host's inputs -----------------------------------------------------------

    def check_send(self, message_id: str, messages: Sequence[Message]) -> SendReceipt | None:
        """The receipt of a duplicate, or None for a new message; nothing changes.

        Raises:
            InvalidSignal: no id, an id too long, no message, or not user messages.
            SignalConflict: the id was taken with other content.
            StaleMessage: an earlier turn, now ended, took the id.
            SessionEnded: the session has ended or is ending.
        """
        check_steer_messages(message_id, messages)
        s = self._state
        seen = s.seen.get(message_id)
        if seen is not None:
            if seen.digest != steer_digest(messages):
                raise SignalConflict(
                    f"Message id {message_id!r} was taken by turn {seen.receipt.turn} with "
                    "other content; nothing changed. Use a new id for a new message."
                )
            latest = s.turns[-1].turn if s.turns else 0
            if seen.receipt.turn < latest and s.turns[seen.receipt.turn - 1].status != "running":
                raise StaleMessage(
                    f"Message id {message_id!r} was taken by turn {seen.receipt.turn}, which "
                    f"has ended; the session is at turn {latest}. Nothing changed: read the "
                    "transcript for its answer, or send a new message with a new id."
                )
            return seen.receipt.model_copy(update={"duplicate": True})
        if s.phase in ("ended", "failed") or s.ending is not None:
            raise self._refusal("send", "ended")
        return None

    def send(self, message_id: str, messages: Sequence[Message]) -> SendReceipt:
        """Take one message: it opens a turn, or steers the running one (rule 1)."""
        duplicate = self.check_send(message_id, messages)
        if duplicate is not None:
            return duplicate
        message = QueuedMessage(message_id=message_id, messages=tuple(messages))

        def change(s: SessionState) -> SendReceipt:
            if s.phase == "idle":
                receipt = self._open_turn(s, [message])
            else:
                current = s.turns[-1]
                s.outbox.append(message)
                receipt = SendReceipt(
                    message_id=message_id,
                    turn=current.turn,
                    process_id=current.process_id,
                    disposition="steered",
                )
            s.seen[message_id] = SeenMessage(digest=steer_digest(messages), receipt=receipt)
            for old in list(s.seen)[:-KEPT_MESSAGE_IDS]:
                del s.seen[old]
            return receipt

        return self._apply("send", change)

    def notice(self, notice_id: str, messages: Sequence[Message]) -> bool:
        """A background task's lifecycle notification (rule 6). False when nothing
        changed: a duplicate, or the session has ended (or is ending).

        Raises:
            InvalidSignal: no id, an id too long, no message, or not user messages.
        """
        check_steer_messages(notice_id, messages)
        s = self._state
        if notice_id in s.notice_ids or s.phase in ("ended", "failed") or s.ending is not None:
            return False

        def change(s: SessionState) -> None:
            s.notices.append(QueuedMessage(message_id=notice_id, messages=tuple(messages)))
            s.notice_ids.append(notice_id)
            del s.notice_ids[:-KEPT_MESSAGE_IDS]

        self._apply("notice", change)
        return True

    def end(self, reason: str = "ended by the host") -> None:
        """End the session: at once when idle, after cancelling the running turn otherwise."""

        def change(s: SessionState) -> None:
            if s.phase == "idle":
                s.phase = "ended"
            if s.ending is None:
                s.ending = reason

        self._apply("end", change)

    # --- the driver's inputs ---------------------------------------------------------

    def next_effects(self) -> list[SessionEffect]:
        """The effects to carry out now; each is returned exactly once."""
        if self._state.phase not in ("idle", "turn"):
            return []
        return self._apply("next_effects", self._next_effects)

    def turn_ended(self, turn: int, output: Output | None, failure: Failure | None) -> None:
        """The running turn ended with its Output, or its failure (rule 3)."""
        self._apply("turn_ended", lambda s: self._turn_ended(s, turn, output, failure))

    def fail(self, message: str) -> None:
        """End the session as failed (the driver found it cannot go on)."""

        def change(s: SessionState) -> None:
            s.phase = "failed"
            s.failure = message

        self._apply("fail", change)

    # --- transitions -----------------------------------------------------------------

    def _next_effects(self, s: SessionState) -> list[SessionEffect]:
        effects: list[SessionEffect] = []
        if s.phase != "turn":
            return effects
        current = s.turns[-1]
        if not s.start_emitted:
            s.start_emitted = True
            effects.append(
                StartTurn(
                    turn=current.turn,
                    process_id=current.process_id,
                    messages=tuple(m for q in s.opening for m in q.messages),
                    base=BaseRef(
                        workflow_id=s.session_id, count=len(s.transcript), digest=s.digest
                    ),
                    run_context=s.run_context,
                    approved_tools=tuple(s.approved_tools),
                    notices=tuple(s.notices),
                )
            )
            s.noticed.extend(s.notices)
            s.notices = []
        if s.ending is not None:
            if not s.cancel_emitted:
                s.cancel_emitted = True
                effects.append(CancelTurn(process_id=current.process_id))
            return effects
        for message in s.outbox + s.notices:
            effects.append(SteerTurn(process_id=current.process_id, message=message))
        s.steered.extend(s.outbox)
        s.noticed.extend(s.notices)
        s.outbox, s.notices = [], []
        return effects

    def _open_turn(self, s: SessionState, opening: list[QueuedMessage]) -> SendReceipt:
        number = len(s.turns) + 1
        process_id = turn_process_id(s.session_id, number)
        s.turns.append(
            TurnRecord(
                turn=number,
                process_id=process_id,
                message_ids=tuple(q.message_id for q in opening),
                start=len(s.transcript),
            )
        )
        s.opening = opening
        s.start_emitted = False
        s.phase = "turn"
        return SendReceipt(
            message_id=opening[0].message_id,
            turn=number,
            process_id=process_id,
            disposition="started",
        )

    def _turn_ended(
        self, s: SessionState, turn: int, output: Output | None, failure: Failure | None
    ) -> None:
        current = s.turns[-1]
        if turn != current.turn or not s.start_emitted:
            raise ProtocolError(f"Turn {turn} is not the running turn ({current.turn}).")
        applied: tuple[str, ...] = ()
        transcript = output.transcript if output is not None else None
        if transcript is not None and transcript.replaced:
            s.transcript = list(transcript.messages)
            s.digest = prefix_digest(s.transcript)
        else:
            added = (
                transcript.messages
                if transcript is not None
                else tuple(m for q in s.opening for m in q.messages)
            )
            self._append(s, added)
        if transcript is not None:
            applied = transcript.applied_signals
        if output is not None:
            s.approved_tools = sorted(set(output.approved_tools))
            status: Literal["completed", "failed", "canceled"] = "completed"
        else:
            status = "canceled" if failure and failure.code == errors.CANCELED else "failed"
        s.turns[-1] = current.model_copy(
            update={"status": status, "code": failure.code if failure else None}
        )
        missed = [m for m in s.steered + s.outbox if m.message_id not in applied]
        s.queued.extend(missed)
        unapplied = [n for n in s.noticed if n.message_id not in applied]
        s.notices = unapplied + s.notices  # for the next turn (rule 6)
        s.opening, s.steered, s.outbox, s.noticed = [], [], [], []
        s.cancel_emitted = False
        if s.ending is not None:
            s.phase = "ended"
        elif s.queued:
            opening, s.queued = s.queued, []
            receipt = self._open_turn(s, opening)
            for message in opening:  # their receipts now name the turn that takes them
                seen = s.seen.get(message.message_id)
                if seen is not None:
                    s.seen[message.message_id] = seen.model_copy(
                        update={
                            "receipt": receipt.model_copy(update={"message_id": message.message_id})
                        }
                    )
        else:
            s.phase = "idle"

    @staticmethod
    def _append(s: SessionState, messages: Sequence[Message]) -> None:
        for message in messages:
            s.digest = chain_digest(s.digest, message)
            s.transcript.append(message)


__all__ = ["KEPT_MESSAGE_IDS", "TABLE", "SessionMachine"]

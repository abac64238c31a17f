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
    messages only (a partial round would leave a tool call without its result), and,
    when the session ends, the steers it was passed.
 3a. The transcript never holds the Definition's instructions: every model call of every
    turn sends them first, then the transcript, then the turn's own messages, so a turn
    always runs with the instructions of the Definition it runs (`instructions_first`).
    A transcript that opens with a system message (a session from before this rule)
    keeps it, and its turns send no other.
 4. Tools approved for the session reach every turn (`StartTurn.approved_tools`); a
    completed turn's `Output.approved_tools` (approvals remembered during it) replace
    them. A failed or cancelled turn leaves them as they were.
 5. `end` ends an idle session at once, and a running one once its turn is cancelled; an
    ended session refuses every message (`SessionEnded`). A turn a send opened but whose
    start was not asked for yet is withdrawn (that send is refused with `SessionEnded`);
    messages the session took and no turn answered are in the transcript and listed as
    `unanswered`: an ended session promises no next turn.
 7. A message from a handle that holds another run context or other approved tools than
    the session started with is refused (`start_digest`; code
    `interaction.session.mismatch`): a turn never runs with an identity its sender did
    not give.
 1a. The running turn decides whether it takes a steer (its own room check: what its
    next model call will carry). A steer it refuses is withdrawn (`refuse_steer`): gone
    from the session as if never sent, its id free again; the driver refuses that send.
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
from scope_temporal.context_refs import BaseRef
from scope_temporal.errors import (
    InvalidSignal,
    ProtocolError,
    ScopeError,
    SessionEnded,
    SignalConflict,
    StaleMessage,
)
from scope_temporal.interaction import session_turns
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
    session_start_digest,
)
from scope_temporal.interaction.steering import check_steer_messages, steer_digest
from scope_temporal.interaction.transitions import Machine, Table, same
from scope_temporal.outputs import Failure, Output
from scope_temporal.run_context import SESSION_KEY

Event = Literal["next_effects", "send", "refuse_steer", "notice", "turn_ended", "end", "fail"]

KEPT_MESSAGE_IDS = 1000
"""Message ids remembered for dedup (the latest ones): an id older than that is new."""

TABLE: Table[Event, SessionPhase] = {
    "next_effects": same("idle", "turn"),
    "send": {"idle": frozenset({"turn"}), "turn": frozenset({"turn"})},
    "refuse_steer": same("turn"),
    "notice": same("idle", "turn"),
    "turn_ended": {"turn": frozenset({"idle", "turn", "ended"})},
    "end": {
        "idle": frozenset({"ended"}),
        "turn": frozenset({"turn", "ended"}),
        **same("ended"),
    },
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
            start_digest=session_start_digest(run_context, approved_tools),
        )
        return cls(state)

    # --- the one machine style -------------------------------------------------------

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
    def pending(self) -> tuple[QueuedMessage, ...]:
        """What the next turn would open with, were the running turn to miss every steer
        it was passed (and the notices kept for it); idle, the notices kept."""
        s = self._state
        return (*s.queued, *s.steered, *s.outbox, *s.noticed, *s.notices)

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

    def check_send(
        self, message_id: str, messages: Sequence[Message], start_digest: str | None = None
    ) -> SendReceipt | None:
        """The receipt of a duplicate, or None for a new message; nothing changes.
        `start_digest`: what the sender's handle holds (rule 7; None: not checked).

        Raises:
            InvalidSignal: no id, an id too long, no message, or not user messages; or
                (code `interaction.session.mismatch`) the sender holds another run
                context or other approved tools than the session started with.
            SignalConflict: the id was taken with other content.
            StaleMessage: an earlier turn, now ended, took the id.
            SessionEnded: the session has ended or is ending.
        """
        check_steer_messages(message_id, messages)
        s = self._state
        if start_digest is not None and s.start_digest not in (None, start_digest):
            raise InvalidSignal(
                f"Session {s.session_id!r} was started with another run context or other "
                "approved tools than this handle holds; nothing was sent. A session keeps "
                "the identity it started with: use a handle made with the same context= "
                "and approved_tools=, or another session id.",
                code=errors.SESSION_MISMATCH,
            )
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

    def send(
        self, message_id: str, messages: Sequence[Message], start_digest: str | None = None
    ) -> SendReceipt:
        """Take one message: it opens a turn, or steers the running one (rule 1)."""
        duplicate = self.check_send(message_id, messages, start_digest)
        if duplicate is not None:
            return duplicate
        message = QueuedMessage(message_id=message_id, messages=tuple(messages))

        def change(s: SessionState) -> SendReceipt:
            if s.phase == "idle":
                receipt = session_turns.open_turn(s, [message])
                s.opened_by_send = True
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

    def steering(self, message_id: str) -> bool:
        """The message is a steer of the running turn (passed to it, or about to be)."""
        s = self._state
        return s.phase == "turn" and any(
            m.message_id == message_id for m in (*s.outbox, *s.steered)
        )

    def receipt_of(self, message_id: str) -> SendReceipt | None:
        """The receipt of a message the session took: the turn that takes it now (a
        steer the running turn missed names the turn it opened)."""
        seen = self._state.seen.get(message_id)
        return seen.receipt if seen is not None else None

    def refuse_steer(self, message_id: str) -> bool:
        """The running turn refused a steer (rule 1a): it is withdrawn, as if never
        sent. False when it is no steer of the running turn any more (that turn ended
        and passed it on, or the session took its end): nothing changes then."""
        if not self.steering(message_id):
            return False

        def change(s: SessionState) -> None:
            s.outbox = [m for m in s.outbox if m.message_id != message_id]
            s.steered = [m for m in s.steered if m.message_id != message_id]
            s.seen.pop(message_id, None)

        self._apply("refuse_steer", change)
        return True

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
        """End the session: at once when idle, after cancelling the running turn otherwise
        (one whose start was not asked for yet never starts, rule 5)."""

        def change(s: SessionState) -> None:
            if s.phase == "turn" and not s.start_emitted:
                session_turns.withdraw(s)
            if s.phase == "idle":
                s.phase = "ended"
                session_turns.drop_pending(s)
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
        self._apply("turn_ended", lambda s: session_turns.turn_ended(s, turn, output, failure))

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
                    instructions_first=not session_turns.opens_with_instructions(s.transcript),
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


__all__ = ["KEPT_MESSAGE_IDS", "TABLE", "SessionMachine"]

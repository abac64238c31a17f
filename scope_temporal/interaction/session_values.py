"""A session's values: its state (what continue-as-new carries), the effects its machine
asks for, what a send returns and what a host reads. Only `session.py` changes the state.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from scope_temporal.chat import Message
from scope_temporal.context_refs import BaseRef

SessionPhase = Literal["idle", "turn", "ended", "failed"]
"""idle: waiting for a message; turn: a turn runs (or is about to start); ended: `end`
was applied; failed: the machine broke (a bug), it refuses everything."""

TurnStatus = Literal["running", "completed", "failed", "canceled"]

Disposition = Literal["started", "steered"]
"""How a message was taken: it opened a turn, or steered the running one."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class SendReceipt(_Frozen):
    """What `send` did with one message (the same again for a duplicate)."""

    message_id: str
    turn: int
    """The turn that takes the message."""
    process_id: str
    """That turn's Interaction (`<session id>/turn/<turn>`)."""
    disposition: Disposition
    duplicate: bool = False
    """The message id was already taken with the same content: nothing changed."""


class TurnRecord(_Frozen):
    """One turn of a session."""

    turn: int
    process_id: str
    message_ids: tuple[str, ...]
    """The messages that opened it."""
    status: TurnStatus = "running"
    code: str | None = None
    """Why it failed or was cancelled."""
    start: int = 0
    """Where its messages begin in the transcript (they run to the next turn's start)."""


class QueuedMessage(_Frozen):
    message_id: str
    messages: tuple[Message, ...]


class SeenMessage(_Frozen):
    """A message id the session took: its content's digest and the receipt it got."""

    digest: str
    receipt: SendReceipt


class StartTurn(_Frozen):
    """Start the turn's Interaction (a child), its context the transcript by reference."""

    kind: Literal["start_turn"] = "start_turn"
    turn: int
    process_id: str
    messages: tuple[Message, ...]
    base: BaseRef
    run_context: dict[str, Any]
    approved_tools: tuple[str, ...] = ()
    """Tools approved for the session: the turn's calls of them need no approval."""
    notices: tuple[QueuedMessage, ...] = ()
    """Task notifications kept for this turn: applied before its first model call."""
    instructions_first: bool = True
    """Every model call of the turn sends the Definition's instructions first (False: the
    transcript opens with a system message already, as in sessions from before)."""


class SteerTurn(_Frozen):
    """Pass a message (or a task notification) to the running turn as a steer (its id
    is the steer's id)."""

    kind: Literal["steer_turn"] = "steer_turn"
    process_id: str
    message: QueuedMessage


class CancelTurn(_Frozen):
    """Cancel the running turn (the session is ending)."""

    kind: Literal["cancel_turn"] = "cancel_turn"
    process_id: str


SessionEffect = StartTurn | SteerTurn | CancelTurn


class SessionState(_State):
    """Everything a session knows. Serialises to JSON and restores exactly."""

    session_id: str
    definition: str
    run_context: dict[str, Any] = {}
    """The session's run context (its turns get it, with the session id)."""
    approved_tools: list[str] = []
    """Tools approved for the session ("approve for this session"): each turn starts with
    them, and a completed turn's `Output.approved_tools` replaces them."""
    phase: SessionPhase = "idle"
    transcript: list[Message] = []
    """The conversation so far: what each ended turn added (or a reducer's replacement)."""
    digest: str = ""
    """The chain digest of the transcript."""
    turns: list[TurnRecord] = []
    opening: list[QueuedMessage] = []
    """The messages that opened the running turn."""
    start_emitted: bool = False
    steered: list[QueuedMessage] = []
    """Messages passed to the running turn as steers."""
    outbox: list[QueuedMessage] = []
    """Steers not yet passed to the running turn."""
    queued: list[QueuedMessage] = []
    """Messages for the next turn (steers the running turn did not take in)."""
    ending: str | None = None
    """Why the session ends once the running turn is cancelled."""
    cancel_emitted: bool = False
    notices: list[QueuedMessage] = []
    """Background tasks' lifecycle notifications for the next turn (or not yet passed to
    the running one); their id is the notice id."""
    noticed: list[QueuedMessage] = []
    """Notifications passed to the running turn (at its start or as steers); those it did
    not apply are kept for the next turn when it ends."""
    notice_ids: list[str] = []
    """The latest notification ids taken (bounded): dedup."""
    seen: dict[str, SeenMessage] = {}
    """The latest message ids (bounded): dedup, conflicts, stale ids."""
    failure: str | None = None
    start_digest: str | None = None
    """`session_start_digest` of the run context and approved tools the session started
    with: a message from a handle holding others is refused (None: a session from before
    the check, which takes any)."""
    opened_by_send: bool = False
    """The running turn was opened by a send (not by messages an earlier turn missed)."""
    unanswered: list[str] = []
    """Message ids the session took and no turn answered before it ended (they are in
    the transcript, after the last turn's messages)."""


class SessionSnapshot(_Frozen):
    """What a host reads of a session (`scope.session.snapshot`)."""

    session_id: str
    definition: str
    status: Literal["idle", "running", "ended", "failed"]
    turns: tuple[TurnRecord, ...]
    """Every turn so far, the running one last."""
    messages: int
    """How many messages the transcript holds (read them with `scope.context`)."""
    digest: str
    queued: tuple[str, ...] = ()
    """Message ids waiting for the next turn."""
    notices: tuple[str, ...] = ()
    """Background tasks' notifications kept for the next turn (their notice ids): it
    applies them before its first model call."""
    run_context: dict[str, Any] = {}
    approved_tools: tuple[str, ...] = ()
    """Tools approved for the session: its turns' calls of them need no approval."""
    ended: str | None = None
    """Why the session ended."""
    unanswered: tuple[str, ...] = ()
    """An ended session: message ids it took that no turn answered (a cancelled turn's
    steers, messages waiting for a next turn); they are in the transcript."""

    @classmethod
    def of(cls, s: SessionState) -> SessionSnapshot:
        """The snapshot of a session in state `s`."""
        status = {"idle": "idle", "turn": "running", "ended": "ended", "failed": "failed"}
        return cls(
            session_id=s.session_id,
            definition=s.definition,
            status=status[s.phase],
            turns=tuple(s.turns),
            messages=len(s.transcript),
            digest=s.digest,
            queued=tuple(q.message_id for q in s.queued),
            notices=tuple(n.message_id for n in s.notices),
            run_context=s.run_context,
            approved_tools=tuple(s.approved_tools),
            ended=s.ending if s.phase == "ended" else s.failure,
            unanswered=tuple(s.unanswered),
        )

    @property
    def current(self) -> TurnRecord | None:
        """The running turn, if any."""
        last = self.turns[-1] if self.turns else None
        return last if last is not None and last.status == "running" else None


class SessionTranscript(_Frozen):
    """A session's conversation so far, with its turns (what `transcript()` returns)."""

    session_id: str
    definition: str
    status: Literal["idle", "running", "ended", "failed"]
    messages: tuple[Message, ...]
    """Every message of the ended turns (the running turn's appear when it ends)."""
    turns: tuple[TurnRecord, ...]
    """Turn n's messages are `messages[turns[n-1].start : turns[n].start]`."""

    @classmethod
    def of(cls, snapshot: SessionSnapshot, messages: tuple[Message, ...]) -> SessionTranscript:
        return cls(
            session_id=snapshot.session_id,
            definition=snapshot.definition,
            status=snapshot.status,
            messages=messages,
            turns=snapshot.turns,
        )

    def turn_messages(self, turn: int) -> tuple[Message, ...]:
        """The messages turn `turn` added (empty while it runs)."""
        record = self.turns[turn - 1]
        end = self.turns[turn].start if turn < len(self.turns) else len(self.messages)
        return self.messages[record.start : end] if record.status != "running" else ()


def session_start_digest(
    run_context: Mapping[str, Any] | None, approved_tools: Sequence[str]
) -> str:
    """The digest of what a session's handle starts it with (its run context, without the
    session id, and its approved tools): a send carries it, the session compares."""
    payload = {"context": dict(run_context or {}), "approved_tools": sorted(set(approved_tools))}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def as_messages(message: str | Message | Sequence[Message]) -> tuple[Message, ...]:
    """What a send carries: a string is one user message."""
    if isinstance(message, str):
        return (Message.user(message),)
    if isinstance(message, Message):
        return (message,)
    return tuple(message)


__all__ = [
    "CancelTurn",
    "Disposition",
    "QueuedMessage",
    "SeenMessage",
    "SendReceipt",
    "SessionEffect",
    "SessionPhase",
    "SessionSnapshot",
    "SessionState",
    "SessionTranscript",
    "StartTurn",
    "SteerTurn",
    "TurnRecord",
    "TurnStatus",
    "as_messages",
    "session_start_digest",
]

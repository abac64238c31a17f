"""The reference model of a session for the model-based test (test_session_model.py): what
a host must observe, whatever the order of its calls and of the turns' outcomes.

It keeps what the host did (messages the session accepted, with their text; approvals
given; whether `end` returned) and checks what the host reads (receipts, refusals,
snapshots, transcripts, the model's requests, the covered tool's runs, event streams)
against the session's promises (docs/sessions.md, docs/approvals.md):

 1. A call returns, or raises a typed `ScopeError`, within a bound (the caller checks).
 2. A new message is accepted, or refused with a typed error and nothing changed; the same
    id with the same content is a duplicate (or stale); with other content a conflict.
 3. No accepted message is lost or duplicated: while a turn runs each is in the transcript
    at most once; once the session is idle or ended, exactly once.
 4. Every model request opens with the Definition's instructions, and the transcript never
    holds them.
 4a. A message with a `steered` receipt is taken by that turn, unless it fails or is
    cancelled (the world never answers a model call while a steer is on its way).
 5. A turn fails only as the world made it fail (the model's definite failure); never for
    its own input's size (every turn's input fits the payload limit); it is cancelled only
    by `end`.
 6. A covered tool's body runs only after an approval on record (an approval of that
    call, or one remembered earlier), and once per call.
 7. An ended session stays ended, says so, and refuses every new message.
 8. A subscriber's events, in order, are each turn's stream exactly once; one following
    from a stored position reads the same events after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from scope_temporal import Event, Message
from scope_temporal.errors import (
    MODEL_REJECTED,
    PAYLOAD_TOO_LARGE,
    SESSION_MISMATCH,
    InvalidSignal,
    ScopeError,
    SessionEnded,
    SignalConflict,
    StaleMessage,
)
from scope_temporal.interaction.session_values import SendReceipt, SessionSnapshot


def text_of(message_id: str, variant: int, size: int) -> str:
    """A message's text: unique per (id, variant), `size` characters at least."""
    head = f"[{message_id}:{variant}]"
    return head + "x" * max(0, size - len(head))


@dataclass
class Model:
    """What the host did, and what it may therefore expect."""

    instructions: str
    accepted: dict[str, str] = field(default_factory=dict)
    """Message id -> the text the session accepted under it."""
    approved: set[str] = field(default_factory=set)
    """Tickets of covered calls a person approved."""
    remembered: bool = False
    steered_into: dict[str, int] = field(default_factory=dict)
    """Message id -> the turn its `steered` receipt named."""
    rejects: int = 0
    end_returned: bool = False
    end_asked: bool = False
    log: list[str] = field(default_factory=list)

    # --- 2: sends ------------------------------------------------------------------

    def sent(
        self,
        message_id: str,
        text: str,
        outcome: SendReceipt | BaseException,
        *,
        mismatch: bool = False,
    ) -> None:
        """Check the outcome of one send and record what it changed."""
        self.log.append(f"send {message_id} ({len(text)} B): {_short(outcome)}")
        taken = self.accepted.get(message_id)
        if self.end_returned and isinstance(outcome, SessionEnded):
            pass  # an ended session may say so before anything else (live: a closed workflow)
        elif mismatch:
            assert isinstance(outcome, InvalidSignal) and outcome.code == SESSION_MISMATCH, (
                f"a handle holding another context must be refused, got {outcome!r}"
            )
        elif taken is not None and taken != text:
            assert isinstance(outcome, SignalConflict), (
                f"id {message_id} taken with other content: want SignalConflict, got {outcome!r}"
            )
        elif taken is not None:
            assert isinstance(outcome, StaleMessage) or (
                isinstance(outcome, SendReceipt) and outcome.duplicate
            ), f"the same message again must be a duplicate or stale, got {outcome!r}"
        elif self.end_returned:
            assert isinstance(outcome, SessionEnded), (
                f"a new message to an ended session must raise SessionEnded, got {outcome!r}"
            )
        elif isinstance(outcome, SendReceipt):
            assert not outcome.duplicate, f"a new message got a duplicate receipt: {outcome!r}"
            self.accepted[message_id] = text
            if outcome.disposition == "steered":
                self.steered_into[message_id] = outcome.turn
        else:
            too_large = isinstance(outcome, InvalidSignal) and outcome.code == PAYLOAD_TOO_LARGE
            ending = isinstance(outcome, SessionEnded) and self.end_asked
            assert too_large or ending, f"a new message refused for no reason: {outcome!r}"

    def check_refused(
        self, message_id: str, text: str, snap: SessionSnapshot, transcript: Sequence[Message]
    ) -> None:
        """A refused message changed nothing: its text is nowhere, and a new id is not taken."""
        if self.accepted.get(message_id) == text:
            return  # the message itself was accepted earlier (stale): it is where it was
        assert text not in [m.text for m in transcript], (
            f"refused {message_id} is in the transcript"
        )
        if message_id not in self.accepted:
            held = [t.message_ids for t in snap.turns] + [snap.queued, snap.unanswered]
            assert all(message_id not in ids for ids in held), f"refused {message_id} was taken"

    # --- 3, 4, 5, 7: what a snapshot and a transcript say ------------------------------

    def check_session(self, snap: SessionSnapshot, transcript: Sequence[Message]) -> None:
        if self.end_returned:
            assert snap.status == "ended", f"an ended session says {snap.status!r}"
            assert snap.queued == (), f"an ended session promises a next turn: {snap.queued}"
        assert all(m.role != "system" for m in transcript), "the transcript holds instructions"
        texts = [m.text for m in transcript if m.role == "user"]
        settled = snap.status in ("idle", "ended")
        for message_id, text in self.accepted.items():
            n = texts.count(text)
            if settled:
                assert n == 1, (
                    f"accepted message {message_id} is in the {snap.status} session's "
                    f"transcript {n} times (want once)"
                )
            else:
                assert n <= 1, f"accepted message {message_id} is in the transcript {n} times"
        for record in snap.turns:  # a notice never opens a turn; a message opens one once
            assert set(record.message_ids) <= set(self.accepted), (
                f"turn {record.turn} opened with {record.message_ids}, not all accepted"
            )
        notices = [t for t in texts if "task_notification" in t]
        assert len(notices) == len(set(notices)), f"a task's notice is in it twice: {notices}"
        for record, after in zip(snap.turns, snap.turns[1:], strict=False):
            missed = [i for i in after.message_ids if self.steered_into.get(i) == record.turn]
            assert record.status != "completed" or not missed, (
                f"{missed} got a 'steered' receipt for turn {record.turn}, which completed "
                f"without taking them (they opened turn {after.turn})"
            )
        for record in snap.turns:
            if record.status == "failed":
                assert record.code == MODEL_REJECTED and self.rejects, (
                    f"turn {record.turn} failed with {record.code!r}, not as the world made it"
                )
            assert record.code != PAYLOAD_TOO_LARGE, f"turn {record.turn} did not fit the limit"
            if record.status == "canceled":
                assert self.end_asked, f"turn {record.turn} was cancelled with no end asked"

    def check_requests(self, requests: Sequence[object]) -> None:
        for n, request in enumerate(requests, 1):
            messages = request.messages  # type: ignore[attr-defined]
            assert messages and messages[0] == Message.system(self.instructions), (
                f"model request {n} does not open with the instructions: "
                f"{[(m.role, m.text[:20]) for m in messages[:3]]}"
            )

    # --- 6: the covered tool ----------------------------------------------------------

    def check_covered(self, runs: Sequence[str], remembered_before: dict[str, bool]) -> None:
        assert len(runs) == len(set(runs)), f"a covered call's body ran twice: {runs}"
        for ticket in runs:
            assert ticket in self.approved or remembered_before.get(ticket, False), (
                f"the covered tool ran for {ticket} with no approval on record"
            )

    # --- 8: events --------------------------------------------------------------------

    @staticmethod
    def check_stream(seen: Sequence[Event], turns: dict[int, Sequence[Event]]) -> None:
        """`seen`, a subscriber's events from the start, is each turn's stream once."""
        keys = [(e.turn, e.offset, e.kind) for e in seen]
        want = [(n, e.offset, e.kind) for n in sorted(turns) for e in turns[n]]
        assert keys == want, f"the subscriber read {keys}\nthe turns' streams are {want}"

    @staticmethod
    def check_partial(seen: Sequence[Event]) -> None:
        """So far: turns in order, each turn's offsets counting up from 0 without a gap."""
        last: tuple[int, int] = (0, -1)
        for e in seen:
            turn, offset = e.turn or 0, e.offset
            if turn != last[0]:
                assert turn > last[0] and offset == 0, f"read {turn}/{offset} after {last}"
            else:
                assert offset == last[1] + 1, f"read {turn}/{offset} after {last}"
            last = (turn, offset)


def _short(outcome: object) -> str:
    if isinstance(outcome, SendReceipt):
        return f"{outcome.disposition} turn {outcome.turn}" + (" dup" if outcome.duplicate else "")
    return type(outcome).__name__ + (f"({outcome.code})" if isinstance(outcome, ScopeError) else "")

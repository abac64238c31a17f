"""`SessionHandle`: one conversation of turns (`scope.Session`), from a host.

The first `send` starts the session with update-with-start: one call starts the workflow
(if it is not running) and delivers the message, so a chat app never asks "does it exist
yet?". Every message carries an id: sending it again is safe (the same receipt, nothing
changes). `end` is an update-with-start too: ended before any message, the session's
workflow starts ended and completes at once, so its id holds an ended session and every
later `send` on it is refused with `SessionEnded` (the id is never reused).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from scope_temporal import errors, names
from scope_temporal.chat import Message
from scope_temporal.client.events import follow_turn
from scope_temporal.client.handle import InteractionHandle, typed_refusal
from scope_temporal.context_refs import prefix_digest
from scope_temporal.driver.session_events import read_session
from scope_temporal.errors import ScopeError
from scope_temporal.ids import turn_process_id
from scope_temporal.interaction.effects import ModelEffectRequest
from scope_temporal.interaction.events import Event
from scope_temporal.interaction.session_stream import SessionPosition, after_turn
from scope_temporal.interaction.session_values import (
    SendReceipt,
    SessionSnapshot,
    SessionTranscript,
    as_messages,
    session_start_digest,
)
from scope_temporal.outputs import Output
from scope_temporal.payloads import (
    ContextPage,
    ContextPageRequest,
    SessionEndInput,
    SessionInput,
    SessionSend,
)
from scope_temporal.update_retry import (
    TOO_SOON_PAUSES,
    aborted_with_its_task,
    execute_update,
    sent_too_soon,
)

_R = TypeVar("_R")
_QUERY_TIMEOUT = timedelta(seconds=10)
_CATCH_UP_POLLS, _CATCH_UP_SECONDS = 200, 0.05  # at most 10 s for the session to take an end
_DELIVERY_ATTEMPTS = len(TOO_SOON_PAUSES) + 1
NEXT_TURN_POLLS = (0.05, 0.1, 0.2, 0.4)
"""Seconds between snapshot queries while a session's events wait for its next turn
(then `NEXT_TURN_POLL_MAX` each): a query costs no history."""
NEXT_TURN_POLL_MAX = 0.5


class _Closed(Exception):
    """The session id holds a closed workflow: the session has ended (or failed)."""


class SessionOwner(Protocol):
    """What a session handle sends through (`ScopeClient` is one)."""

    client: Client
    task_queue: str

    def check_sendable(self, payload: BaseModel, what: str, error: type[ScopeError]) -> None: ...


class SessionSummary(BaseModel):
    """One line of `ScopeClient.sessions`."""

    model_config = ConfigDict(frozen=True)

    id: str
    status: str
    """running (taking messages), completed (ended), failed, canceled, terminated..."""
    start_time: str
    definition: str | None = None


class TurnHandle(InteractionHandle):
    """A turn's handle: an `InteractionHandle` that tells its session when its end was
    seen, so the next message opens a new turn instead of steering this one."""

    def __init__(self, session: SessionHandle, id: str, turn: int) -> None:
        super().__init__(session.scope, id)
        self.session = session
        self.number = turn

    async def result(self) -> Output:
        """As `InteractionHandle.result`. Only the turn's own end (its Output, or
        InteractionFailed / InteractionCanceled) counts as seen: a caller's timeout or
        cancellation of this wait says nothing of the turn, so the next message still
        steers it if it runs (and never waits for it to end)."""
        try:
            output = await super().result()
        except errors.InteractionFailed:  # InteractionCanceled included
            self.session.saw_turn_end(self.number)
            raise
        self.session.saw_turn_end(self.number)
        return output


class SessionHandle:
    """Drive one session: send messages, read its transcript, end it.

    Made by `ScopeClient.session(...)` (no call is made until `send`).
    """

    def __init__(self, scope: SessionOwner, id: str, start: SessionInput | None = None) -> None:
        self.scope = scope
        self.id = id
        self.definition = start.definition if start is not None else None
        self._start = start
        self.last_receipt: SendReceipt | None = None
        """What the latest `send` did (started a turn, or steered the running one)."""
        self._seen = 0  # the latest turn whose end this handle saw

    def saw_turn_end(self, turn: int) -> None:
        """Turn `turn` ended, as far as this host knows: a later message never steers it."""
        self._seen = max(self._seen, turn)

    def _workflow(self) -> WorkflowHandle[Any, Any]:
        return self.scope.client.get_workflow_handle(self.id)

    async def send(
        self, message: str | Message | Sequence[Message], *, message_id: str | None = None
    ) -> TurnHandle:
        """Send one message; the first starts the session.

        With no turn running, the message opens turn n+1, an Interaction
        `<session id>/turn/<n+1>` whose context is the session's transcript (by reference)
        followed by the message. While a turn runs, the message steers it: it is applied
        before that turn's next model call (a turn that had already given its final reply
        passes it to the next turn, which then starts by itself). Returns once that turn
        runs.

        Args:
            message: text (one user message), or user messages.
            message_id: deduplicates (default: a new id). Sending the same id and content
                again returns the same turn and changes nothing: retry with it after a
                lost connection.

        Returns:
            The handle of the turn that takes the message (`await turn.result()` is its
            Output). `last_receipt` says how it was taken.

        Raises:
            InvalidSignal: not user messages, empty, over the payload limit, or the session
                runs another Definition, or (code `interaction.session.mismatch`) the
                session was started with another context or approved tools than this
                handle holds.
            SignalConflict: the id was taken with other content.
            StaleMessage: an earlier, ended turn took the id.
            SessionEnded: the session has ended.
            UnknownDefinition: the worker serves no such Definition. Nothing changed in the
                session or the running turn when any of these is raised.
        """
        if self._start is None or self.definition is None:
            raise errors.ConfigurationError(
                "This handle does not know its Definition (get_session): use "
                "ScopeClient.session(definition, id=...) to send."
            )
        payload = SessionSend(
            message_id=message_id or uuid.uuid4().hex,
            messages=as_messages(message),
            definition=self.definition,
            follows=self._seen,
            start_digest=session_start_digest(self._start.context, self._start.approved_tools),
        )
        self.scope.check_sendable(payload, "The message", errors.InvalidSignal)
        try:
            receipt = await self._with_start(names.SESSION_SEND, payload, SendReceipt)
        except _Closed:
            raise errors.SessionEnded(
                f"Session {self.id!r} has ended; it takes no more messages and nothing was "
                "sent. Start a new session (a new id); its transcript stays readable."
            ) from None
        self.last_receipt = receipt
        return self.turn(receipt.turn)

    def _start_operation(self, start: SessionInput) -> WithStartWorkflowOperation[Any, Any]:
        """How `send` starts the session if it is not running (one per call)."""
        definition = start.definition
        return WithStartWorkflowOperation(
            names.SESSION_WORKFLOW,
            start,
            id=self.id,
            task_queue=self.scope.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            memo={"definition": definition},
            static_summary=f"session {definition}",
        )

    async def _with_start(self, update: str, payload: BaseModel, result_type: type[_R]) -> _R:
        """Update-with-start (`send`, `end`), again if it met the session between two runs
        (continuing as new), in a busy task, or with a workflow task that failed (the
        update aborted, nothing applied): the message id makes a repeat of a send
        safe, and an end is idempotent.

        Raises:
            _Closed: the id holds a closed session (it ended): nothing was delivered.
            ScopeError: the typed refusal of the update, or the server unreachable.
        """
        assert self._start is not None  # checked by the callers
        for attempt in range(1, _DELIVERY_ATTEMPTS + 1):
            operation = self._start_operation(self._start)
            try:
                result: _R = await self.scope.client.execute_update_with_start_workflow(
                    update,
                    payload,
                    start_workflow_operation=operation,
                    result_type=result_type,
                )
                return result
            except WorkflowUpdateFailedError as error:
                if sent_too_soon(error) and attempt < _DELIVERY_ATTEMPTS:
                    await asyncio.sleep(TOO_SOON_PAUSES[attempt - 1])  # it was mid-task: again
                    continue
                raise typed_refusal(error) from error
            except WorkflowAlreadyStartedError:
                with contextlib.suppress(WorkflowAlreadyStartedError):  # its copy: read, so
                    await operation.workflow_handle()  # asyncio never logs it as unretrieved
                if attempt == _DELIVERY_ATTEMPTS or not await self._running():
                    raise _Closed() from None
            except RPCError as error:
                if aborted_with_its_task(error) and attempt < _DELIVERY_ATTEMPTS:
                    await asyncio.sleep(TOO_SOON_PAUSES[attempt - 1])  # not applied: again
                    continue
                raise ScopeError(
                    f"Session {self.id!r} could not be reached: {error.message}. Nothing "
                    "was applied; call again (a message with the same message id)."
                ) from error
        raise AssertionError("unreachable")  # pragma: no cover

    async def _running(self) -> bool:
        try:
            described = await self._workflow().describe()
        except RPCError:
            return False
        return described.status == WorkflowExecutionStatus.RUNNING

    def turn(self, number: int) -> TurnHandle:
        """The handle of turn `number` (no call is made)."""
        return TurnHandle(self, turn_process_id(self.id, number), number)

    async def current(self) -> TurnHandle | None:
        """The running turn's handle, if a turn runs."""
        current = (await self.snapshot()).current
        return self.turn(current.turn) if current is not None else None

    async def end(self, reason: str = "ended by the host") -> None:
        """End the session: a running turn is cancelled, then it takes no more messages.
        Returns once the session has ended (its snapshot says `ended`), or, should its
        turn's cancellation take longer, after about 10 s with the end taken. Ending an
        ended session does nothing.

        `end` wins: once it returns, every `send` on this id is refused with
        `SessionEnded`. Before any message (no session runs on this id yet) it starts
        the session ended, with update-with-start as `send` does: the id then holds an
        ended session with no turn. A `send` racing it is refused with `SessionEnded`,
        or its turn is recorded as cancelled and the session ends.

        Raises:
            InteractionNotFound: no session has this id and this handle cannot start one
                (it came from `get_session`).
        """
        payload = SessionEndInput(reason=reason)
        if self._start is not None:
            try:
                await self._with_start(names.SESSION_END, payload, type(None))
            except _Closed:  # it had ended (or failed) already
                return
        else:
            try:
                await execute_update(self._workflow(), names.SESSION_END, payload)
            except WorkflowUpdateFailedError as error:
                raise typed_refusal(error) from error
            except RPCError as error:
                if error.status != RPCStatusCode.NOT_FOUND:
                    raise
                try:
                    await self._workflow().describe()
                except RPCError:
                    raise errors.InteractionNotFound(f"No session {self.id!r}.") from error
                return  # a closed session: it had ended (or failed) already
        for _ in range(_CATCH_UP_POLLS):  # its running turn is being cancelled
            if (await self._query_snapshot()).status in ("ended", "failed"):
                return
            await asyncio.sleep(_CATCH_UP_SECONDS)

    def events(
        self, after: SessionPosition | tuple[int, int] | None = None
    ) -> AsyncIterator[Event]:
        """The session's events as they happen: every turn's, in order, turn after turn
        (`async for event in session.events(): ...`). While the session is idle it waits
        for the next turn; it ends once the session has ended and its last turn is read.

        Each event says where it is: `event.turn` and `event.offset` (its offset in that
        turn's stream). Store them; after a disconnect resume exactly there with
        `after=(turn, offset)` (`SessionPosition`).

        Args:
            after: the position of the last event already read; `(n, -1)` reads turn n
                from its first event; every event after a position is read, or
                `offset_truncated` raised. None reads from the first turn on, each
                turn's events its stream still retains (none of a turn whose workflow is
                gone), and never raises `offset_truncated`.

        Raises:
            EventOffsetError: `after` is ahead of the session (a turn it has not started,
                or an offset its turn has not reached: `interaction.events.offset_ahead`),
                or events after it are no longer retained (a turn continued as new, or
                its workflow gone: `interaction.events.offset_truncated`: read the
                transcript, then follow from the latest turn, or with None).
            InteractionNotFound: no session has this id.
        """
        client = self.scope.client
        return read_session(
            self.id,
            after,
            snapshot=self._query_snapshot,
            past_turn=self._past_turn,
            turn_events=lambda turn, offset: follow_turn(
                client, self.id, turn, offset, self._query_snapshot
            ),
        )

    async def _past_turn(self, turn: int) -> SessionSnapshot:
        """The snapshot once the session moved past turn `turn` (polled by query)."""
        pauses = iter(NEXT_TURN_POLLS)
        while True:
            snap = await self._query_snapshot()
            if after_turn(snap, turn) != "wait":
                return snap
            await asyncio.sleep(next(pauses, NEXT_TURN_POLL_MAX))

    async def snapshot(self) -> SessionSnapshot:
        """Its turns, the transcript's length; queried live (a worker answers). Once this
        handle saw a turn end (`await turn.result()`), the snapshot shows it ended (the
        session takes a turn's end a moment after the turn's own result is readable).

        Raises:
            InteractionNotFound: no session has this id.
            ScopeError: no worker answered the query in time (`interaction.protocol.invalid`,
                as `InteractionHandle.snapshot`), or the server is unreachable.
        """
        for _ in range(_CATCH_UP_POLLS):
            snap = await self._query_snapshot()
            current = snap.current
            if current is None or current.turn > self._seen:
                break
            await asyncio.sleep(_CATCH_UP_SECONDS)
        return snap

    async def _query_snapshot(self) -> SessionSnapshot:
        try:
            snap: SessionSnapshot = await self._workflow().query(
                names.SESSION_SNAPSHOT_QUERY,
                result_type=SessionSnapshot,
                rpc_timeout=_QUERY_TIMEOUT,
            )
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise errors.InteractionNotFound(f"No session {self.id!r}.") from error
            raise ScopeError(
                f"Session {self.id!r} could not be queried: {error.message}. Is a worker "
                "serving its task queue? Nothing changed; ask again.",
                code=errors.PROTOCOL_INVALID,
            ) from error
        for record in snap.turns:
            if record.status != "running":
                self.saw_turn_end(record.turn)
        return snap

    async def transcript(self) -> SessionTranscript:
        """The conversation so far (every ended turn's messages) with its turns."""
        snap = await self.snapshot()
        return SessionTranscript.of(snap, tuple(await self._messages(0, snap.messages)))

    async def expanded(self, request: ModelEffectRequest) -> ModelEffectRequest:
        """A turn's retained model request with its base (the transcript it started from)
        in place: what the model was sent, to investigate an unknown model call. Settle
        with `settle_model_result(unknown.request, response, expanded.messages)`.

        Raises:
            SettlementMismatch: the transcript no longer starts with that base.
        """
        base = request.base
        if base is None:
            return request
        messages = tuple(await self._messages(0, base.count))
        if len(messages) != base.count or prefix_digest(messages) != base.digest:
            raise errors.SettlementMismatch(
                f"Session {self.id!r} no longer holds the transcript turn "
                f"{request.process_id!r} started from."
            )
        return request.expanded(messages)

    async def _messages(self, start: int, end: int) -> list[Message]:
        found: list[Message] = []
        while start + len(found) < end:
            page: ContextPage = await self._workflow().query(
                names.CONTEXT_QUERY,
                ContextPageRequest(start=start + len(found), end=end),
                result_type=ContextPage,
                rpc_timeout=_QUERY_TIMEOUT,
            )
            if not page.messages:
                break
            found.extend(page.messages)
        return found


__all__ = ["SessionHandle", "SessionOwner", "SessionSummary", "TurnHandle"]

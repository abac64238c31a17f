"""`InteractionHandle`: drive one Interaction tree (steer, answer, resolve, look).

Steers, answers and resolutions are sent as validated *updates*: an invalid or conflicting
one raises the typed error here and leaves no trace in the workflow's history.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any, Protocol

from pydantic import BaseModel
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.service import RPCError, RPCStatusCode

from scope_temporal import errors, names, tree
from scope_temporal.chat import Message
from scope_temporal.client import events
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.effects import ModelSettlement, Settlement, ToolSettlement
from scope_temporal.interaction.events import Event
from scope_temporal.interaction.snapshot import (
    PendingToolInput,
    TaskSnapshot,
    TreeSnapshot,
    UnknownEffect,
)
from scope_temporal.models.streaming import LiveText
from scope_temporal.outputs import Output
from scope_temporal.payloads import (
    ControlInput,
    ResolveInput,
    SteerInput,
    TaskSubmitInput,
    ToolInputAnswer,
)
from scope_temporal.settle import resend_model_call
from scope_temporal.tasks import TemporalTaskAccess
from scope_temporal.tools.validation import validate_value
from scope_temporal.update_retry import execute_update


class Sender(Protocol):
    """What a handle sends through: a connected client that refuses oversized payloads
    (`ScopeClient` is one)."""

    client: Client

    def check_sendable(self, payload: BaseModel, what: str, error: type[ScopeError]) -> None: ...


def typed_refusal(error: BaseException) -> ScopeError:
    """The typed error for an update a workflow refused (its code names the class)."""
    cause = error.__cause__ or getattr(error, "cause", None)
    if isinstance(cause, ApplicationError) and cause.type:
        return errors.refusal(cause.type, cause.message)
    return ScopeError(str(cause or error), code=errors.PROTOCOL_INVALID)


class InteractionHandle:
    """Drive one running Interaction tree."""

    def __init__(self, scope: Sender, id: str) -> None:
        self.scope = scope
        self.id = id

    def _workflow(self, process_id: str | None = None) -> WorkflowHandle[Any, Any]:
        return self.scope.client.get_workflow_handle(process_id or self.id)

    async def _update(self, process_id: str, update: str, payload: BaseModel) -> Any:
        self.scope.check_sendable(payload, f"The {update} input", errors.InvalidSignal)
        try:
            return await execute_update(self._workflow(process_id), update, payload)
        except WorkflowUpdateFailedError as error:
            raise typed_refusal(error) from error
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise errors.InteractionNotFound(
                    f"Process {process_id!r} does not exist or has already ended; nothing was "
                    f"sent ({error.message})."
                ) from error
            raise errors.ScopeError(
                f"{update} could not be delivered to {process_id!r}: {error.message}. Nothing "
                "was applied; it is safe to send it again with the same id.",
                code=errors.PROTOCOL_INVALID,
            ) from error

    def _check_in_tree(self, process_id: str, error: type[ScopeError], what: str) -> None:
        """Refuse to address a process outside this Interaction's tree (nothing is sent)."""
        if process_id != self.id and not process_id.startswith(f"{self.id}/"):
            raise error(
                f"The {what} belongs to process {process_id!r}, which is not part of "
                f"Interaction {self.id!r}; nothing was sent. Use that Interaction's handle."
            )

    async def steer(self, signal_id: str, *messages: Message | str) -> bool:
        """Queue user messages for the next model call; False for an exact duplicate id.

        Raises:
            InvalidSignal: not user messages, an id over 256 characters, or (code
                `interaction.payload.too_large`) a steer the next model request could not
                carry. SignalConflict: the id was used with other content.
        """
        msgs = tuple(Message.user(m) if isinstance(m, str) else m for m in messages)
        return bool(
            await self._update(self.id, names.STEER, SteerInput(signal_id=signal_id, messages=msgs))
        )

    async def answer(self, pending: PendingToolInput, answer_id: str, response: Any) -> bool:
        """Answer a tool input wait. The response is validated here first, then by the workflow.

        Raises:
            InvalidToolInput: the response violates `pending.response_schema` (nothing sent).
            NoSuchWait: the wait is no longer open, or belongs to another Interaction
                (nothing sent).
        """
        self._check_in_tree(pending.process_id, errors.NoSuchWait, f"wait {pending.wait_id!r}")
        problem = validate_value(pending.response_schema, response)
        if problem is not None:
            raise errors.InvalidToolInput(
                f"The answer does not match the response schema of {pending.wait_id!r}: {problem}"
            )
        payload = ToolInputAnswer(
            wait_id=pending.wait_id,
            answer_id=answer_id,
            response=response,
            process_id=pending.process_id,
        )
        return bool(await self._update(pending.process_id, names.TOOL_INPUT, payload))

    async def resolve(
        self,
        unknown: UnknownEffect,
        settlement: ModelSettlement | ToolSettlement,
        *,
        signal_id: str | None = None,
    ) -> None:
        """Deliver the host's settlement of an unknown Effect to the Process holding it.

        Raises:
            SettlementMismatch: it does not match the retained request of a held unknown,
                or the unknown belongs to another Interaction (nothing sent).
        """
        await self._settle(unknown, signal_id or f"resolve:{unknown.effect_id}", settlement)

    async def retry_model_call(
        self, unknown: UnknownEffect, *, signal_id: str | None = None
    ) -> None:
        """Send an unknown model call's retained request again, as a new Effect.

        The unknown call is recorded as superseded (`snapshot().model_attempts`), never
        admitted: whatever it answered, if it ran, is ignored, and it may have cost
        tokens. The new attempt keeps the call's number and gets its own Effect id
        (`.../model/3/retry/1`); if its outcome is unknown too, it is held like any other.

        Raises:
            SettlementMismatch: the unknown is a tool call (its tool may have acted: settle
                it with `settle_tool_result`), it is no longer held, or it belongs to
                another Interaction (nothing sent).
        """
        retry = resend_model_call(unknown.request)
        await self._settle(unknown, signal_id or f"retry:{unknown.effect_id}", retry)

    async def _settle(self, unknown: UnknownEffect, signal_id: str, settlement: Settlement) -> None:
        what = f"unknown effect {unknown.effect_id!r}"
        self._check_in_tree(unknown.process_id, errors.SettlementMismatch, what)
        payload = ResolveInput(signal_id=signal_id, settlement=settlement)
        await self._update(unknown.process_id, names.RESOLVE, payload)

    async def pause(self) -> None:
        """Start nothing new (in-flight calls settle); children are paused too."""
        await self._workflow().signal(names.PAUSE, ControlInput())

    async def resume(self) -> None:
        await self._workflow().signal(names.RESUME, ControlInput())

    async def cancel(self) -> None:
        """Cancel the Interaction; its children are cancelled with it."""
        await self._workflow().cancel()

    async def snapshot(self, *, timeout: timedelta | None = timedelta(seconds=10)) -> TreeSnapshot:
        """The tree: the root, every active child process, and every background task
        launched in it (running or ended, with its progress), queried live.

        Args:
            timeout: per query; a query needs a worker, so without one it would hang.

        Raises:
            InteractionNotFound: no workflow has this id.
            ScopeError: the root could not be queried (no worker answered in time).
        """
        return await tree.snapshot(self.scope.client, self.id, timeout)

    async def cancel_task(self, task_id: str, reason: str = "") -> TaskSnapshot:
        """Stop a background task of this tree (safe to repeat while it stops).

        Returns:
            Its snapshot right after the request (`cancel_requested`; it ends `canceled`
            once its run has stopped, or with whatever the run reached first).

        Raises:
            TaskNotFound: no background task has this id.
            TaskEnded: it had already ended.
        """
        found = await TemporalTaskAccess(self.scope.client).cancel(task_id, reason or "host")
        if found is None:
            raise errors.TaskNotFound(f"No background task {task_id!r}.")
        return found

    def events(self, after: int | None = None) -> AsyncIterator[Event]:
        """The tree's events as they happen: `async for event in handle.events(): ...`.

        Every process of the tree reports into one stream hosted by the root, so one
        offset orders everything (see docs/events.md for the kinds). It ends after the
        root's `completed`, `failed` or `canceled` event (or when the root's run closed
        without one, e.g. terminated). After a disconnect, resume exactly where you were
        with `after=<the offset of the last event you read>`.

        Args:
            after: the offset of the last event already read; None for every event the
                stream still retains (all of them, unless the root continued as new).

        Raises:
            EventOffsetError: `after` is beyond the stream's last event
                (`interaction.events.offset_ahead`), or no longer retained
                (`interaction.events.offset_truncated`: a continue-as-new carries only
                the latest events; read the snapshot, then follow with `after=None`).
            InteractionNotFound: no Interaction has this id.
        """
        return events.follow(self.scope.client, self.id, after)

    async def submit_task(
        self, tool: str, arguments: dict[str, Any], *, key: str | None = None
    ) -> str:
        """Start background tool `tool` directly as a task of this (running) Interaction,
        validated and authorised as a model's call of it with `run_in_background=true`
        (no approval is asked: the host is the authority); its progress, task tools and
        lifecycle notifications are those of any task of the Interaction.

        Args:
            key: names the task (`<interaction id>/task/submit/<key>`): the same key with
                the same arguments again starts nothing and returns the same id. Default:
                a new random key (then a retry of this call starts a second task).

        Returns:
            The task id (follow it in `snapshot()`, stop it with `cancel_task`).

        Raises:
            InvalidTaskSubmission: an unknown, non-background or unauthorised tool, arguments
                off its schema or refused by the tool, a bad key, an ended Interaction.
            TaskSubmissionConflict: the key was submitted with other arguments; nothing
                is started or recorded in either case.
        """
        if not isinstance(arguments, dict):
            raise errors.InvalidTaskSubmission(
                f"arguments of {tool!r} must be a dict (a JSON object); nothing was sent."
            )
        payload = TaskSubmitInput(key=key or uuid.uuid4().hex, tool=tool, arguments=arguments)
        return str(await self._update(self.id, names.TASK_SUBMIT, payload))

    async def live_text(self, process_id: str | None = None) -> LiveText | None:
        """The text the model call in flight of an Interaction has streamed so far.

        For display only: it is the latest heartbeat of the `scope.model` activity, never
        the call's result (which is in the snapshot once the call settles). None when no
        model call of that process is running or its model does not stream.

        Args:
            process_id: the root (default) or a delegate Interaction of the tree.
        """
        return await tree.live_text(self.scope.client, process_id or self.id)

    async def status(self) -> WorkflowExecutionStatus | None:
        return (await self._workflow().describe()).status

    async def result(self) -> Output:
        """Wait for the Output.

        Raises:
            InteractionFailed: with the failure's `.code` (e.g. interaction.limit.model_calls).
            InteractionCanceled: the Interaction was cancelled.
        """
        try:
            output = await self.scope.client.get_workflow_handle(
                self.id, result_type=Output
            ).result()
        except WorkflowFailureError as error:
            cause = error.cause
            if isinstance(cause, CancelledError):
                raise errors.InteractionCanceled(str(cause), code=errors.CANCELED) from error
            if isinstance(cause, ApplicationError) and cause.type:
                raise errors.InteractionFailed(cause.message, code=cause.type) from error
            if isinstance(cause, ApplicationError) and "Nondeterminism" in cause.message:
                raise errors.InteractionFailed(
                    "Replaying this Interaction diverged from its history: the worker's code or "
                    f"a Definition changed under a running Interaction. ({cause.message})",
                    code=errors.REPLAY_DIVERGED,
                ) from error
            raise errors.InteractionFailed(str(cause), code=errors.HOST_FAILED) from error
        assert isinstance(output, Output)
        return output


__all__ = ["InteractionHandle", "Sender", "typed_refusal"]

"""`ScopeClient`: start and find Interactions on one task queue."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.converter import StorageDriver
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from scope_temporal import errors, names
from scope_temporal.chat import Message, Options, options_problem
from scope_temporal.client.handle import InteractionHandle
from scope_temporal.client.session import SessionHandle, SessionSummary
from scope_temporal.converter import with_scope_converter
from scope_temporal.driver.history_limits import check_continue_as_new_every
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.attention import NEEDS_A_PERSON
from scope_temporal.payload_limits import SERVER_BLOB_LIMIT_BYTES, size_of, too_large
from scope_temporal.payloads import InteractionInput, SessionInput
from scope_temporal.run_context import check_run_context


class InteractionSummary(BaseModel):
    """One line of `ScopeClient.list`."""

    model_config = ConfigDict(frozen=True)

    id: str
    workflow_type: str
    status: str
    start_time: str
    definition: str | None = None
    """From the ScopeDefinition search attribute (None where it is not registered)."""
    scope_status: str | None = None
    """From the ScopeStatus search attribute: its status for people, for its whole tree
    (`running`, `waiting_input`, `unknown`, `paused`, `completed`, `failed`,
    `canceled`); None where the attribute is not registered."""


class ScopeClient:
    """Start and find Interactions on one task queue.

    Args:
        client: a Temporal client. Its data converter is kept (payload codec, failure
            converter) with pydantic JSON payloads added; use the workers' codec.
        task_queue: the queue a `ScopeWorker` serves.
        storage: the external storage the workers offload large payloads to, if any.
        tracing: add Temporal's `OpenTelemetryPlugin` (unless the client traces already),
            so an Interaction started under the caller's current span joins its trace, and
            steers, answers and resolutions carry the trace context. Needs
            `scope-temporal[otel]` and a global tracer provider (`configure_tracing()`).

    Raises:
        ConfigurationError: `tracing=True` without OpenTelemetry installed.
    """

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str = names.DEFAULT_TASK_QUEUE,
        storage: StorageDriver | None = None,
        tracing: bool = False,
    ) -> None:
        self.client = with_scope_converter(client, storage)
        if tracing:
            from scope_temporal.telemetry.tracing import with_tracing

            self.client = with_tracing(self.client)
        self.task_queue = task_queue
        self._status_attributes: bool | None = None

    @classmethod
    async def connect(
        cls,
        target: str = "localhost:7233",
        *,
        task_queue: str = names.DEFAULT_TASK_QUEUE,
        namespace: str = "default",
        storage: StorageDriver | None = None,
        tracing: bool = False,
        **connect_options: Any,
    ) -> ScopeClient:
        """Connect to a Temporal frontend (`host:port`); options go to `Client.connect`."""
        client = await Client.connect(target, namespace=namespace, **connect_options)
        return cls(client, task_queue=task_queue, storage=storage, tracing=tracing)

    async def start(
        self,
        definition: str,
        messages: Sequence[Message] | str,
        *,
        id: str | None = None,
        continue_as_new_every: int | None = None,
        context: Mapping[str, Any] | None = None,
        approved_tools: Sequence[str] = (),
        options: Options | None = None,
    ) -> InteractionHandle:
        """Start an Interaction of a Definition registered on the worker.

        Args:
            definition: the Definition's name.
            messages: the opening messages (a string is one user message).
            id: the workflow id (default `<definition>-<random>`); tool children get
                `<id>/tool/<seq>/<index>`.
            continue_as_new_every: also continue-as-new after this many model calls per
                run, at least 1 (Temporal's own suggestion always applies); the state,
                the steer mailbox and every counter carry over, so the outcome is the
                same.
            context: the run context, a JSON object of identities and ids (at most
                16 KiB) its tools read (`current_tool_call().context`), its delegates and
                background tasks inherit, and the model never sees. It is stored in
                workflow history: never put secrets in it.
            approved_tools: tools approved for this run already (e.g. what an earlier
                run's `Output.approved_tools` remembered): their calls need no approval
                (the Definition's approver may still deny them). Stored in history.
            options: sampling options for this Interaction's model calls only: the
                fields it sets apply over the Definition's `options` (delegates keep
                their own Definition's). Stored in history, not in the digest.

        Raises:
            ConfigurationError: `continue_as_new_every` is below 1; nothing was started.
            InvalidRunContext: `context` is not a JSON object, or is over 16 KiB (code
                `interaction.context.invalid`); nothing was started.
            InteractionAlreadyStarted: a workflow with that id is running (code
                `interaction.id.in_use`); nothing was started.
            InvalidOptions: `options` hold a value a model cannot take (code
                `interaction.options.invalid`); nothing was started.
            ScopeError: code `interaction.payload.too_large`: the input is over the
                server's blob limit (and no external storage is configured); nothing
                was started.
        """
        check_continue_as_new_every(continue_as_new_every, f"Start of {definition!r}")
        if isinstance(messages, str):
            messages = [Message.user(messages)]
        problem = None if options is None else options_problem(options)
        if problem is not None:
            raise errors.InvalidOptions(
                f"Options for {definition!r}: {problem}; nothing was started."
            )
        checked = check_run_context(context) if context is not None else None
        workflow_id = id or f"{definition}-{uuid.uuid4().hex[:12]}"
        track = await self._tracks_status()
        search_attributes = None
        if track:
            search_attributes = TypedSearchAttributes(
                [
                    SearchAttributePair(names.DEFINITION_ATTRIBUTE, definition),
                    SearchAttributePair(names.STATUS_ATTRIBUTE, "running"),
                ]
            )
        input = InteractionInput(
            definition=definition,
            messages=tuple(messages),
            track_status=track,
            continue_as_new_every=continue_as_new_every,
            context=checked,
            approved_tools=tuple(approved_tools),
            options=options,
        )
        self.check_sendable(input, "The start input", ScopeError)
        try:
            await self.client.start_workflow(
                names.INTERACTION_WORKFLOW,
                input,
                id=workflow_id,
                task_queue=self.task_queue,
                search_attributes=search_attributes,
                static_summary=f"{definition}: {messages[0].text[:60]}" if messages else definition,
            )
        except RPCError as error:
            if error.status == RPCStatusCode.INVALID_ARGUMENT and "size" in error.message:
                raise ScopeError(
                    f"The start input was refused by the server: {error.message}",
                    code=errors.PAYLOAD_TOO_LARGE,
                ) from error
            raise
        except WorkflowAlreadyStartedError:
            raise errors.InteractionAlreadyStarted(
                f"A workflow with id {workflow_id!r} is already running in namespace "
                f"{self.client.namespace!r}; nothing was started. Pick another id, or reach "
                f"the running one with get_handle({workflow_id!r})."
            ) from None
        return self.get_handle(workflow_id)

    def check_sendable(self, payload: BaseModel, what: str, error: type[ScopeError]) -> None:
        """Refuse (code `interaction.payload.too_large`) a payload over the server's blob
        limit, unless it would be offloaded to external storage."""
        if self.client.data_converter.external_storage is not None:
            return
        size = size_of(payload)
        if size > SERVER_BLOB_LIMIT_BYTES:
            raise error(
                too_large(what, size, SERVER_BLOB_LIMIT_BYTES, "Nothing was sent; send less."),
                code=errors.PAYLOAD_TOO_LARGE,
            )

    def session(
        self,
        definition: str,
        *,
        id: str | None = None,
        context: Mapping[str, Any] | None = None,
        approved_tools: Sequence[str] = (),
        continue_as_new_every: int = 100,
    ) -> SessionHandle:
        """A session of `definition`: a conversation of turns, one Interaction each. No
        call is made: the first `send` starts it (update-with-start), later ones reach it.

        Args:
            definition: the Definition each turn runs.
            id: the session id (its workflow id; default `<definition>-session-<random>`).
                Turns are `<id>/turn/<n>`.
            context: the run context of every turn (as `start`'s), plus `session_id`.
            approved_tools: tools approved for the session from its start. Approvals
                answered with `remember` during a turn are kept by the session for its
                later turns ("approve for this session").
            continue_as_new_every: the session continues as new after this many turns (or
                when Temporal suggests it), carrying its transcript; at least 1.

        Raises:
            ConfigurationError: `continue_as_new_every` is below 1.
            InvalidRunContext: `context` is not a JSON object within 16 KiB.
        """
        check_continue_as_new_every(continue_as_new_every, f"Session of {definition!r}")
        checked = check_run_context(context) if context is not None else None
        start = SessionInput(
            definition=definition,
            context=checked,
            approved_tools=tuple(approved_tools),
            continue_as_new_every=continue_as_new_every,
        )
        return SessionHandle(self, id or f"{definition}-session-{uuid.uuid4().hex[:12]}", start)

    def get_session(self, id: str) -> SessionHandle:
        """A handle on an existing session to read or end it (no call is made); to send,
        use `session(definition, id=id)`."""
        return SessionHandle(self, id)

    async def sessions(self, *, query: str | None = None, limit: int = 20) -> list[SessionSummary]:
        """The most recent sessions (optionally filtered by a visibility query, e.g.
        "ExecutionStatus = 'Running'")."""
        base = f"WorkflowType = '{names.SESSION_WORKFLOW}'"
        found: list[SessionSummary] = []
        async for execution in self.client.list_workflows(
            f"{base} AND ({query})" if query else base, limit=limit
        ):
            memo = await execution.memo()
            found.append(
                SessionSummary(
                    id=execution.id,
                    status=execution.status.name.lower() if execution.status else "unknown",
                    start_time=execution.start_time.isoformat(),
                    definition=memo.get("definition"),
                )
            )
        return found

    def get_handle(self, id: str) -> InteractionHandle:
        """A handle on an existing Interaction (no call is made)."""
        return InteractionHandle(self, id)

    async def list(
        self, *, query: str | None = None, limit: int = 20, needs_attention: bool = False
    ) -> list[InteractionSummary]:
        """The most recent root Interactions (optionally filtered by a visibility query).

        Args:
            query: a visibility query ANDed to the filter, e.g. `"ScopeDefinition = 'ops'"`.
            limit: at most this many.
            needs_attention: only the runs that cannot go on until a person acts: their
                ScopeStatus is `waiting_input` or `unknown` (anywhere in their tree).

        Raises:
            ConfigurationError: `needs_attention` on a server without the ScopeStatus
                search attribute (run `scope-temporal setup`); nothing was listed.
        """
        clauses = [f"WorkflowType = '{names.INTERACTION_WORKFLOW}'", "ParentWorkflowId IS NULL"]
        if needs_attention:
            if not await self._tracks_status():
                raise errors.ConfigurationError(
                    f"Namespace {self.client.namespace!r} has no ScopeStatus search "
                    "attribute, so no run can be found by what it needs. Register it with "
                    "`scope-temporal setup` (runs started afterwards are tracked)."
                )
            needing = ", ".join(f"'{s}'" for s in NEEDS_A_PERSON)
            clauses.append(f"{names.STATUS_ATTRIBUTE.name} IN ({needing})")
        if query:
            clauses.append(f"({query})")
        found: list[InteractionSummary] = []
        async for execution in self.client.list_workflows(" AND ".join(clauses), limit=limit):
            attributes = execution.typed_search_attributes
            found.append(
                InteractionSummary(
                    id=execution.id,
                    workflow_type=execution.workflow_type,
                    status=execution.status.name.lower() if execution.status else "unknown",
                    start_time=execution.start_time.isoformat(),
                    definition=attributes.get(names.DEFINITION_ATTRIBUTE),
                    scope_status=attributes.get(names.STATUS_ATTRIBUTE),
                )
            )
        return found

    async def _tracks_status(self) -> bool:
        if self._status_attributes is None:
            try:
                response = await self.client.operator_service.list_search_attributes(
                    ListSearchAttributesRequest(namespace=self.client.namespace)
                )
                registered = set(response.custom_attributes)
                self._status_attributes = all(
                    key.name in registered for key in names.SEARCH_ATTRIBUTES
                )
            except RPCError:
                self._status_attributes = False
        return self._status_attributes


__all__ = ["InteractionSummary", "ScopeClient"]

"""The activities `scope.model` and `scope.tool`: the only Temporal code that does I/O.

Built on the worker with its dependencies (models, reducers, tools, middleware,
observers); none of that travels in payloads. Both run with `maximum_attempts=1` (set by
the workflows). Definite outcomes return as tagged data; only what the framework cannot
prove escapes as an exception (cancellation), which the workflow records as unknown.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import TypeVar

from temporalio import activity
from temporalio.common import RawValue
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from scope_temporal import names
from scope_temporal.activities.model_call import ModelResult, model_once
from scope_temporal.activities.model_input import (
    ContextUnavailable,
    ModelRequestBuilder,
    RequestMismatch,
)
from scope_temporal.activities.raw_input import read_activity_input
from scope_temporal.activities.served import ContextReducer
from scope_temporal.activities.text_events import TextEvents
from scope_temporal.activities.tool_attempt import attempt_once, serving
from scope_temporal.background.runtime import BackgroundRuntime
from scope_temporal.chat import Message
from scope_temporal.interaction.effects import McpSampleInput, ModelHostFailed, ModelResponded
from scope_temporal.interaction.events import TextEvent, ToolProgressEvent
from scope_temporal.mcp.connections import McpConnections
from scope_temporal.mcp.listing import list_tools
from scope_temporal.mcp.progress import SendProgress
from scope_temporal.mcp.session_values import McpCloseInput, McpSessionInput, McpSessionOutcome
from scope_temporal.mcp.sessions import open_session
from scope_temporal.mcp.values import McpListInput, McpListOutcome
from scope_temporal.models.protocol import Model
from scope_temporal.models.streaming import LiveTextBuffer
from scope_temporal.observers import ObserverHub
from scope_temporal.payloads import (
    ContextPage,
    ContextPageRequest,
    ModelActivityInput,
    RunSettings,
    ToolActivityInput,
)
from scope_temporal.registry import Registry
from scope_temporal.tasks import TemporalTaskAccess
from scope_temporal.tools.middleware import Middleware
from scope_temporal.tools.outcome import AttemptOutcome
from scope_temporal.tools.registry import ToolRegistry

T = TypeVar("T")

_LIVE_TEXT_EVERY_S = 0.2
"""Streamed text is republished at most this often (each time with all the text so far)."""


class _Heartbeat:
    """Heartbeats an activity while its work runs, carrying the latest details.

    The first beat comes after one interval, not at once: the timeout counts from the
    start, and an instant call then costs the server no heartbeat at all.
    """

    def __init__(self, every: timedelta | None) -> None:
        self._every = every
        self._details: tuple[object, ...] = ()

    def publish(self, *details: object) -> None:
        """Make `details` the heartbeat details now (the SDK throttles what is sent)."""
        self._details = details
        activity.heartbeat(*details)

    async def around(self, work: Awaitable[T]) -> T:
        if self._every is None:
            return await work
        interval = max(self._every.total_seconds() / 3, 0.2)

        async def beat() -> None:
            while True:
                await asyncio.sleep(interval)
                activity.heartbeat(*self._details)

        beating = asyncio.create_task(beat())
        try:
            return await work
        finally:
            beating.cancel()


class _LiveTextPublisher:
    """Publishes a model call's streamed text as heartbeat details, at most every 0.2 s.

    Each publish carries all the text so far (a host may look at any moment); pieces that
    arrive in between are folded into the next publish, so the cost does not grow with the
    number of pieces.
    """

    def __init__(self, buffer: LiveTextBuffer, heartbeat: _Heartbeat) -> None:
        self._buffer = buffer
        self._heartbeat = heartbeat
        self._dirty = False
        self._flusher: asyncio.Task[None] | None = None

    def add(self, text: str) -> None:
        self._buffer.add(text)
        self._dirty = True
        if self._flusher is None:
            self._heartbeat.publish(self._buffer.current())  # the first piece at once
            self._dirty = False
            self._flusher = asyncio.create_task(self._flush())

    async def _flush(self) -> None:
        while True:
            await asyncio.sleep(_LIVE_TEXT_EVERY_S)
            if self._dirty:
                self._dirty = False
                self._heartbeat.publish(self._buffer.current())

    def close(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()


class ScopeActivities:
    """The activity implementations of one worker.

    Args:
        registry: the worker's Definitions (requests name theirs) and payload limit.
    """

    def __init__(
        self,
        *,
        registry: Registry,
        models: Mapping[str, Model],
        reducers: Mapping[str, ContextReducer],
        tools: ToolRegistry,
        middleware: Sequence[Middleware],
        observers: ObserverHub,
        background: BackgroundRuntime,
        mcp: McpConnections | None = None,
        session_queue: str | None = None,
    ) -> None:
        self.registry = registry
        self.mcp = mcp or McpConnections({})
        self.session_queue = session_queue
        """The task queue only this worker polls, for the calls of the MCP sessions it
        holds (None: it holds none)."""
        self.background = background
        self.models = dict(models)
        self.reducers = dict(reducers)
        self.tools = tools
        self.middleware = tuple(middleware)
        self.observers = observers
        self.requests = ModelRequestBuilder()

    @staticmethod
    @activity.defn(name=names.RECORD_DIGEST_ACTIVITY)
    async def record_digest(settings: RunSettings) -> RunSettings:
        """Echo a run's settings (the Definition's digest, the payload limit, the served
        delegates) so their first values are recorded in history."""
        return settings

    @activity.defn(name=names.MCP_LIST_ACTIVITY)
    async def mcp_list(self, input: McpListInput) -> McpListOutcome:
        """Fetch and check the tool lists of a Definition's MCP servers (docs/mcp.md)."""
        return await list_tools(input, registry=self.registry, connections=self.mcp)

    @activity.defn(name=names.MCP_SESSION_ACTIVITY)
    async def mcp_session(self, input: McpSessionInput) -> McpSessionOutcome:
        """Open an Interaction's own session of an MCP server here; answer with this
        worker's session queue (docs/mcp.md, Stateful servers)."""
        return await open_session(
            input, registry=self.registry, sessions=self.mcp.sessions, queue=self.session_queue
        )

    @activity.defn(name=names.MCP_CLOSE_ACTIVITY)
    async def mcp_close(self, input: McpCloseInput) -> int:
        """Close an Interaction's sessions held here: how many were."""
        return await self.mcp.sessions.close(input.owner, input.servers)

    @activity.defn(name=names.MCP_SAMPLE_ACTIVITY)
    async def mcp_sample(self, input: McpSampleInput) -> ModelResult:
        """Call the Interaction's model once for an MCP server's sampling request (the
        request whole; no tools); classified as `scope.model` classifies (`call_model`).
        A request for another version of its Definition is refused before the model is
        called."""
        request = input.request
        definition = self.registry.lookup(request.definition)
        if definition is None or definition.digest != request.digest:
            return ModelHostFailed(
                effect_id=request.effect_id,
                message=f"Definition {request.definition!r} (digest {request.digest}) is not "
                "served by this worker; the model was not called.",
            )
        heartbeat = _Heartbeat(activity.info().heartbeat_timeout)
        return await model_once(request, self, on_delta=_quiet, around=heartbeat.around)

    @activity.defn(name=names.MODEL_ACTIVITY)
    async def model(self, raw: RawValue) -> ModelResult:
        """Call the registered model once; see `call_model` for the classification.

        The input (a `ModelActivityInput`, read by `read_activity_input`) names its context by
        reference: the request is rebuilt from it first (see `model_input`); a prefix
        that cannot be obtained raises `ContextUnavailable` before the model is called,
        which the workflow records as unknown.
        """
        input = read_activity_input(raw, ModelActivityInput)
        definition = self.registry.lookup(input.definition)
        try:
            request = await self.requests.rebuild(input, definition, _fetch_prefix)
        except RequestMismatch as mismatch:
            return ModelHostFailed(effect_id=input.effect_id, message=str(mismatch))
        heartbeat = _Heartbeat(input.heartbeat)
        live = _LiveTextPublisher(
            LiveTextBuffer(request.process_id, request.model_call_seq), heartbeat
        )
        text = _text_events(input.events_to, request.process_id, request.model_call_seq)

        def streamed(piece: str) -> None:
            live.add(piece)
            if text is not None:
                text.add(piece)

        try:
            outcome = await model_once(request, self, on_delta=streamed, around=heartbeat.around)
        except BaseException:
            if text is not None:
                text.cancel()
            raise
        finally:
            live.close()
        if text is not None:  # the text goes before the outcome's own events
            await text.close()
        if isinstance(outcome, ModelResponded) and outcome.messages_sent is None:
            self.requests.remember_reply(input, outcome.response.message)
        return outcome

    @activity.defn(name=names.TOOL_ACTIVITY)
    async def tool(self, raw: RawValue) -> AttemptOutcome:
        """Enter the tool body once (the input: a `ToolActivityInput`, read by
        `read_activity_input`); see `attempt_once` for the guard and the classification.

        Background tools reach the worker's background runtime (their output store, the
        live runs held for a handoff, task access for `task_status`...) through
        `current_runtime()`. A request its Definition does not grant (see `unauthorised`)
        is rejected as not authorized before anything runs. An outcome over the payload
        limit becomes `Unknown(interaction.payload.too_large)`: the body ran, so only the
        host may settle the call (see `payload_limits`).
        """
        input = read_activity_input(raw, ToolActivityInput)
        heartbeat = _Heartbeat(input.heartbeat)
        progress = _progress_events(input.events_to)
        tasks = TemporalTaskAccess(activity.client())
        return await attempt_once(
            input.attempt,
            self,
            *serving(input.attempt, self, progress, sent_before=activity.info().attempt - 1),
            runtime=dataclasses.replace(self.background, tasks=tasks),
            around=heartbeat.around,
        )


def _quiet(text: str) -> None:
    """A sampling call's streamed text: the server gets the whole reply, nobody else."""


_Sent = TypeVar("_Sent", TextEvent, ToolProgressEvent)


def _publisher(events_to: str) -> Callable[[_Sent], Awaitable[None]]:
    """Publish one event to the tree's stream hosted by the workflow `events_to`."""
    stream = WorkflowStreamClient.create(activity.client(), events_to)
    topic = stream.topic(names.EVENTS_TOPIC)

    async def send(event: _Sent) -> None:
        topic.publish(event)
        await stream.flush()

    return send


def _text_events(events_to: str | None, process_id: str, seq: int) -> TextEvents | None:
    """The streamed text's way into the tree's stream (None: the workflow has none)."""
    if events_to is None:
        return None
    return TextEvents(_publisher(events_to), process_id, seq)


def _progress_events(events_to: str | None) -> SendProgress | None:
    """An MCP call's progress events' way into the tree's stream (None: none)."""
    return None if events_to is None else _publisher(events_to)


_QUERY_ATTEMPTS = 8


async def _fetch_prefix(workflow_id: str, start: int, end: int) -> list[Message]:
    """Messages [start, end) of a workflow's context by `scope.context`: this activity's
    Interaction (the run that scheduled it), or a turn's session (its current run).

    Retried with backoff (about 25 s in all) while heartbeating: the workflow may be
    replaying on another worker. Raises ContextUnavailable if it never answers.
    """
    info = activity.info()
    own = workflow_id == info.workflow_id
    handle = activity.client().get_workflow_handle(
        workflow_id, run_id=info.workflow_run_id if own else None
    )
    messages: list[Message] = []
    delay = 0.2
    attempt = 0
    while start + len(messages) < end:
        try:
            page = await handle.query(
                names.CONTEXT_QUERY,
                ContextPageRequest(start=start + len(messages), end=end),
                result_type=ContextPage,
            )
        except Exception as error:
            attempt += 1
            if attempt >= _QUERY_ATTEMPTS:
                raise ContextUnavailable(
                    f"The workflow {workflow_id!r} did not return its messages {start} to "
                    f"{end} ({type(error).__name__}: {error}); the model was not called."
                ) from error
            activity.heartbeat()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
            continue
        if not page.messages:
            break  # the workflow holds fewer: the digest check reports it
        messages.extend(page.messages)
    return messages

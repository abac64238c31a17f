"""Shared helpers for live tests: a fresh task queue and worker per test, polling, replay."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.converter import DataConverter, StorageDriver
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, LocalFileMaterializer, ScopeClient, ScopeWorker
from scope_temporal.converter import read_recorded
from scope_temporal.definition import ToolCallWorkflows
from scope_temporal.models.protocol import Model
from scope_temporal.names import TOOL_ACTIVITY
from scope_temporal.payloads import ToolActivityInput
from scope_temporal.registry import Registry

T = TypeVar("T")

# Every workflow id a live test started, replayed at the end of the session (CONFORMANCE 42).
STARTED_IDS: list[str] = []
# Runs a test made diverge on purpose (a changed Definition): they must not replay.
DIVERGED_IDS: set[str] = set()
# Runs their own test replays (with `replay-check`, against the version of the app that
# served them: two versions served one task queue, from worker processes).
CHECKED_BY_THEIR_TEST: set[str] = set()
# External storage a test's worker offloaded to, by task queue (replay needs it).
STORAGE_BY_QUEUE: dict[str, StorageDriver] = {}
# The data converter (e.g. with an encryption codec) a test's worker used, by task queue.
CONVERTER_BY_QUEUE: dict[str, DataConverter] = {}
# How the conformance suite maps tool calls onto Temporal: each `test_live_*` test runs
# once per mode (see conftest.py) and `serving` gives every Definition that mode; None
# (other tests) serves Definitions as declared.
TOOL_CALL_MODE: list[ToolCallWorkflows | None] = [None]
# The mode each subprocess worker ran in, by task queue (replay needs it).
MODE_BY_QUEUE: dict[str, ToolCallWorkflows] = {}
# Task queues whose model endpoint echoed the fault workers' API key in its error bodies
# (tests/live/test_live_model_errors.py): the history scan must find it masked there.
ECHOED_KEY_QUEUES: set[str] = set()
# What each in-process worker served (its Registry), by task queue: filled for every
# ScopeWorker the session builds (see `record_registries` in tests/conftest.py).
REGISTRY_BY_QUEUE: dict[str, Registry] = {}


def in_mode(definition: Definition, mode: ToolCallWorkflows) -> Definition:
    """The same Definition with `tool_call_workflows=mode`."""
    if definition.tool_call_workflows == mode:
        return definition
    return Definition(
        definition.name,
        description=definition.description,
        instructions=definition.instructions,
        model=definition.model,
        tools=definition.tools,
        delegates=definition.delegates,
        max_model_calls=definition.max_model_calls,
        max_concurrent_tool_calls=definition.max_concurrent_tool_calls,
        completion_validator=definition.completion_validator,
        capabilities=definition.capabilities,
        context_reducer=definition.context_reducer,
        options=definition.options,
        output_schema=definition.output_schema,
        model_timeout=definition.model_timeout,
        model_heartbeat_timeout=definition.model_heartbeat_timeout,
        tool_timeout=definition.tool_timeout,
        tool_heartbeat_timeout=definition.tool_heartbeat_timeout,
        tool_call_workflows=mode,
        approval=definition.approval,
        model_retry=definition.model_retry,
        fallback_models=definition.fallback_models,
        max_total_tokens=definition.max_total_tokens,
        tool_budget=definition.tool_budget,
        max_response_bytes=definition.max_response_bytes,
        mcp_servers=definition.mcp_servers,
    )


@asynccontextmanager
async def serving(
    env: WorkflowEnvironment,
    definitions: Iterable[Definition],
    *,
    tools: Iterable[Any] = (),
    models: Mapping[str, Model],
    **options: Any,
) -> AsyncIterator[ScopeClient]:
    """Run a ScopeWorker on a fresh task queue; yield a ScopeClient for that queue."""
    task_queue = f"tq-{uuid.uuid4().hex[:10]}"
    # background tasks' progress goes to a fresh folder, not the checkout's .scope/
    options.setdefault("materializer", LocalFileMaterializer(tempfile.mkdtemp(prefix="tasks-")))
    if options.get("storage") is not None:
        STORAGE_BY_QUEUE[task_queue] = options["storage"]
    worker = ScopeWorker(
        env.client,
        task_queue=task_queue,
        definitions=[in_mode(d, mode) if (mode := TOOL_CALL_MODE[0]) else d for d in definitions],
        tools=tools,
        models=models,
        **options,
    )
    async with worker:
        yield RecordingClient(env.client, task_queue=task_queue)


class RecordingClient(ScopeClient):
    """A ScopeClient that remembers the ids it started (for the replay test)."""

    async def start(self, definition: str, messages: Any, **options: Any) -> Any:
        handle = await super().start(definition, messages, **options)
        STARTED_IDS.append(handle.id)
        return handle


async def eventually(
    probe: Callable[[], Awaitable[T]],
    until: Callable[[T], bool],
    *,
    timeout: float = 20.0,
    every: float = 0.1,
) -> T:
    """Poll `probe` until `until(value)`; fail with the last value seen on timeout."""
    deadline = asyncio.get_running_loop().time() + timeout
    value = await probe()
    while not until(value):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not reached in {timeout}s; last value: {value!r}")
        await asyncio.sleep(every)
        value = await probe()
    return value


async def tool_attempts(client: Client, process_id: str) -> int:
    """How many `scope.tool` activities were scheduled for the call `process_id`, wherever
    they ran: in its parent (the first attempt, `tool_call_workflows="on_demand"`) and in
    its own ToolCall workflow, if it has one."""
    parent = process_id.rsplit("/tool/", 1)[0]
    count = 0
    for workflow_id in (parent, process_id):
        try:
            history = await client.get_workflow_handle(workflow_id).fetch_history()
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
            continue
        for event in history.events:
            if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                continue
            attributes = event.activity_task_scheduled_event_attributes
            if attributes.activity_type.name != TOOL_ACTIVITY:
                continue
            recorded = attributes.input.payloads[0]
            payload = read_recorded(recorded, ToolActivityInput, workflow_id)
            if payload.attempt.request.process_id == process_id:
                count += 1
    return count


def attempt_workflow_id(process_id: str) -> str:
    """Where a call's first attempt ran in this test's mode: its ToolCall workflow
    (`always`), or its parent Interaction (`on_demand`)."""
    if TOOL_CALL_MODE[0] == "always":
        return process_id
    return process_id.rsplit("/tool/", 1)[0]


async def has_workflow(client: Client, workflow_id: str) -> bool:
    try:
        await client.get_workflow_handle(workflow_id).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


def fresh_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


__all__ = [
    "CHECKED_BY_THEIR_TEST",
    "CONVERTER_BY_QUEUE",
    "DIVERGED_IDS",
    "ECHOED_KEY_QUEUES",
    "MODE_BY_QUEUE",
    "REGISTRY_BY_QUEUE",
    "STARTED_IDS",
    "STORAGE_BY_QUEUE",
    "TOOL_CALL_MODE",
    "Client",
    "attempt_workflow_id",
    "eventually",
    "fresh_id",
    "has_workflow",
    "in_mode",
    "serving",
    "tool_attempts",
]

"""ScopeWorker: serves the Interaction, ToolCall and BackgroundTask workflows and their
activities.

Users register Definitions, tools, models and reducers by name; the worker adds pydantic
JSON payloads to the client's own data converter (its codec kept) so users never need to
know it exists.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, get_args

from temporalio.client import Client
from temporalio.converter import StorageDriver
from temporalio.worker import Worker
from temporalio.workflow import NondeterminismError

from scope_temporal.activities.background import TaskActivities
from scope_temporal.activities.served import ContextReducer
from scope_temporal.activities.temporal import ScopeActivities
from scope_temporal.background.materializer import LocalFileMaterializer, OutputMaterializer
from scope_temporal.background.runtime import BackgroundRuntime, LiveRuns
from scope_temporal.background.task_tools import TASK_TOOLS
from scope_temporal.background.tool import BackgroundTool
from scope_temporal.converter import with_scope_converter
from scope_temporal.definition import Definition
from scope_temporal.errors import ConfigurationError, DefinitionError
from scope_temporal.loop_watch import LoopWatch
from scope_temporal.mcp.connections import McpConnections
from scope_temporal.mcp.sessions import DEFAULT_IDLE
from scope_temporal.mcp.values import McpTarget
from scope_temporal.models.protocol import Model
from scope_temporal.names import DEFAULT_TASK_QUEUE
from scope_temporal.observers import ObserverFailure, ObserverHub
from scope_temporal.payload_limits import (
    DEFAULT_PAYLOAD_LIMIT_BYTES,
    OFFLOADED_PAYLOAD_LIMIT_BYTES,
)
from scope_temporal.registry import Registry
from scope_temporal.routing import routed_tools, unserved_queues, unserved_warning
from scope_temporal.server_version import ensure_supported_server
from scope_temporal.sizing import sized_worker_options, usable_cpus
from scope_temporal.telemetry.install import worker_telemetry
from scope_temporal.tools.middleware import Middleware
from scope_temporal.tools.registry import ToolRegistry
from scope_temporal.versioning import pinned_deployment
from scope_temporal.workflows.background_task import BackgroundTaskWorkflow
from scope_temporal.workflows.interaction import InteractionWorkflow
from scope_temporal.workflows.serving import RegistryInterceptor
from scope_temporal.workflows.session import SessionWorkflow
from scope_temporal.workflows.tool_call import ToolCallWorkflow

WorkerRole = Literal["all", "workflows", "activities"]
"""What a worker runs: everything, only workflows (the Interactions, their ToolCall
children and background tasks, no model or tool call), or only activities (model
calls, tool bodies, background attempts; e.g. a tool pool on its own task queue)."""

_log = logging.getLogger(__name__)

DEFAULT_TASK_OUTPUT = Path(".scope/task-output")
"""Where the default `LocalFileMaterializer` keeps background tasks' progress."""


class ScopeWorker:
    """A Temporal worker serving scope-temporal on one task queue.

    Args:
        client: a connected Temporal client. Its data converter is kept (payload codec,
            failure converter, external storage) with pydantic JSON payloads added; see
            `scope_temporal.converter`. Clients must use the same codec.
        task_queue: the queue `ScopeClient` starts Interactions on.
        definitions: every Definition this queue serves, delegates' included.
        tools: the tool implementations the Definitions bind, and the former
            implementations of background tools that changed capability class
            (`BackgroundTool.retired()`), which run only their earlier tasks' attempts.
        models: models by the name Definitions use (`Definition(model="default")`).
        reducers: context reducers by name.
        observers: worker-side observers (failures are isolated; see `observer_failures`).
        middleware: tool middleware applied to every tool, outermost first.
        sticky_queue_schedule_to_start_timeout: short by default, so after a worker dies
            an unknown Effect surfaces about one heartbeat timeout + 1 s later.
        storage: where to offload payloads over 256 KiB (e.g. `DirectoryStorage(path)`,
            or `S3StorageDriver` on a cluster); clients must use the same one. None keeps
            the client's external storage, if its converter has one, else every payload
            stays in history, and an Interaction whose state outgrows the payload limit
            cannot continue as new: it fails with `interaction.state.too_large` before
            its history reaches Temporal's limits.
        payload_limit_bytes: the largest payload (model request/response, tool input and
            result) the framework accepts; default 1 MB, or 64 MB with external storage. See
            `scope_temporal.payload_limits`.
        task_history_events: a background task started by this worker continues as new
            before its run's history passes this many events (default 2,000; see
            docs/background-tools.md).
        materializer: where background tasks' progress output is stored (default a
            `LocalFileMaterializer` in `.scope/task-output` of the working directory).
            Every worker that runs a task's attempts or answers its `task_output` must
            reach the same store (e.g. `LocalFileMaterializer` on a shared directory).
        tracing: add Temporal's `OpenTelemetryPlugin` to the client (unless it traces
            already), which carries one trace through an Interaction's whole tree, and
            scope-temporal's spans: `invoke_agent <definition>` per Interaction run,
            `chat <model>` per model call, `execute_tool <tool>` per entry into a tool
            body, `background_task <tool>` per background task (see
            `scope_temporal.telemetry`). Temporal's own spans too if the client's plugin
            says `add_temporal_spans=True`. Needs `scope-temporal[otel]` and a replay-safe
            global tracer provider (`configure_tracing()`), so replays and retried
            workflow tasks never record a span twice. Off (the default), nothing of it is
            installed.
        metrics: record `scope_model_calls`, `scope_model_tokens`,
            `scope_model_latency`, `scope_tool_calls`, `scope_unknowns_opened` and
            `scope_unknowns_settled` (see `scope_temporal.telemetry.conventions`) through
            the client's Temporal `Runtime`: they go where its metrics go (e.g.
            `PrometheusConfig`); replays never count twice. Off (the default), nothing
            is recorded.
        deployment: with `build_id`, the Worker Deployment Version this worker belongs to
            (Temporal's Worker Versioning). Its workflows are pinned: an Interaction, its
            ToolCalls, delegates and background tasks all run on the build that started
            it, so a changed Definition never reaches a running Interaction; new ones run
            on the version made current (`scope_temporal.versioning`, docs/deploy.md).
        build_id: the build this worker runs (e.g. the release's git commit).
        role: `all` (default), `workflows` or `activities` (see `WorkerRole`). Every
            role checks the same bindings: a pool running tool bodies serves the same
            Definitions, so the digest and authority checks are the same as anywhere.
            A tool declared with `@tool(task_queue=...)` runs only on the workers of that
            queue: start one with role `activities` (or `all`) there.
        mcp_servers: how this worker reaches each MCP server its Definitions name
            (`McpStdio` / `McpHttp`, docs/mcp.md); commands, URLs and headers stay here.
        mcp_session_idle: a per-Interaction MCP session (`McpServer(session=
            "interaction")`) without a call for this long is closed (default 1 h); a
            later call of its Interaction then fails with `tool.mcp.session_lost`. A
            worker holds at most 64 sessions. A worker serving such a server (role `all`
            or `activities`) also polls a task queue of its own,
            `<task_queue>/mcp/<suffix>`, where the calls of the sessions it holds run.
        worker_options: passed on to Temporal's `Worker`. Without `tuner=` or a
            `max_concurrent_*` option, its slots are sized from the CPU count
            (`scope_temporal.sizing`: 4 workflow tasks and 32 activities per CPU), so
            an overloaded worker leaves work queued on the server instead of taking
            more than it can run before heartbeat timeouts.

    A worker serving a Definition that binds background tools also serves their task
    tools (`task_status`, `task_output`, `task_cancel`); with a handoff tool it polls a
    second task queue of its own, where the adoption of the live runs it holds runs.

    Raises:
        DefinitionError: a Definition binds a tool, model or delegate Definition that is not
            registered here.
        ConfigurationError: an unknown `role`; only one of `deployment` and `build_id`, or
            a deployment name
            with a `.`; `tracing=True` without OpenTelemetry installed or without a
            replay-safe global tracer provider.
    """

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str = DEFAULT_TASK_QUEUE,
        definitions: Iterable[Definition],
        tools: Iterable[Any] = (),
        models: Mapping[str, Model],
        reducers: Mapping[str, ContextReducer] | None = None,
        observers: Sequence[Any] = (),
        middleware: Sequence[Middleware] = (),
        sticky_queue_schedule_to_start_timeout: timedelta = timedelta(seconds=1),
        storage: StorageDriver | None = None,
        payload_limit_bytes: int | None = None,
        task_history_events: int | None = None,
        materializer: OutputMaterializer | None = None,
        tracing: bool = False,
        metrics: bool = False,
        deployment: str | None = None,
        build_id: str | None = None,
        role: WorkerRole = "all",
        mcp_servers: Mapping[str, McpTarget] | None = None,
        mcp_session_idle: timedelta = DEFAULT_IDLE,
        **worker_options: Any,
    ) -> None:
        if role not in get_args(WorkerRole):
            raise ConfigurationError(
                f"Unknown worker role {role!r}: use 'all' (the default), 'workflows' or "
                "'activities'."
            )
        self.role: WorkerRole = role
        worker_options = sized_worker_options(worker_options, usable_cpus())
        versioning = pinned_deployment(deployment, build_id)
        if versioning is not None:
            if "deployment_config" in worker_options:
                raise ConfigurationError("Pass deployment/build_id or deployment_config, not both.")
            worker_options["deployment_config"] = versioning
        definitions = list(definitions)
        tools = list(tools)
        if any(d.binds_background_tools for d in definitions):
            tools += TASK_TOOLS
        self.tools = ToolRegistry(tools)
        reducers = dict(reducers or {})
        _check_bindings(definitions, self.tools, models, reducers)
        serving = definitions if role != "workflows" else ()  # the calls run elsewhere
        self.mcp = McpConnections(mcp_servers or {}, serving=serving, session_idle=mcp_session_idle)
        """The MCP servers this worker reaches, and its open connections (docs/mcp.md)."""
        self.client = with_scope_converter(client, storage)
        if payload_limit_bytes is None:
            offloads = self.client.data_converter.external_storage is not None
            payload_limit_bytes = (
                OFFLOADED_PAYLOAD_LIMIT_BYTES if offloads else DEFAULT_PAYLOAD_LIMIT_BYTES
            )
        self.registry = Registry(
            definitions,
            payload_limit=payload_limit_bytes,
            task_history_events=task_history_events,
        )
        """What this worker serves: its Definitions and payload limit."""
        self.task_queue = task_queue
        self.client, telemetry = worker_telemetry(
            self.client, task_queue=task_queue, models=models, tracing=tracing, metrics=metrics
        )
        interceptors = [*worker_options.pop("interceptors", ()), *telemetry]
        self._observers = ObserverHub(list(observers))
        handoff = any(isinstance(t, BackgroundTool) and t.settings.handoff for t in self.tools)
        handoff = handoff or any(s.background for d in serving for s in d.mcp_servers)
        adopt_queue = f"{task_queue}/adopt/{uuid.uuid4().hex[:12]}" if handoff else None
        runtime = BackgroundRuntime(
            materializer=materializer or LocalFileMaterializer(DEFAULT_TASK_OUTPUT),
            live_runs=LiveRuns(),
            adopt_queue=adopt_queue,
            tools=self.tools,
        )
        holds_sessions = any(s.per_interaction for d in serving for s in d.mcp_servers)
        session_queue = f"{task_queue}/mcp/{uuid.uuid4().hex[:12]}" if holds_sessions else None
        self.mcp_session_queue = session_queue
        """The task queue only this worker polls, where the calls of the per-Interaction
        MCP sessions it holds run (None: it serves no such server)."""
        tasks = TaskActivities(self.tools, runtime)
        activities = ScopeActivities(
            registry=self.registry,
            models=models,
            reducers=reducers,
            tools=self.tools,
            middleware=middleware,
            observers=self._observers,
            background=runtime,
            mcp=self.mcp,
            session_queue=session_queue,
        )
        remote = [
            activities.model,
            activities.tool,
            activities.mcp_list,
            activities.mcp_session,
            activities.mcp_sample,
            tasks.attempt,
        ]
        if role == "activities":
            served: dict[str, Any] = {"activities": remote}
        else:
            served = {
                "workflows": [
                    InteractionWorkflow,
                    ToolCallWorkflow,
                    BackgroundTaskWorkflow,
                    SessionWorkflow,
                ],
                # the run's settings are recorded by a local activity: on workflow workers
                "activities": [
                    *(remote if role == "all" else []),
                    activities.record_digest,
                ],
                # A non-determinism error (e.g. code changed under a running Interaction)
                # fails the workflow instead of retrying its task forever. Set on the
                # worker, not on the workflow classes, so a Replayer still reports it.
                "workflow_failure_exception_types": [NondeterminismError],
                "sticky_queue_schedule_to_start_timeout": sticky_queue_schedule_to_start_timeout,
                "no_remote_activities": role == "workflows",
            }
        self.worker = Worker(
            self.client,
            task_queue=task_queue,
            interceptors=[RegistryInterceptor(self.registry), *interceptors],
            **served,
            **{
                # streamed model text reaches hosts as heartbeat details: send them often
                # (periodic heartbeats stay at a third of the heartbeat timeout)
                "max_heartbeat_throttle_interval": timedelta(milliseconds=500),
                **worker_options,
            },
        )
        self.loop_watch = LoopWatch()
        """Warns in the log when the event loop runs late (see `scope_temporal.loop_watch`)."""
        self._adopter = (
            None
            if adopt_queue is None or role == "workflows"
            else Worker(self.client, task_queue=adopt_queue, activities=[tasks.attempt])
        )
        self._session_worker = (
            None
            if session_queue is None
            else Worker(
                self.client,
                task_queue=session_queue,
                activities=[activities.tool, activities.mcp_close],
                max_heartbeat_throttle_interval=timedelta(milliseconds=500),
            )
        )
        self.tool_queues = routed_tools(definitions, task_queue)
        """The other task queues this worker's Definitions route tools to: queue -> tools."""
        self.warnings: list[str] = []
        """What the worker found wrong when it started (e.g. a tool queue nobody serves);
        each is logged too."""

    @property
    def observer_failures(self) -> list[ObserverFailure]:
        """The latest exceptions raised by observers, with tracebacks (they never changed
        a settlement); at most `observers.MAX_KEPT_FAILURES`."""
        return self._observers.failures

    @property
    def observer_failure_counts(self) -> dict[str, int]:
        """Every observer failure so far, counted per callback (`"Observer.event"`)."""
        return dict(self._observers.failure_counts)

    @property
    def _workers(self) -> list[Worker]:
        others = (self._adopter, self._session_worker)
        return [self.worker, *(w for w in others if w is not None)]

    async def run(self) -> None:
        """Serve until cancelled or `shutdown()`.

        Raises:
            ConfigurationError: the server is older than the SDK supports
                (`scope_temporal.server_version`); nothing was served.
        """
        await ensure_supported_server(self.client)
        self.loop_watch.start()
        try:
            await asyncio.gather(*(w.run() for w in self._workers))
        finally:
            await self.loop_watch.stop()
            await self.mcp.aclose()

    async def shutdown(self) -> None:
        await asyncio.gather(*(w.shutdown() for w in self._workers))

    async def __aenter__(self) -> ScopeWorker:
        await ensure_supported_server(self.client)  # before any poll: a clear refusal
        for worker in self._workers:
            await worker.__aenter__()
        await self._check_tool_queues()
        self.loop_watch.start()
        return self

    async def _check_tool_queues(self) -> None:
        """Warn about the tool queues nobody serves (a worker that runs Interactions)."""
        if self.role == "activities" or not self.tool_queues:
            return
        for queue, tools in (await unserved_queues(self.client, self.tool_queues)).items():
            warning = unserved_warning(queue, tools)
            self.warnings.append(warning)
            _log.warning(warning)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.loop_watch.stop()
        for worker in reversed(self._workers):
            await worker.__aexit__(exc_type, exc, tb)
        await self.mcp.aclose()


def _check_bindings(
    definitions: list[Definition],
    tools: ToolRegistry,
    models: Mapping[str, Model],
    reducers: Mapping[str, ContextReducer],
) -> None:
    names = {d.name for d in definitions}
    problems: list[str] = []
    for definition in definitions:
        for spec in definition.tools.tools + definition.tools.deferred:
            registered = tools.get(spec.name)
            if registered is None:
                problems.append(
                    f"{definition.name!r} binds tool {spec.name!r}: pass it in tools=[...]"
                )
            elif registered.spec.permission != spec.permission:
                # the Definition's declaration decides admission and scheduling; the body
                # that runs must not hold another permission than the one it declared
                problems.append(
                    f"{definition.name!r} declares tool {spec.name!r} with permission "
                    f"{spec.permission!r}, but the tool registered under that name has "
                    f"{registered.spec.permission!r}: register the tool the Definition binds"
                )
        for model in definition.models:  # its fallback models too
            if model not in models:
                problems.append(
                    f"{definition.name!r} uses model {model!r}: pass it in models={{...}}"
                )
        if definition.context_reducer and definition.context_reducer not in reducers:
            problems.append(
                f"{definition.name!r} uses reducer {definition.context_reducer!r}: "
                "pass it in reducers={...}"
            )
        for delegate in definition.delegates:
            if delegate.definition not in names:
                problems.append(
                    f"{definition.name!r} delegates to {delegate.definition!r}: "
                    "pass that Definition too"
                )
    if problems:
        raise DefinitionError(
            "The worker cannot serve these Definitions:\n  " + "\n  ".join(problems)
        )


__all__ = ["ScopeWorker", "WorkerRole"]

"""Tracing and metrics (issue 14 item 2), against the dev server.

One Interaction exercises every kind of process (ToolCall children, a delegate, a
background task) and both kinds of unknown (a model call and a tool call, settled by the
host). The spans land in the OpenTelemetry SDK's `InMemorySpanExporter` (one trace, the
expected tree, GenAI attributes, no span twice); the metrics go through Temporal's runtime
(a `MetricBuffer` drained by `MetricsExporter`) into an `InMemoryMetricReader`. Replays —
of the finished histories, and of every workflow task on a worker without a cache — add
no span and count nothing again.
"""

from __future__ import annotations

import tempfile
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.common import MetricAttributes
from temporalio.contrib.opentelemetry import MetricsExporter, OpenTelemetryPlugin
from temporalio.runtime import BufferedMetric, MetricBuffer, Runtime, TelemetryConfig
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from scope_temporal import (
    Definition,
    Delegate,
    HostFailure,
    InteractionHandle,
    LocalFileMaterializer,
    Response,
    ScopeClient,
    ScopeWorker,
    ScriptedModel,
    ToolResult,
    Usage,
    background_tool,
    configure_tracing,
    reply,
    settle_model_result,
    settle_tool_result,
    tool,
)
from scope_temporal.interaction.snapshot import TreeSnapshot, UnknownEffect
from scope_temporal.registry import Registry
from scope_temporal.telemetry import workflow_counters
from scope_temporal.telemetry.spans import SpansInterceptor
from scope_temporal.workflows.background_task import BackgroundTaskWorkflow
from scope_temporal.workflows.interaction import InteractionWorkflow
from scope_temporal.workflows.serving import RegistryInterceptor
from scope_temporal.workflows.tool_call import ToolCallWorkflow
from tests.live.background_tools import Job as NotifyingJob
from tests.live.harness import STARTED_IDS, eventually


class Started(SpanProcessor):
    """Counts the spans started (a replay starts spans; it must never end one)."""

    count = 0

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        Started.count += 1


SPANS = InMemorySpanExporter()
# the process's global provider, replay-safe
configure_tracing(SPANS, batch=False).add_span_processor(Started())


@tool(permission="read")
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


@tool(permission="read")
def flaky() -> str:
    """Fail in a way nobody can explain."""
    raise HostFailure("the gateway did not answer")


def used(response: Response) -> Response:
    return response.model_copy(update={"usage": Usage(input_tokens=100, output_tokens=10)})


def definitions(suffix: str) -> list[Definition]:
    helper = Definition(f"otel-helper{suffix}", model="helper", tools=[lookup])
    root = Definition(
        f"otel-root{suffix}",
        tools=[lookup, flaky, Job],
        delegates=[Delegate("helper", "Ask the helper", helper.name)],
        max_concurrent_tool_calls=2,
    )
    return [root, helper]


Job = background_tool(
    name="job",
    permission="read",
    execution="parallel",
    foreground_timeout=0.5,
    heartbeat_timeout=2,
    notify=False,
)(type(NotifyingJob.impl))
"""The live tests' job, without lifecycle notifications: the scripted model has exactly
the turns the test counts (a notification arriving before the last reply would add one,
and the script has none left)."""


def models() -> dict[str, ScriptedModel]:
    return {
        "default": ScriptedModel(
            [
                ConnectionError("socket closed"),  # unknown: the host settles it
                used(reply.tool_calls(("helper", {"task": "summarise"}))),
                used(reply.tool_calls(("job", {"steps": 1, "run_in_background": True}))),
                used(reply.text("done")),
            ]
        ),
        "helper": ScriptedModel(
            [used(reply.tool_calls(("lookup", {"q": "b"}))), used(reply.text("helped"))]
        ),
    }


class Exporter(MetricsExporter):
    """`MetricsExporter`, telling metrics and attribute sets apart by value.

    The stock one (temporalio 1.35) caches instruments and converted attributes by `id()`
    of the buffer's objects. Temporal frees some of those objects (attribute sets passed
    to `add`, metrics of a worker that stopped) and Python reuses their ids for new ones,
    whose values then land under a stale name or stale attributes (seen here: points
    missing, or filed without their attributes). See docs/observability.md.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._by_name: dict[str, Any] = {}

    def _get_or_create_instrument(self, metric: BufferedMetric) -> Any:
        found = self._by_name.get(metric.name)
        if found is None:
            self._instruments.pop(id(metric), None)  # never a stale one
            found = self._by_name[metric.name] = super()._get_or_create_instrument(metric)
        return found

    def _get_or_create_attributes(
        self, attributes: MetricAttributes
    ) -> Mapping[str, str | int | float | bool]:
        return dict(attributes)


@asynccontextmanager
async def metered(env: WorkflowEnvironment) -> AsyncIterator[tuple[Client, InMemoryMetricReader]]:
    """A client whose Temporal runtime sends metrics to an in-memory OTel reader."""
    buffer = MetricBuffer(10_000)
    runtime = Runtime(telemetry=TelemetryConfig(metrics=buffer))
    reader = InMemoryMetricReader()
    exporter = Exporter(
        buffer, MeterProvider(metric_readers=[reader]), poll_interval=timedelta(milliseconds=100)
    )
    async with exporter:
        client = await Client.connect(env.client.service_client.config.target_host, runtime=runtime)
        yield client, reader


async def run_everything(
    client: Client, suffix: str, *, swap_workers: bool = False
) -> tuple[str, TreeSnapshot]:
    """Run the Interaction of the module docstring to its end (its background task too).

    `swap_workers`: once the run holds its first unknown, stop its worker and serve the
    rest from a new one (whose cache has never seen the run).
    """
    task_queue = f"tq-otel-{uuid.uuid4().hex[:8]}"
    serving = models()

    def worker(**options: Any) -> ScopeWorker:
        return ScopeWorker(
            client,
            task_queue=task_queue,
            definitions=[*definitions(suffix), Definition("otel-other", model="other")],
            tools=[lookup, flaky, Job],
            models={**serving, "other": ScriptedModel([reply.text("other")])},
            materializer=LocalFileMaterializer(tempfile.mkdtemp(prefix="tasks-")),
            tracing=True,
            metrics=True,
            **options,
        )

    scope = ScopeClient(client, task_queue=task_queue, tracing=True)
    # One cached run at most: the other Interaction pushes the waiting run out of the first
    # worker's cache before it stops (stopping a worker that holds traced runs in its cache
    # upsets CPython 3.11 later in the process: "AST constructor recursion depth mismatch").
    async with worker(max_cached_workflows=1 if swap_workers else 1000):
        handle = await scope.start(f"otel-root{suffix}", "go")
        STARTED_IDS.append(handle.id)
        model_unknown = await unknown_of(handle, handle.id)
        if not swap_workers:
            return await finish(client, handle, model_unknown)
        await (await scope.start("otel-other", "go")).result()
    async with worker():
        return await finish(client, handle, model_unknown)


_RETRIED_TASK = (
    EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
    EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
)


async def assert_no_span_twice(client: Client, spans: Iterable[ReadableSpan]) -> None:
    """No span is exported twice, except one ended in a workflow task that then timed out
    or failed (a worker too slow under load): the task runs again and ends the same span
    (same id) again; a collector deduplicates it by span id. Such a task is in the
    workflow's history, so the exception is checked, never assumed."""
    spans = list(spans)
    twice = {k for k, n in Counter(s.context.span_id for s in spans).items() if n > 1}
    for span in spans:
        if span.context.span_id in twice:
            attributes = span.attributes or {}
            process = attributes.get("scope.process_id") or attributes.get("temporalWorkflowID")
            assert process, f"span {span.name!r} {dict(attributes)} exported twice"
            history = await client.get_workflow_handle(str(process)).fetch_history()
            retried = [e for e in history.events if e.event_type in _RETRIED_TASK]
            assert retried, f"span {span.name!r} exported twice without a retried workflow task"


async def unknown_of(handle: InteractionHandle, process_id: str) -> UnknownEffect:
    snap = await eventually(
        handle.snapshot, lambda s: any(u.process_id == process_id for u in s.unknown_effects)
    )
    return next(u for u in snap.unknown_effects if u.process_id == process_id)


async def finish(
    client: Client, handle: InteractionHandle, model_unknown: UnknownEffect
) -> tuple[str, TreeSnapshot]:
    """Settle both unknowns; wait for the Interaction and its background task to end."""
    settled = used(reply.tool_calls(("lookup", {"q": "a"}), ("flaky", {})))
    await handle.resolve(
        model_unknown,
        settle_model_result(model_unknown.request, settled, model_unknown.request.messages),
    )
    tool_unknown = await unknown_of(handle, f"{handle.id}/tool/1/1")
    result = ToolResult(call_id=tool_unknown.request.call.id, name="flaky", content="ok")
    await handle.resolve(
        tool_unknown, settle_tool_result(tool_unknown.request, result, "succeeded")
    )
    out = await handle.result()
    assert out.text == "done"
    tree = await handle.snapshot()
    [task] = tree.tasks
    await client.get_workflow_handle(task.task_id).result()
    return handle.id, tree


# --- spans ------------------------------------------------------------------------------


def ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[str]:
    names: list[str] = []
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        above = by_id[parent.span_id]
        names.append(above.name)
        parent = above.parent
    return names


def of_run(spans: Iterable[ReadableSpan], root_id: str) -> list[ReadableSpan]:
    """The spans of the Interaction's own execution: ours, and Temporal's for its
    workflows and activities (not a host's queries, updates and signals: their trace is
    the host's); one per span id, as a collector keeps them (see `assert_no_span_twice`)."""
    mine: list[ReadableSpan] = []
    seen: set[int] = set()
    for span in spans:
        if span.context.span_id in seen:
            continue
        seen.add(span.context.span_id)
        attributes = span.attributes or {}
        owner = str(attributes.get("scope.process_id") or attributes.get("temporalWorkflowID", ""))
        host_side = span.name.startswith(("Handle", "Validate", "Query", "StartWorkflowUpdate"))
        if owner.startswith(root_id) and not host_side:
            mine.append(span)
    return mine


async def test_one_trace_per_interaction_with_genai_spans_and_no_duplicates(
    temporal_env: WorkflowEnvironment,
) -> None:
    async with metered(temporal_env) as (client, reader):
        root_id, _ = await run_everything(client, "")
        everything = await eventually(
            finished, lambda spans: any(s.name == "background_task job" for s in spans)
        )
        spans = of_run(everything, root_id)
        await assert_no_span_twice(client, everything)
        assert len({s.context.trace_id for s in spans}) == 1, "one trace for the whole tree"
        by_id = {s.context.span_id: s for s in everything}
        assert Counter(s.name for s in spans) == {
            "invoke_agent otel-root": 1,
            "invoke_agent otel-helper": 1,
            "chat default": 4,
            "chat helper": 2,
            "execute_tool lookup": 2,  # one in the root's ToolCall child, one in the helper's
            "execute_tool flaky": 1,
            "execute_tool job": 1,
            "background_task job": 1,
        }
        # the Interaction opened the trace; every span hangs from its process's agent
        parents = {s.name: ancestors(s, by_id) for s in spans if s.name != "chat helper"}
        assert parents["invoke_agent otel-root"] == []
        for name in ("chat default", "execute_tool flaky", "execute_tool job"):
            assert parents[name] == ["invoke_agent otel-root"], name
        assert parents["invoke_agent otel-helper"] == ["invoke_agent otel-root"]
        assert parents["background_task job"] == ["invoke_agent otel-root"]
        for span in spans:
            if span.name == "chat helper":
                assert ancestors(span, by_id) == [
                    "invoke_agent otel-helper",
                    "invoke_agent otel-root",
                ]

        chats = [s.attributes or {} for s in spans if s.name.startswith("chat")]
        assert Counter(a["scope.outcome"] for a in chats) == {"succeeded": 5, "unknown": 1}
        for attributes in chats:
            assert attributes["gen_ai.operation.name"] == "chat"
            assert attributes["gen_ai.request.model"] in ("default", "helper")
            if attributes["scope.outcome"] == "succeeded":
                assert attributes["gen_ai.usage.input_tokens"] == 100
                assert attributes["gen_ai.usage.output_tokens"] == 10
            else:
                assert attributes["error.type"] == "unknown"
        tools = {
            s.name: s.attributes or {} for s in spans if "_tool " in s.name or "task" in s.name
        }
        assert tools["execute_tool flaky"]["scope.outcome"] == "unknown"
        assert tools["execute_tool job"]["scope.outcome"] == "backgrounded"
        assert tools["execute_tool lookup"]["gen_ai.tool.name"] == "lookup"
        assert str(tools["execute_tool lookup"]["gen_ai.tool.call.id"])
        assert tools["background_task job"]["scope.outcome"] == "completed"
        agent = next(s for s in spans if s.name == "invoke_agent otel-root")
        assert (agent.attributes or {})["scope.outcome"] == "completed"
        assert (agent.attributes or {})["gen_ai.agent.name"] == "otel-root"

        await assert_metrics(reader, "")

        # Replaying the finished histories (with tracing on) records no span at all.
        before, started = len(SPANS.get_finished_spans()), Started.count
        replayer = Replayer(
            workflows=[InteractionWorkflow, ToolCallWorkflow, BackgroundTaskWorkflow],
            plugins=[OpenTelemetryPlugin()],
            interceptors=[RegistryInterceptor(Registry(definitions(""))), SpansInterceptor({})],
            data_converter=ScopeClient(client).client.data_converter,
        )
        workflow_ids = {str((s.attributes or {})["scope.process_id"]) for s in spans}
        for workflow_id in sorted(workflow_ids):
            history = await client.get_workflow_handle(workflow_id).fetch_history()
            await replayer.replay_workflow(history)
        assert len(workflow_ids) == 7  # root, 3 ToolCalls, delegate and its ToolCall, task
        assert Started.count > started  # the replays ran traced...
        assert len(SPANS.get_finished_spans()) == before  # ...and ended no span


async def test_a_run_replayed_on_another_worker_records_each_span_and_count_once(
    temporal_env: WorkflowEnvironment,
) -> None:
    """With Temporal's own spans too (the client's plugin is kept): the worker that started
    the run stops while the run waits for the host; a fresh worker replays the root's
    history and takes it to its end."""
    async with metered(temporal_env) as (client, reader):
        config = client.config()
        config["plugins"] = [OpenTelemetryPlugin(add_temporal_spans=True)]
        root_id, _ = await run_everything(Client(**config), "-moved", swap_workers=True)
        everything = await eventually(
            finished,
            lambda spans: any(
                s.name == "background_task job"
                and str((s.attributes or {}).get("scope.process_id")).startswith(root_id)
                for s in spans
            ),
        )
        spans = of_run(everything, root_id)
        await assert_no_span_twice(client, everything)
        assert len({s.context.trace_id for s in spans}) == 1
        [start] = [s for s in spans if s.parent is None]
        assert start.name == "StartWorkflow:scope.Interaction"  # the client opened the trace
        by_id = {s.context.span_id: s for s in everything}
        for span in spans:
            above = ancestors(span, by_id)
            if span.name.startswith("chat"):
                assert above[0] == "RunActivity:scope.model"
            if span.name.startswith("execute_tool"):
                assert above[:3] == [
                    "RunActivity:scope.tool",
                    "StartActivity:scope.tool",
                    "RunWorkflow:scope.ToolCall",
                ], above
        named = Counter(s.name for s in spans)
        assert named["invoke_agent otel-root-moved"] == 1  # begun on one worker, ended on the other
        assert named["RunWorkflow:scope.Interaction"] == 2  # root and delegate
        assert named["RunWorkflow:scope.ToolCall"] == 4
        assert named["RunWorkflow:scope.BackgroundTask"] == 1
        assert named["StartActivity:scope.model"] == 6
        assert named["chat default"] == 4
        await assert_metrics(reader, "-moved")


async def finished() -> list[ReadableSpan]:
    return list(SPANS.get_finished_spans())


# --- metrics ----------------------------------------------------------------------------


def points(reader: InMemoryMetricReader, name: str) -> dict[frozenset[tuple[str, str]], float]:
    """Values (sums, or a histogram's count) of metric `name`, by our attributes."""
    ours = {"definition", "model", "outcome", "token_type", "tool", "kind", "disposition"}
    found: dict[frozenset[tuple[str, str]], float] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != name:
                    continue
                for point in metric.data.data_points:
                    key = frozenset(
                        (k, str(v)) for k, v in (point.attributes or {}).items() if k in ours
                    )
                    value = getattr(point, "value", None)
                    found[key] = float(point.count if value is None else value)
    return found


def labels(**attributes: str) -> frozenset[tuple[str, str]]:
    return frozenset(attributes.items())


def expected_metrics(suffix: str) -> dict[str, dict[frozenset[tuple[str, str]], float]]:
    root, helper = f"otel-root{suffix}", f"otel-helper{suffix}"
    return {
        "scope_unknowns_opened": {
            labels(definition=root, kind="model"): 1,
            labels(definition=root, kind="tool"): 1,
        },
        "scope_unknowns_settled": {
            labels(definition=root, kind="model", disposition="succeeded"): 1,
            labels(definition=root, kind="tool", disposition="succeeded"): 1,
        },
        "scope_model_calls": {
            labels(definition=root, model="default", outcome="unknown"): 1,
            labels(definition=root, model="default", outcome="succeeded"): 3,
            labels(definition=helper, model="helper", outcome="succeeded"): 2,
        },
        "scope_model_tokens": {
            labels(definition=root, model="default", token_type="input"): 300,
            labels(definition=root, model="default", token_type="output"): 30,
            labels(definition=helper, model="helper", token_type="input"): 200,
            labels(definition=helper, model="helper", token_type="output"): 20,
        },
        "scope_model_latency": {  # a histogram: the number of calls timed
            labels(definition=root, model="default", outcome="unknown"): 1,
            labels(definition=root, model="default", outcome="succeeded"): 3,
            labels(definition=helper, model="helper", outcome="succeeded"): 2,
        },
        "scope_tool_calls": {
            labels(definition=root, tool="lookup", outcome="succeeded"): 1,
            labels(definition=root, tool="flaky", outcome="unknown"): 1,
            labels(definition=root, tool="job", outcome="backgrounded"): 1,
            labels(definition=helper, tool="lookup", outcome="succeeded"): 1,
        },
    }


async def assert_metrics(reader: InMemoryMetricReader, suffix: str) -> None:
    """Every scope_* point of this run's Definitions has its expected value (the exporter
    drains the buffer every 100 ms: poll until it has all of them)."""
    expected = expected_metrics(suffix)
    definitions = {f"otel-root{suffix}", f"otel-helper{suffix}"}

    async def seen() -> dict[str, dict[frozenset[tuple[str, str]], float]]:
        return {
            name: {
                key: value
                for key, value in points(reader, name).items()
                if dict(key).get("definition") in definitions
            }
            for name in expected
        }

    try:
        await eventually(seen, lambda found: found == expected, timeout=10)
    except AssertionError:
        found = await seen()
        assert found == expected, {
            name: (found[name], points)
            for name, points in expected.items()
            if found[name] != points
        }


# --- off, and on twice -------------------------------------------------------------------


def installed(worker: ScopeWorker) -> list[str]:
    """The telemetry interceptor and plugin types a ScopeWorker's Temporal worker runs with
    (not the test environment's own, nor the RegistryInterceptor every worker has)."""
    config = worker.worker.config(active_config=True)
    client = worker.client.config(active_config=True)
    things = [*config["interceptors"], *client["interceptors"], *client["plugins"]]
    names = (type(t).__name__ for t in things)
    return sorted(n for n in names if not n.startswith("_") and n != "RegistryInterceptor")


async def test_off_by_default_nothing_is_installed(temporal_env: WorkflowEnvironment) -> None:
    worker = ScopeWorker(temporal_env.client, task_queue="tq-otel-off", definitions=[], models={})
    assert installed(worker) == []
    assert "tq-otel-off" not in workflow_counters._COUNTING
    assert ScopeClient(temporal_env.client).client.config()["plugins"] == []
    traced = ScopeClient(temporal_env.client, tracing=True).client.config()["plugins"]
    assert [type(p).__name__ for p in traced] == ["OpenTelemetryPlugin"]


async def test_tracing_keeps_a_plugin_the_client_has_and_adds_ours_once(
    temporal_env: WorkflowEnvironment,
) -> None:
    config = temporal_env.client.config()
    config["plugins"] = [OpenTelemetryPlugin()]  # the user's own, without Temporal's spans
    traced = Client(**config)
    worker = ScopeWorker(
        traced, task_queue="tq-otel-own", definitions=[], models={}, tracing=True, metrics=True
    )
    assert installed(worker) == [
        "MetricsInterceptor",
        "OpenTelemetryInterceptor",
        "OpenTelemetryPlugin",
        "SpansInterceptor",
    ]
    assert "tq-otel-own" in workflow_counters._COUNTING
    ours = ScopeWorker(
        temporal_env.client, task_queue="tq-otel-ours", definitions=[], models={}, tracing=True
    )
    assert installed(ours).count("OpenTelemetryPlugin") == 1
    workflow_counters.count_on("tq-otel-own", False)

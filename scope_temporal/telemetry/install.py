"""What `ScopeWorker(tracing=..., metrics=...)` adds to a worker: nothing when both are off."""

from __future__ import annotations

from collections.abc import Mapping

from temporalio.client import Client
from temporalio.runtime import Runtime
from temporalio.worker import Interceptor

from scope_temporal.models.protocol import Model
from scope_temporal.telemetry import workflow_counters
from scope_temporal.telemetry.metrics import MetricsInterceptor


def worker_telemetry(
    client: Client,
    *,
    task_queue: str,
    models: Mapping[str, Model],
    tracing: bool,
    metrics: bool,
) -> tuple[Client, list[Interceptor]]:
    """The client the worker should use and the interceptors to add (innermost last).

    Raises:
        ConfigurationError: tracing without OpenTelemetry or a replay-safe provider.
    """
    interceptors: list[Interceptor] = []
    if tracing:
        from scope_temporal.telemetry import spans
        from scope_temporal.telemetry import tracing as otel

        otel.require_replay_safe()
        client = otel.with_tracing(client)
        interceptors.append(spans.SpansInterceptor(models))
    if metrics:
        runtime = client.service_client.config.runtime or Runtime.default()
        interceptors.append(MetricsInterceptor(runtime.metric_meter, models))
    workflow_counters.count_on(task_queue, metrics)
    return client, interceptors

"""Turning tracing on: Temporal's `OpenTelemetryPlugin` on the client, a replay-safe global
tracer provider, and scope-temporal's spans (`spans`, `workflow_spans`) on the worker.

Imported only when tracing is asked for: OpenTelemetry is the optional extra
`scope-temporal[otel]`.
"""

from __future__ import annotations

from temporalio.client import Client

from scope_temporal.errors import ConfigurationError

try:
    from opentelemetry import trace
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import SpanProcessor
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SimpleSpanProcessor,
        SpanExporter,
    )
    from temporalio.contrib.opentelemetry import (
        OpenTelemetryInterceptor,
        OpenTelemetryPlugin,
        ReplaySafeTracerProvider,
        TracingInterceptor,
        create_tracer_provider,
    )
except ImportError as missing:  # pragma: no cover - depends on the install
    raise ConfigurationError(
        f"Tracing needs OpenTelemetry ({missing}): pip install 'scope-temporal[otel]'"
    ) from missing

_OTLP_MISSING = (
    "configure_tracing() without an exporter sends OTLP over HTTP, which needs "
    "opentelemetry-exporter-otlp-proto-http: pip install 'scope-temporal[otel]'"
)


def configure_tracing(
    exporter: SpanExporter | None = None,
    *,
    service_name: str | None = None,
    batch: bool = True,
) -> ReplaySafeTracerProvider:
    """Make a replay-safe tracer provider the process's global one, exporting to `exporter`.

    Call it once per process, before building a `ScopeWorker(tracing=True)` (which refuses
    any other global provider: a plain one would record a workflow's spans again on every
    replay). Calling it again adds another exporter to the same provider.

    Args:
        exporter: where spans go (e.g. `InMemorySpanExporter()` in tests). None: OTLP over
            HTTP, configured by the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (default
            `http://localhost:4318`) and `OTEL_EXPORTER_OTLP_TRACES_*` variables.
        service_name: the `service.name` resource attribute (default: `OTEL_SERVICE_NAME`,
            else OpenTelemetry's `unknown_service`). Only used by the first call.
        batch: export in the background in batches (production); False exports each span
            as it ends (tests, debugging).

    Returns:
        The global provider (`temporalio.contrib.opentelemetry.ReplaySafeTracerProvider`).

    Raises:
        ConfigurationError: another kind of global tracer provider is already set (OpenTelemetry
            allows setting it once per process), or the OTLP exporter is not installed.
    """
    if exporter is None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as missing:
            raise ConfigurationError(_OTLP_MISSING) from missing
        exporter = OTLPSpanExporter()
    processor: SpanProcessor = (
        BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    )
    provider = trace.get_tracer_provider()
    if not isinstance(provider, ReplaySafeTracerProvider):
        if not isinstance(provider, trace.ProxyTracerProvider):
            raise ConfigurationError(_not_replay_safe(provider))
        attributes = {SERVICE_NAME: service_name} if service_name else {}
        provider = create_tracer_provider(resource=Resource.create(attributes))
        trace.set_tracer_provider(provider)
    provider.add_span_processor(processor)
    return provider


def require_replay_safe() -> None:
    """Raise ConfigurationError unless the global tracer provider is replay-safe."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, ReplaySafeTracerProvider):
        raise ConfigurationError(_not_replay_safe(provider))


def with_tracing(client: Client) -> Client:
    """The same connection with Temporal's `OpenTelemetryPlugin()`, unless the client
    already traces (a plugin or interceptor of its own is kept as is).

    The plugin carries the trace context in every workflow, child, activity, signal and
    update header, so an Interaction's tree is one trace. Without Temporal's own spans:
    they are about 4 per model call and 7 per tool call, and cost about 10% of the
    worker's CPU on bench workload W; a client built with
    `OpenTelemetryPlugin(add_temporal_spans=True)` gets them (`StartWorkflow`,
    `RunWorkflow`, `StartActivity`, `RunActivity`...), ours hanging in between.
    """
    config = client.config()
    if any(isinstance(p, OpenTelemetryPlugin) for p in config["plugins"]) or any(
        isinstance(i, OpenTelemetryInterceptor | TracingInterceptor) for i in config["interceptors"]
    ):
        return client
    config["plugins"] = [*config["plugins"], OpenTelemetryPlugin()]
    return Client(**config)


def _not_replay_safe(provider: object) -> str:
    return (
        f"Tracing a worker needs a replay-safe global tracer provider, not "
        f"{type(provider).__name__}: call scope_temporal.configure_tracing(exporter) at "
        "startup (or opentelemetry.trace.set_tracer_provider(temporalio.contrib."
        "opentelemetry.create_tracer_provider()) before any other provider is set)."
    )

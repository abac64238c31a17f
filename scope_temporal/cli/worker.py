"""`scope-temporal worker`: serve an app's Definitions, tools and models on a task queue."""

from __future__ import annotations

import os

import click
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from scope_temporal.cli._app import App, app_option, load_app
from scope_temporal.cli._connect import Connection, connection_options, run_async, wait_for_stop
from scope_temporal.errors import ConfigurationError
from scope_temporal.storage import DirectoryStorage
from scope_temporal.versioning import pinned_deployment
from scope_temporal.worker import ScopeWorker, WorkerRole


@click.command(short_help="Serve agents (an app's Definitions, tools, models) on a task queue.")
@app_option(
    "Module exposing `definitions`, `tools` and `models` (or `build_models()`), and "
    "optionally `data_converter` [env SCOPE_APP; default: the reference app from the "
    "project root]."
)
@click.option(
    "--deployment",
    envvar="SCOPE_DEPLOYMENT",
    default=None,
    metavar="NAME",
    help="Worker Versioning: the Worker Deployment this worker belongs to; with "
    "--build-id, its Interactions stay pinned to this build [env SCOPE_DEPLOYMENT].",
)
@click.option(
    "--build-id",
    envvar="SCOPE_BUILD_ID",
    default=None,
    metavar="ID",
    help="Worker Versioning: the build this worker runs, e.g. a git commit [env SCOPE_BUILD_ID].",
)
@click.option(
    "--otel",
    is_flag=True,
    envvar="SCOPE_OTEL",
    help="Trace every agent run, model call and tool call (OpenTelemetry, one trace per "
    "Interaction), sent by OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (default "
    "http://localhost:4318) [env SCOPE_OTEL; needs scope-temporal[otel]].",
)
@click.option(
    "--metrics",
    "metrics_address",
    metavar="HOST:PORT",
    envvar="SCOPE_METRICS",
    default=None,
    help="Serve Prometheus metrics (Temporal's and scope_*) at http://HOST:PORT/metrics, "
    "e.g. 0.0.0.0:9464 [env SCOPE_METRICS].",
)
@click.option(
    "--role",
    type=click.Choice(["all", "workflows", "activities"]),
    envvar="SCOPE_WORKER_ROLE",
    default="all",
    show_default=True,
    help="What this worker runs: everything; only the workflows (Interactions, ToolCalls, "
    "background tasks); or only activities (model calls, tool bodies), e.g. a tool pool "
    "on the task queue its tools are routed to with @tool(task_queue=...) "
    "[env SCOPE_WORKER_ROLE].",
)
@connection_options
def worker(
    app_module: str | None,
    deployment: str | None,
    build_id: str | None,
    otel: bool,
    metrics_address: str | None,
    role: WorkerRole,
    connection: Connection,
) -> int:
    """Serve agents: run a worker for an app on a task queue until Ctrl-C.

    Start as many workers as you like on one task queue, on as many machines: Temporal
    spreads the model and tool calls among them. Split them by role if you like: workers
    that run only the workflows, pools that run only the model and tool calls, and a
    pool of its own for tools routed to another task queue (@tool(task_queue="gpu")).

    With --deployment and --build-id the worker joins that Worker Deployment Version:
    each Interaction runs to its end on the build that started it (pinned), and new ones
    start on the version you make current (see docs/deploy.md).

    \b
    Examples:
      scope-temporal worker                               # the reference app (ops, summarizer)
      scope-temporal worker --app myproject.agents        # your own app module
      TEMPORAL_ADDRESS=temporal.internal:7233 scope-temporal worker --task-queue agents
      scope-temporal worker --app myproject.agents --deployment agents --build-id 2f9c1e0
      scope-temporal worker --otel --metrics 0.0.0.0:9464 # traces by OTLP, Prometheus
      scope-temporal worker --role activities --task-queue gpu   # a pool for routed tools
    """
    try:
        pinned_deployment(deployment, build_id)
    except ConfigurationError as error:
        raise click.UsageError(error.message) from None
    app = load_app(app_module)
    runtime = None if metrics_address is None else prometheus_runtime(metrics_address)
    if otel:
        start_tracing()
    connection = connection.with_converter(app.data_converter)
    return run_async(
        serve(
            app,
            connection,
            deployment=deployment,
            build_id=build_id,
            runtime=runtime,
            tracing=otel,
            role=role,
        )
    )


async def serve(
    app: App,
    connection: Connection,
    *,
    deployment: str | None = None,
    build_id: str | None = None,
    runtime: Runtime | None = None,
    tracing: bool = False,
    role: WorkerRole = "all",
) -> int:
    """Serve `app` until stopped; with `runtime` (see `prometheus_runtime`), with metrics."""
    client = await connection.client(runtime=runtime)
    scope_worker = ScopeWorker(
        client,
        task_queue=connection.task_queue,
        definitions=app.definitions,
        tools=app.tools,
        models=app.models,
        mcp_servers=app.mcp_servers,
        deployment=deployment,
        build_id=build_id,
        tracing=tracing,
        metrics=runtime is not None,
        role=role,
    )
    async with scope_worker:
        names = ", ".join(d.name for d in app.definitions)
        runs = "" if role == "all" else f" ({role} only)"
        click.echo(
            f"worker serving {names} from {app.module} on task queue "
            f"{connection.task_queue!r}{runs} at {connection.address} "
            f"(namespace {connection.namespace})"
        )
        for queue, tools in scope_worker.tool_queues.items():
            click.echo(f"  tools on task queue {queue!r}: {', '.join(tools)}")
        for warning in scope_worker.warnings:
            click.echo(f"warning: {warning}", err=True)
        for line in app.model_lines():
            click.echo(f"  model {line}")
        click.echo(f"  payloads over 256 KiB: {_storage_line(scope_worker)}")
        if deployment is not None:
            click.echo(
                f"  build {build_id!r} of deployment {deployment!r} (Interactions pinned); "
                "it takes new Interactions once current: temporal worker deployment "
                f"set-current-version --deployment-name {deployment} --build-id {build_id}"
            )
        if tracing:
            click.echo(f"  tracing: OTLP/HTTP to {_otlp_traces_endpoint()}")
        if runtime is not None:
            click.echo("  metrics: Prometheus, scope_* and Temporal's own")
        click.echo("ready; Ctrl-C to stop")
        await wait_for_stop()
        click.echo("stopping the worker…")
    click.echo("worker stopped")
    return 0


def _storage_line(scope_worker: ScopeWorker) -> str:
    external = scope_worker.client.data_converter.external_storage
    if external is None:
        return "kept in history (--storage none)"
    where = ", ".join(
        str(driver.root) if isinstance(driver, DirectoryStorage) else driver.name()
        for driver in external.drivers
    )
    return f"offloaded to {where}"


def prometheus_runtime(address: str) -> Runtime:
    """A Temporal runtime serving Prometheus metrics at `http://<address>/metrics`.

    Raises:
        click.BadParameter: `address` is not HOST:PORT, or cannot be bound.
    """
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise click.BadParameter(
            f"{address!r} is not HOST:PORT (e.g. 0.0.0.0:9464)", param_hint="--metrics"
        )
    try:
        return Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address=address)))
    except Exception as error:  # the core refuses the address (in use, not local...)
        raise click.BadParameter(
            f"cannot serve metrics at {address}: {error}", param_hint="--metrics"
        ) from None


def start_tracing() -> None:
    """Make spans go by OTLP/HTTP, as the standard OTEL_* variables configure it.

    Raises:
        click.ClickException: OpenTelemetry (the `otel` extra) is not installed.
    """
    try:
        from scope_temporal.telemetry.tracing import configure_tracing

        configure_tracing()
    except ConfigurationError as error:
        raise click.ClickException(error.message) from None


def _otlp_traces_endpoint() -> str:
    return os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or (
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318").rstrip("/")
        + "/v1/traces"
    )

"""`scope-temporal worker`: serve an app's Definitions, tools and models on a task queue."""

from __future__ import annotations

import click

from scope_temporal.cli._app import App, app_option, load_app
from scope_temporal.cli._connect import Connection, connection_options, run_async, wait_for_stop
from scope_temporal.errors import ConfigurationError
from scope_temporal.versioning import pinned_deployment
from scope_temporal.worker import ScopeWorker


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
@connection_options
def worker(
    app_module: str | None,
    deployment: str | None,
    build_id: str | None,
    connection: Connection,
) -> int:
    """Serve agents: run a worker for an app on a task queue until Ctrl-C.

    Start as many workers as you like on one task queue, on as many machines: Temporal
    spreads the model and tool calls among them.

    With --deployment and --build-id the worker joins that Worker Deployment Version:
    each Interaction runs to its end on the build that started it (pinned), and new ones
    start on the version you make current (see docs/deploy.md).

    \b
    Examples:
      scope-temporal worker                               # the reference app (ops, summarizer)
      scope-temporal worker --app myproject.agents        # your own app module
      TEMPORAL_ADDRESS=temporal.internal:7233 scope-temporal worker --task-queue agents
      scope-temporal worker --app myproject.agents --deployment agents --build-id 2f9c1e0
    """
    try:
        pinned_deployment(deployment, build_id)
    except ConfigurationError as error:
        raise click.UsageError(error.message) from None
    app = load_app(app_module)
    connection = connection.with_converter(app.data_converter)
    return run_async(serve(app, connection, deployment=deployment, build_id=build_id))


async def serve(
    app: App,
    connection: Connection,
    *,
    deployment: str | None = None,
    build_id: str | None = None,
) -> int:
    client = await connection.client()
    scope_worker = ScopeWorker(
        client,
        task_queue=connection.task_queue,
        definitions=app.definitions,
        tools=app.tools,
        models=app.models,
        deployment=deployment,
        build_id=build_id,
    )
    async with scope_worker:
        names = ", ".join(d.name for d in app.definitions)
        click.echo(
            f"worker serving {names} from {app.module} on task queue "
            f"{connection.task_queue!r} at {connection.address} "
            f"(namespace {connection.namespace})"
        )
        for line in app.model_lines():
            click.echo(f"  model {line}")
        if deployment is not None:
            click.echo(
                f"  build {build_id!r} of deployment {deployment!r} (Interactions pinned); "
                "it takes new Interactions once current: temporal worker deployment "
                f"set-current-version --deployment-name {deployment} --build-id {build_id}"
            )
        click.echo("ready; Ctrl-C to stop")
        await wait_for_stop()
        click.echo("stopping the worker…")
    click.echo("worker stopped")
    return 0

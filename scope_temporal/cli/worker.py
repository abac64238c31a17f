"""`scope-temporal worker`: serve an app's Definitions, tools and models on a task queue."""

from __future__ import annotations

import click

from scope_temporal.cli._app import App, load_app
from scope_temporal.cli._connect import Connection, connection_options, run_async, wait_for_stop
from scope_temporal.worker import ScopeWorker


@click.command(short_help="Serve agents (an app's Definitions, tools, models) on a task queue.")
@click.option(
    "--app",
    "app_module",
    metavar="PACKAGE.MODULE",
    envvar="SCOPE_APP",
    default=None,
    help="Module exposing `definitions`, `tools` and `models` (or `build_models()`), and "
    "optionally `data_converter` [env SCOPE_APP; default: the reference app from the "
    "project root].",
)
@connection_options
def worker(app_module: str | None, connection: Connection) -> int:
    """Serve agents: run a worker for an app on a task queue until Ctrl-C.

    Start as many workers as you like on one task queue, on as many machines: Temporal
    spreads the model and tool calls among them.

    \b
    Examples:
      scope-temporal worker                               # the reference app (ops, summarizer)
      scope-temporal worker --app myproject.agents        # your own app module
      TEMPORAL_ADDRESS=temporal.internal:7233 scope-temporal worker --task-queue agents
    """
    app = load_app(app_module)
    return run_async(serve(app, connection.with_converter(app.data_converter)))


async def serve(app: App, connection: Connection) -> int:
    client = await connection.client()
    scope_worker = ScopeWorker(
        client,
        task_queue=connection.task_queue,
        definitions=app.definitions,
        tools=app.tools,
        models=app.models,
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
        click.echo("ready; Ctrl-C to stop")
        await wait_for_stop()
        click.echo("stopping the worker…")
    click.echo("worker stopped")
    return 0

"""`scope-temporal replay-check`: replay recent histories against an app's current code and
Definitions; exit non-zero when any would diverge (what CI runs before a deploy)."""

from __future__ import annotations

import logging
from typing import assert_never

import click
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.service import RPCError

from scope_temporal.cli._app import App, app_option, load_app
from scope_temporal.cli._connect import Connection, run_async, server_options
from scope_temporal.cli._converter import DECODE_HINT
from scope_temporal.testing.replay_recent import ReplayedRun, RunSelection, find_runs, replay_run

DIVERGED = 1
"""Exit code: a run would diverge (or could not be checked) under this code."""
NOTHING_MATCHED = 3
"""Exit code: the selection matched no Interaction, so nothing was checked."""


@click.command("replay-check", short_help="Replay recent runs against your current code (CI).")
@app_option(
    "The app as `scope-temporal worker --app` loads it: its Definitions are replayed, its "
    "`data_converter` decodes payloads [env SCOPE_APP; default: the reference app]."
)
@click.option(
    "--definition",
    "definitions",
    multiple=True,
    metavar="NAME",
    help="Only Interactions of this Definition (repeatable; reads the ScopeDefinition "
    "search attribute).",
)
@click.option(
    "--task-queue",
    envvar="SCOPE_TASK_QUEUE",
    default=None,
    help="Only Interactions started on this task queue [env SCOPE_TASK_QUEUE; default: any].",
)
@click.option(
    "--running",
    is_flag=True,
    help="Only running workflows: those a deploy would make continue on the new code.",
)
@click.option(
    "--limit",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    metavar="N",
    help="The most recent this many Interactions (each with its whole tree).",
)
@click.option(
    "--query",
    default=None,
    metavar="VISIBILITY-QUERY",
    help="Extra filter on the Interactions, e.g. \"StartTime > '2026-01-01T00:00:00Z'\".",
)
@server_options
def replay_check(
    app_module: str | None,
    definitions: tuple[str, ...],
    task_queue: str | None,
    running: bool,
    limit: int,
    query: str | None,
    connection: Connection,
) -> int:
    """Replay recent Interactions against the app's current code and Definitions.

    Fetches the selected Interactions' histories, with their ToolCalls, delegates and
    background tasks, and replays each run as a new worker would continue it. One line per
    run: its id, type, status and whether it replays. A changed Definition (a changed
    completion validator included) shows as interaction.definition.changed; changed
    workflow code as Temporal's non-determinism error.

    A changed Definition diverges from every earlier run of it, finished ones included:
    pass --running to check only what the deploy would make continue.

    \b
    Exit codes:
      0  every run replays
      1  a run diverges (or could not be checked): deploying this code would fail it
      3  nothing matched the selection: nothing was checked

    \b
    Examples:
      scope-temporal replay-check --app myproject.agents --running
      scope-temporal replay-check --app myproject.agents --definition support --limit 50
      scope-temporal replay-check --query "StartTime > '2026-01-01T00:00:00Z'"
    """
    selection = RunSelection(
        definitions=definitions,
        task_queue=task_queue,
        running_only=running,
        limit=limit,
        query=query,
    )
    try:
        selection.roots_query()
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    app = load_app(app_module)
    return run_async(check(app, selection, connection.with_converter(app.data_converter)))


async def check(app: App, selection: RunSelection, connection: Connection) -> int:
    _quiet_replays()
    client = await connection.client()
    try:
        runs = await find_runs(client, selection)
    except RPCError as error:
        raise click.ClickException(
            f"the server refused the query {selection.roots_query()!r}: {error.message}. "
            "If it names ScopeDefinition, register the search attributes (docs/deploy.md); "
            "check the syntax of --query."
        ) from None
    if not runs:
        click.echo(_nothing_matched(selection, connection), err=True)
        return NOTHING_MATCHED
    names = ", ".join(d.name for d in app.definitions)
    click.echo(f"replaying {len(runs)} workflow run(s) against {app.module} ({names})")
    width = max(len(run.id) for run in runs)
    failed = 0
    for execution in runs:
        replayed = await replay_run(
            client, execution, app.definitions, data_converter=connection.data_converter
        )
        failed += not replayed.ok
        click.echo(_line(replayed, width))
    if failed:
        click.echo(
            f"{failed} of {len(runs)} run(s) would diverge under this code or could not "
            "be checked: deploying it could fail them. Keep the old code for them (Worker "
            "Versioning, or a new Definition name) or let them finish first; see "
            "docs/deploy.md.",
            err=True,
        )
        return DIVERGED
    click.echo(f"all {len(runs)} run(s) replay")
    return 0


def _line(run: ReplayedRun, width: int) -> str:
    kind = run.workflow_type + (f" ({run.definition})" if run.definition else "")
    if run.outcome == "replayed":
        outcome = "ok"
    elif run.outcome == "diverged":
        outcome = f"DIVERGED: {run.detail}"
    elif run.outcome == "undecodable":
        outcome = f"NOT CHECKED: {DECODE_HINT}"
    elif run.outcome == "timed_out":
        outcome = f"NOT CHECKED: {run.detail}"
    else:
        assert_never(run.outcome)
    return f"{run.workflow_id:<{width}}  {kind:<34}  {run.status:<16}  {outcome}"


def _quiet_replays() -> None:
    """Keep the replayer's own logs (a warning and a traceback per diverging run, from the
    SDK's core and its Python side) out of the report; each run's line says what failed."""
    logging.getLogger("temporalio").setLevel(logging.CRITICAL)
    quiet = TelemetryFilter(core_level="ERROR", other_level="ERROR")
    telemetry = TelemetryConfig(logging=LoggingConfig(filter=quiet))
    Runtime.set_default(Runtime(telemetry=telemetry), error_if_already_set=False)


def _nothing_matched(selection: RunSelection, connection: Connection) -> str:
    return (
        f"no Interaction matches {selection.roots_query()!r} in namespace "
        f"{connection.namespace!r} at {connection.address}; nothing was checked.\n"
        "  Check --address / --namespace, the --definition names (the ScopeDefinition "
        "search attribute is set only where it is registered), --task-queue (and "
        "SCOPE_TASK_QUEUE), --running and --query; `scope-temporal list` shows what the "
        "server has."
    )


__all__ = ["DIVERGED", "NOTHING_MATCHED", "check", "replay_check"]

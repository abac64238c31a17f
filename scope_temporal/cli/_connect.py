"""Connection options shared by every command that talks to Temporal, and the async runner.

The options read the same environment variables as Temporal's own CLI, so one set of
variables configures both: `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`,
`TEMPORAL_TLS_CERT` / `TEMPORAL_TLS_KEY` (mTLS), `TEMPORAL_TLS_CA`, `TEMPORAL_TLS`.
`SCOPE_TASK_QUEUE` picks the task queue the worker serves.
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.client import Client
from temporalio.converter import DataConverter, ExternalStorage, StorageDriver
from temporalio.runtime import Runtime
from temporalio.service import TLSConfig

from scope_temporal.cli._converter import DECODE_HINT, is_decode_failure, load_data_converter
from scope_temporal.cli._storage import STORAGE_OPTION, storage_driver
from scope_temporal.client import ScopeClient
from scope_temporal.converter import DEFAULT_OFFLOAD_THRESHOLD_BYTES
from scope_temporal.names import DEFAULT_TASK_QUEUE
from scope_temporal.routing import has_pollers

T = TypeVar("T")
P = ParamSpec("P")

DEFAULT_ADDRESS = "localhost:7233"


_connected = False


def connected() -> bool:
    """Whether this process has made a Temporal client (see `scope_temporal.cli.main`)."""
    return _connected


def note_connected() -> None:
    global _connected
    _connected = True


@dataclass(frozen=True)
class Connection:
    """Where the command connects: a Temporal frontend, a namespace, a task queue."""

    address: str
    namespace: str
    task_queue: str
    data_converter: DataConverter | None = None
    """The app's converter (its payload codec, failure converter); None: Temporal's."""
    storage: StorageDriver | None = None
    """Where payloads over 256 KiB go (`--storage`), unless the converter has a store."""

    def with_converter(self, converter: DataConverter | None) -> Connection:
        """This connection with `converter`, unless one was given on the command line."""
        if self.data_converter is not None or converter is None:
            return self
        return replace(self, data_converter=converter)

    async def client(self, *, timeout: float = 10.0, runtime: Runtime | None = None) -> Client:
        """A connected Temporal client (on `runtime`, e.g. one exporting metrics).

        Raises:
            click.ClickException: the server cannot be reached (with what to do about it).
        """
        note_connected()
        try:
            return await asyncio.wait_for(
                Client.connect(
                    self.address,
                    namespace=self.namespace,
                    data_converter=self._converter(),
                    runtime=runtime,
                    **tls_options(),
                ),
                timeout,
            )
        except (RuntimeError, OSError, TimeoutError) as error:
            raise click.ClickException(
                f"cannot reach Temporal at {self.address} (namespace {self.namespace}): "
                f"{error or 'timed out'}.\n  Start a local server with `scope-temporal dev`, "
                "or point --address / TEMPORAL_ADDRESS at your cluster."
            ) from None

    def _converter(self) -> DataConverter:
        converter = self.data_converter or DataConverter.default
        if self.storage is None or converter.external_storage is not None:
            return converter
        external = ExternalStorage(
            drivers=[self.storage], payload_size_threshold=DEFAULT_OFFLOAD_THRESHOLD_BYTES
        )
        return replace(converter, external_storage=external)

    def args(self) -> list[str]:
        """The options naming this server, for commands printed for the user to run."""
        args: list[str] = []
        if self.address != DEFAULT_ADDRESS and self.address != os.environ.get("TEMPORAL_ADDRESS"):
            args += ["--address", self.address]
        if self.namespace != "default" and self.namespace != os.environ.get("TEMPORAL_NAMESPACE"):
            args += ["--namespace", self.namespace]
        return args

    async def scope(self) -> ScopeClient:
        return ScopeClient(await self.client(), task_queue=self.task_queue)


def tls_options() -> dict[str, Any]:
    """`Client.connect` keyword arguments for TLS / API-key auth, from the environment.

    Raises:
        click.ClickException: only one of the mTLS certificate and key is set, or a file
            cannot be read.
    """
    api_key = os.environ.get("TEMPORAL_API_KEY") or None
    cert = os.environ.get("TEMPORAL_TLS_CERT") or None
    key = os.environ.get("TEMPORAL_TLS_KEY") or None
    ca = os.environ.get("TEMPORAL_TLS_CA") or None
    force = os.environ.get("TEMPORAL_TLS", "").lower() in {"1", "true", "yes", "on"}
    if bool(cert) != bool(key):
        raise click.ClickException("set both TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY for mTLS")
    options: dict[str, Any] = {}
    if cert or ca:
        options["tls"] = TLSConfig(
            client_cert=_read(cert) if cert else None,
            client_private_key=_read(key) if key else None,
            server_root_ca_cert=_read(ca) if ca else None,
        )
    elif api_key or force:
        options["tls"] = True
    if api_key:
        options["api_key"] = api_key
    return options


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise click.ClickException(f"cannot read {path}: {error.strerror}") from None


_ADDRESS = click.option(
    "--address",
    envvar="TEMPORAL_ADDRESS",
    default=DEFAULT_ADDRESS,
    show_default=True,
    metavar="HOST:PORT",
    help="Temporal frontend [env TEMPORAL_ADDRESS].",
)
_NAMESPACE = click.option(
    "--namespace",
    envvar="TEMPORAL_NAMESPACE",
    default="default",
    show_default=True,
    help="Temporal namespace [env TEMPORAL_NAMESPACE].",
)
_DATA_CONVERTER = click.option(
    "--data-converter",
    "data_converter",
    envvar="SCOPE_DATA_CONVERTER",
    default=None,
    metavar="MODULE:NAME",
    help="Your workers' DataConverter (e.g. with an encryption codec), or a function "
    "returning it [env SCOPE_DATA_CONVERTER].",
)
_TASK_QUEUE = click.option(
    "--task-queue",
    envvar="SCOPE_TASK_QUEUE",
    default=DEFAULT_TASK_QUEUE,
    show_default=True,
    help="Task queue the worker serves [env SCOPE_TASK_QUEUE].",
)


def connection_options(fn: Callable[..., T]) -> Callable[..., T]:
    """Add `--address`, `--namespace`, `--task-queue`, `--data-converter` and
    `--storage`; the command receives `connection`."""
    return _with_connection(fn, asks_task_queue=True)


def server_options(fn: Callable[..., T]) -> Callable[..., T]:
    """Add `--address`, `--namespace`, `--data-converter` and `--storage` (commands that
    address Interactions by id, which need no task queue); the command receives
    `connection`."""
    return _with_connection(fn, asks_task_queue=False)


def _with_connection(fn: Callable[..., T], *, asks_task_queue: bool) -> Callable[..., T]:
    @functools.wraps(fn)
    def command(
        *args: Any,
        address: str,
        namespace: str,
        data_converter: str | None,
        storage: str,
        **kwargs: Any,
    ) -> T:
        # a command with server options may take a --task-queue of its own
        task_queue = kwargs.pop("task_queue") if asks_task_queue else DEFAULT_TASK_QUEUE
        converter = load_data_converter(data_converter) if data_converter else None
        store = storage_driver(storage)
        connection = Connection(address, namespace, task_queue, converter, store)
        return fn(*args, connection=connection, **kwargs)

    options = _DATA_CONVERTER(STORAGE_OPTION(command))
    return _ADDRESS(_NAMESPACE(_TASK_QUEUE(options) if asks_task_queue else options))


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine; Ctrl-C ends it with exit code 130 and no traceback; a
    payload this client cannot decode (a codec it lacks) says how to give it the codec."""
    try:
        return asyncio.run(main)
    except KeyboardInterrupt:
        click.echo("\ninterrupted", err=True)
        raise click.exceptions.Exit(130) from None
    except Exception as error:
        if is_decode_failure(error):
            raise click.ClickException(f"{DECODE_HINT} ({error})") from None
        raise


def runs_async(command: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """A command written as a coroutine function, run by `run_async`."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_async(command(*args, **kwargs))

    return run


async def wait_for_stop() -> None:
    """Return on SIGINT (Ctrl-C) or SIGTERM, so long-running commands can shut down cleanly."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
        except (NotImplementedError, RuntimeError):  # not the main thread, or no signals
            pass
    try:
        await stop.wait()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def has_worker(client: Client, task_queue: str) -> bool | None:
    """Whether a worker polled `task_queue` recently; None when the server cannot tell."""
    return await has_pollers(client, task_queue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)


__all__ = [
    "DEFAULT_ADDRESS",
    "Connection",
    "connected",
    "connection_options",
    "has_worker",
    "note_connected",
    "run_async",
    "runs_async",
    "server_options",
    "tls_options",
    "wait_for_stop",
]

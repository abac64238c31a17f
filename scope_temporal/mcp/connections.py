"""The worker's connections to its MCP servers: started when first needed, then reused.

Activity side only: the `mcp` package is imported here, when a connection is opened, so
a worker that serves no MCP server never loads it (and the workflow sandbox never does).

One connection per server name, shared by every call on this worker (MCP's stateless
use: a server that keeps state between calls sees one client per worker, not one per
Interaction; see docs/mcp.md). A connection is owned by one task that enters the MCP
SDK's `Client` and holds it open; calls are sent through it from the activities' tasks.
A connection whose server died, or whose transport broke, is dropped: the next call
opens a new one (a stdio server is started again).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from scope_temporal.definition import Definition
from scope_temporal.errors import ConfigurationError
from scope_temporal.mcp.live_calls import LiveCalls, elicit_result
from scope_temporal.mcp.values import McpHttp, McpStdio, McpTarget

if TYPE_CHECKING:
    from mcp import Client

_log = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 30.0
"""How long opening a connection (starting a stdio server, the MCP handshake) may take."""


class McpUnavailable(Exception):
    """No connection to the server could be opened: nothing was sent to it."""


class _Connection:
    """One open MCP client session, held by its owner task until closed or broken."""

    def __init__(self, name: str, target: McpTarget, live: LiveCalls) -> None:
        self.name = name
        self._target = target
        self._live = live
        self._client: Client | None = None
        self._closing = asyncio.Event()
        self._ready = asyncio.Event()
        self._error: BaseException | None = None
        self._owner: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self._client is not None and self._owner is not None and not self._owner.done()

    @property
    def client(self) -> Client:
        assert self._client is not None  # callers check `alive` (under the manager's lock)
        return self._client

    async def open(self) -> None:
        """Open the session (raises McpUnavailable when it cannot)."""
        self._owner = asyncio.create_task(self._own(), name=f"mcp server {self.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), CONNECT_TIMEOUT_SECONDS)
        except TimeoutError:
            await self.close()
            raise McpUnavailable(
                f"MCP server {self.name!r} did not complete the handshake within "
                f"{CONNECT_TIMEOUT_SECONDS:g} s"
            ) from None
        if self._client is None:
            error = self._error
            raise McpUnavailable(
                f"MCP server {self.name!r} could not be reached: {type(error).__name__}: {error}"
            )

    async def _own(self) -> None:
        try:
            async with _client_for(self._target, self._elicited) as client:
                self._client = client
                self._ready.set()
                await self._closing.wait()
        except BaseException as error:  # the transport broke: the connection is dropped
            self._error = error
            if self._client is not None:
                _log.warning("MCP server %r: connection ended: %r", self.name, error)
            if isinstance(error, asyncio.CancelledError):
                raise
        finally:
            self._client = None
            self._ready.set()

    async def close(self) -> None:
        self._closing.set()
        owner = self._owner
        if owner is not None and not owner.done():
            try:
                await asyncio.wait_for(asyncio.shield(owner), 5)
            except (TimeoutError, Exception):
                owner.cancel()
                with contextlib.suppress(BaseException):
                    await owner

    async def _elicited(self, context: Any, params: Any) -> Any:
        """The server's `elicitation/create`: to the call that asked (`live_calls`)."""
        from mcp_types import ErrorData

        answered = await self._live.elicited(self.name, params)
        if isinstance(answered, tuple):
            return ErrorData(code=answered[0], message=answered[1])
        return elicit_result(answered)


def _client_for(target: McpTarget, elicited: Any) -> Client:
    """The MCP SDK's client for `target` (not yet entered), answering elicitation
    requests with `elicited`."""
    from mcp import Client, StdioServerParameters

    if isinstance(target, McpStdio):
        parameters = StdioServerParameters(
            command=target.command,
            args=list(target.args),
            env=dict(target.env) if target.env is not None else None,
            cwd=target.cwd,
        )
        return Client(parameters, mode="legacy", cache=None, elicitation_callback=elicited)
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers=dict(target.headers))
    transport = streamable_http_client(target.url, http_client=http)
    return Client(transport, mode="legacy", cache=None, elicitation_callback=elicited)


class McpConnections:
    """The MCP servers a worker can reach, by name, and their open connections.

    Args:
        servers: name -> how to reach it (`McpStdio` or `McpHttp`).
        serving: the Definitions served: each MCP server they name must be in `servers`.

    Raises:
        ConfigurationError: a target that is neither, a server a Definition names that
            is not configured, or the `mcp` package is missing.
    """

    def __init__(
        self, servers: Mapping[str, McpTarget], *, serving: Iterable[Definition] = ()
    ) -> None:
        missing = sorted(
            f"{d.name!r} uses MCP server {s.name!r}"
            for d in serving
            for s in d.mcp_servers
            if s.name not in servers
        )
        if missing:
            raise ConfigurationError(
                f"{'; '.join(missing)}: pass it in mcp_servers={{...}} (McpStdio or McpHttp)."
            )
        for name, target in servers.items():
            if not isinstance(target, McpStdio | McpHttp):
                raise ConfigurationError(
                    f"mcp_servers[{name!r}] must be McpStdio(...) or McpHttp(...), "
                    f"not {type(target).__name__}."
                )
        if servers:
            try:
                import mcp  # noqa: F401  (checked at worker start, not at the first call)
            except ImportError:
                raise ConfigurationError(
                    "mcp_servers needs the MCP SDK: pip install 'scope-temporal[mcp]'."
                ) from None
        self._targets = dict(servers)
        self._open: dict[str, _Connection] = {}
        self.live = LiveCalls()
        """The calls in flight here, and those held for an elicitation's answer."""
        self._locks: dict[str, asyncio.Lock] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._targets

    @property
    def names(self) -> list[str]:
        return sorted(self._targets)

    async def client(self, name: str) -> Client:
        """An open client of server `name`, opening (or reopening) one if needed.

        Raises:
            McpUnavailable: the server is not configured here, or cannot be reached;
                nothing was sent to it.
        """
        target = self._targets.get(name)
        if target is None:
            raise McpUnavailable(
                f"MCP server {name!r} is not configured on this worker (configured: "
                f"{self.names}); pass it in ScopeWorker(mcp_servers={{...}})."
            )
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            connection = self._open.get(name)
            if connection is None or not connection.alive:
                if connection is not None:
                    await connection.close()
                connection = _Connection(name, target, self.live)
                self._open[name] = connection
                await connection.open()
            return connection.client

    async def drop(self, name: str, client: Any) -> None:
        """Close the connection of `name` if it is still `client`'s (its transport is
        suspect after an ambiguous call: the next call opens a new one)."""
        connection = self._open.get(name)
        if connection is not None and connection.alive and connection.client is client:
            del self._open[name]
            await connection.close()

    async def aclose(self) -> None:
        """Close every connection (stdio servers are stopped)."""
        open_, self._open = self._open, {}
        self.live.close()
        for connection in open_.values():
            await connection.close()


__all__ = ["McpConnections", "McpUnavailable"]

"""The worker's connections to its MCP servers: started when first needed, then reused.

Activity side only: the `mcp` package is imported here, when a connection is opened, so
a worker that serves no MCP server never loads it (and the workflow sandbox never does).

One connection per server name, shared by every call on this worker (MCP's stateless
use: a server that keeps state between calls sees one client per worker), except for a
server declared `session="interaction"`: its sessions, one per Interaction, are held in
`sessions` (`scope_temporal.mcp.sessions`). Each is a `Connection` (`mcp.connection`).
A shared connection whose server died, or whose transport broke, is dropped: the next
call opens a new one (a stdio server is started again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from scope_temporal.definition import Definition
from scope_temporal.errors import ConfigurationError
from scope_temporal.mcp.connection import Connection, McpUnavailable
from scope_temporal.mcp.live_calls import LiveCalls
from scope_temporal.mcp.sessions import DEFAULT_IDLE, McpSessions
from scope_temporal.mcp.values import McpHttp, McpStdio, McpTarget

if TYPE_CHECKING:
    from mcp import Client


class McpConnections:
    """The MCP servers a worker can reach, by name, and their open connections.

    Args:
        servers: name -> how to reach it (`McpStdio` or `McpHttp`).
        serving: the Definitions served: each MCP server they name must be in `servers`.
        session_idle: a per-Interaction session without a call for this long is closed.

    Raises:
        ConfigurationError: a target that is neither, a server a Definition names that
            is not configured, or the `mcp` package is missing.
    """

    def __init__(
        self,
        servers: Mapping[str, McpTarget],
        *,
        serving: Iterable[Definition] = (),
        session_idle: timedelta = DEFAULT_IDLE,
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
        self.sampling = frozenset(
            s.name for d in serving for s in d.mcp_servers if s.sampling_policy is not None
        )
        """Servers a served Definition lets sample: their connections declare it."""
        self._open: dict[str, Connection] = {}
        self.live = LiveCalls()
        """The calls in flight here, and those held for an elicitation's answer."""
        self._locks: dict[str, asyncio.Lock] = {}
        self.sessions = McpSessions(
            self._targets, self.live, idle=session_idle, sampling=self.sampling
        )
        """The per-Interaction sessions held here (servers with `session="interaction"`)."""

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
                connection = Connection(name, target, self.live, sampling=name in self.sampling)
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
        await self.sessions.aclose()
        for connection in open_.values():
            await connection.close()


__all__ = ["McpConnections", "McpUnavailable"]

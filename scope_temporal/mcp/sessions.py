"""The per-Interaction MCP sessions a worker holds (docs/mcp.md, Stateful servers).

Activity side. A server declared `session="interaction"` gets one client session per
(server, Interaction), opened by `scope.mcp.session` on the worker that takes it and held
there until the Interaction ends (`scope.mcp.close`), the session is idle longer than
`idle`, or the worker stops. The worker polls a task queue of its own for the calls of
its sessions (its route), so every call of an Interaction reaches the one session that
holds its state.

A session is never opened again behind the Interaction's back: a call for a session this
worker does not hold (closed when idle, its server died, the worker restarted) fails with
`McpSessionLost`, before anything is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING

from scope_temporal.mcp.connection import Connection, McpUnavailable
from scope_temporal.mcp.live_calls import LiveCalls
from scope_temporal.mcp.session_values import (
    McpSessionInput,
    McpSessionOpened,
    McpSessionOutcome,
    McpSessionRefused,
)
from scope_temporal.mcp.values import McpTarget
from scope_temporal.registry import Registry

if TYPE_CHECKING:
    from mcp import Client

_log = logging.getLogger(__name__)

MAX_SESSIONS = 64
"""Sessions one worker holds at once; opening one more is refused (nothing is sent)."""
DEFAULT_IDLE = timedelta(hours=1)
"""A session without a call for this long is closed (`ScopeWorker(mcp_session_idle=)`)."""


class McpSessionLost(Exception):
    """The session the call needs is not held here: nothing was sent."""


class McpSessionRefusal(Exception):
    """No session was opened (the limit, or the server could not be reached)."""


class _Held:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.used = time.monotonic()
        self.busy = 0
        """Calls running on it (a session with one is never idle)."""


class McpSessions:
    """The sessions held on one worker, by (server, Interaction id).

    Args:
        targets: how to reach each server.
        live: the worker's calls in flight (elicitation requests find theirs there).
        idle: close a session without a call for this long.
        limit: the most sessions held at once.
        sampling: the servers whose sessions declare MCP's sampling capability.
    """

    def __init__(
        self,
        targets: Mapping[str, McpTarget],
        live: LiveCalls,
        *,
        idle: timedelta = DEFAULT_IDLE,
        limit: int = MAX_SESSIONS,
        sampling: frozenset[str] = frozenset(),
    ) -> None:
        self._targets = targets
        self._sampling = sampling
        self._live = live
        self.idle = idle
        self.limit = limit
        self._held: dict[tuple[str, str], _Held] = {}
        self._lock = asyncio.Lock()
        self._reaper: asyncio.Task[None] | None = None
        self.closed_idle = 0
        """Sessions closed for being idle so far."""

    def __len__(self) -> int:
        return len(self._held)

    def holds(self, server: str, owner: str) -> bool:
        return (server, owner) in self._held

    async def open(self, server: str, owner: str) -> None:
        """Open the session of `server` for Interaction `owner` (held already: nothing).

        Raises:
            McpSessionRefusal: the worker holds `limit` sessions, the server is not
                configured here, or it cannot be reached; nothing was sent to it.
        """
        target = self._targets.get(server)
        if target is None:
            raise McpSessionRefusal(
                f"MCP server {server!r} is not configured on this worker; pass it in "
                "ScopeWorker(mcp_servers={...})."
            )
        async with self._lock:
            if (server, owner) in self._held:
                return
            await self._close_idle()
            if len(self._held) >= self.limit:
                raise McpSessionRefusal(
                    f"This worker holds {self.limit} open MCP sessions, the most it holds; "
                    f"the session of {server!r} was not opened and nothing was sent. Start "
                    "more workers, end Interactions that no longer need theirs, or close "
                    "idle ones sooner with ScopeWorker(mcp_session_idle=...)."
                )
            connection = Connection(
                server,
                target,
                self._live,
                key=f"{server}@{owner}",
                sampling=server in self._sampling,
            )
            try:
                await connection.open()
            except McpUnavailable as error:
                raise McpSessionRefusal(str(error)) from None
            self._held[(server, owner)] = _Held(connection)
        self._watch()

    async def client(self, server: str, owner: str) -> Client:
        """The open client of the session (marked busy until `release`).

        Raises:
            McpSessionLost: no such session is held here, or its connection ended.
        """
        held = self._held.get((server, owner))
        if held is None:
            raise McpSessionLost(
                f"This worker holds no session of MCP server {server!r} for Interaction "
                f"{owner!r} (it was closed after {_shown(self.idle)} without a call, or the "
                "worker restarted)"
            )
        if not held.connection.alive:
            del self._held[(server, owner)]
            await held.connection.close()
            raise McpSessionLost(
                f"The session of MCP server {server!r} for Interaction {owner!r} ended (the "
                "server exited or its connection broke)"
            )
        held.busy += 1
        held.used = time.monotonic()
        return held.connection.client

    def release(self, server: str, owner: str) -> None:
        """A call on the session ended (or is held for an answer: it counts as ended)."""
        held = self._held.get((server, owner))
        if held is not None:
            held.busy = max(0, held.busy - 1)
            held.used = time.monotonic()

    async def close(self, owner: str, servers: tuple[str, ...]) -> int:
        """Close the sessions of `servers` held for `owner`: how many were held here."""
        closed = 0
        for server in servers:
            held = self._held.pop((server, owner), None)
            if held is not None:
                closed += 1
                await held.connection.close()
        return closed

    async def _close_idle(self) -> None:
        """Close the sessions idle longer than `idle`."""
        cutoff = time.monotonic() - self.idle.total_seconds()
        idle = [key for key, h in self._held.items() if not h.busy and h.used < cutoff]
        connections = [self._held.pop(key).connection for key in idle]
        for connection in connections:
            self.closed_idle += 1
            _log.info("MCP session %s closed: idle for %s", connection.key, _shown(self.idle))
            await connection.close()

    def _watch(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.ensure_future(self._reap())

    async def _reap(self) -> None:
        every = max(min(self.idle.total_seconds() / 4, 60.0), 0.05)
        while self._held:
            await asyncio.sleep(every)
            await self._close_idle()

    async def aclose(self) -> None:
        """Close every session (the worker stops)."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(BaseException):
                await self._reaper
        held, self._held = self._held, {}
        for h in held.values():
            await h.connection.close()


async def open_session(
    input: McpSessionInput, *, registry: Registry, sessions: McpSessions, queue: str | None
) -> McpSessionOutcome:
    """What `scope.mcp.session` does: open the session here, answer with `queue`."""
    definition = registry.lookup(input.definition)
    server = (
        next((s for s in definition.mcp_servers if s.name == input.server), None)
        if (definition is not None and definition.digest == input.digest)
        else None
    )
    if server is None or not server.per_interaction or queue is None:
        return McpSessionRefused(
            message=f"Definition {input.definition!r} with MCP server {input.server!r} of "
            f"session='interaction' is not served here under digest {input.digest[:12]}; "
            "serve the same Definitions on every worker."
        )
    try:
        await sessions.open(input.server, input.owner)
    except McpSessionRefusal as refusal:
        return McpSessionRefused(message=str(refusal))
    return McpSessionOpened(queue=queue)


def _shown(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds:g} s"


__all__ = [
    "DEFAULT_IDLE",
    "MAX_SESSIONS",
    "McpSessionLost",
    "McpSessionRefusal",
    "McpSessions",
    "open_session",
]

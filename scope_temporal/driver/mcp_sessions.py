"""An Interaction's own MCP sessions, on any engine (docs/mcp.md, Stateful servers).

A server declared `McpServer(..., session="interaction")` gets one session per
Interaction, held by one worker. Before the first call of such a server, the driver
opens the session [`scope.mcp.session`, never retried] and keeps its route (the task
queue of the worker holding it; recorded as the activity's result, carried by
continue-as-new); every call of the server goes there [the `scope.tool` attempt is
scheduled on that queue, under both mappings]. The rules:

 1. Calls that find no route wait for one opening (two calls of one round open one
    session). An opening that fails fails the call definitely (nothing was sent); the
    next call tries again, since no state was made.
 2. An attempt nobody picked up on the route's queue was never sent: the holder is gone
    and the call fails definitely with `tool.mcp.session_lost`, as does a call the
    holder no longer has a session for. From then on every call of the server in this
    Interaction fails the same way at once: the session's state is gone, and a new
    session is never opened behind the model's back.
 3. When the Interaction ends (completed, failed, cancelled) its sessions are closed
    [`scope.mcp.close` on each holder's queue, best effort]; continue-as-new keeps them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from scope_temporal import errors
from scope_temporal.chat import ToolCall
from scope_temporal.definition import Definition
from scope_temporal.driver.transport import InteractionTransport, Lost
from scope_temporal.mcp.session_values import (
    McpCloseInput,
    McpSessionInput,
    McpSessionRefused,
    McpSessionRoute,
)
from scope_temporal.mcp.values import McpServer
from scope_temporal.tools.outcome import Failed, ToolOutcome
from scope_temporal.tools.rejections import error_result


class McpSessionRoutes:
    """The routes of one Interaction's sessions (carried from its earlier runs)."""

    def __init__(self, owner: str, carried: Iterable[McpSessionRoute] = ()) -> None:
        self._owner = owner
        self._routes: dict[str, McpSessionRoute] = {r.server: r for r in carried}
        self._opening: dict[str, asyncio.Task[McpSessionRoute | str]] = {}

    @property
    def carried(self) -> tuple[McpSessionRoute, ...]:
        """What the next run carries."""
        return tuple(self._routes.values())

    async def queue_for(
        self,
        server: McpServer,
        definition: Definition,
        call: ToolCall,
        transport: InteractionTransport,
    ) -> str | Failed:
        """The queue of the worker holding the session of `server` (opened now if
        needed), or the definite failure of `call` (rules 1 and 2)."""
        route = self._routes.get(server.name)
        if route is None:
            opening = self._opening.get(server.name)
            if opening is None:
                opening = asyncio.ensure_future(self._open(server, definition, transport))
                self._opening[server.name] = opening
                opening.add_done_callback(lambda _: self._opening.pop(server.name, None))
            opened = await asyncio.shield(opening)
            if isinstance(opened, str):
                return _failed(call, errors.MCP_SESSION_FAILED, opened)
            route = opened
        if route.lost:
            return _failed(
                call,
                errors.MCP_SESSION_LOST,
                f"The session of MCP server {server.name!r} for this Interaction was lost "
                "earlier (the worker holding it is gone, or it was closed); its state is "
                f"gone and no new session is opened. The call of {call.name!r} was not sent.",
            )
        return route.queue

    async def _open(
        self, server: McpServer, definition: Definition, transport: InteractionTransport
    ) -> McpSessionRoute | str:
        opened = await transport.open_mcp_session(
            McpSessionInput(
                definition=definition.name,
                digest=definition.digest,
                server=server.name,
                owner=self._owner,
            )
        )
        if isinstance(opened, Lost):
            return (
                f"Opening a session of MCP server {server.name!r} failed ({opened.diagnostic}); "
                "no call was sent."
            )
        if isinstance(opened, McpSessionRefused):
            return f"No session of MCP server {server.name!r} was opened: {opened.message}"
        route = McpSessionRoute(server=server.name, queue=opened.queue)
        self._routes[server.name] = route
        return route

    def note(self, server: str, outcome: ToolOutcome) -> None:
        """Mark the session lost when a call's outcome says so (rule 2)."""
        route = self._routes.get(server)
        lost = isinstance(outcome, Failed) and outcome.code == errors.MCP_SESSION_LOST
        if route is not None and lost and not route.lost:
            self._routes[server] = route.model_copy(update={"lost": True})

    async def close(self, transport: InteractionTransport) -> None:
        """Close the sessions still held (rule 3), each holder's at once."""
        by_queue: dict[str, list[str]] = {}
        for route in self._routes.values():
            if not route.lost:
                by_queue.setdefault(route.queue, []).append(route.server)
        await asyncio.gather(
            *(
                transport.close_mcp_sessions(
                    McpCloseInput(owner=self._owner, servers=tuple(servers)), queue=queue
                )
                for queue, servers in by_queue.items()
            )
        )


def session_server(definition: Definition, server: str) -> McpServer | None:
    """The declaration of `server` when each Interaction has its own session of it."""
    found = next((s for s in definition.mcp_servers if s.name == server), None)
    return found if found is not None and found.per_interaction else None


def _failed(call: ToolCall, code: str, message: str) -> Failed:
    return Failed(result=error_result(call, message), code=code)


__all__ = ["McpSessionRoutes", "session_server"]

"""One open MCP client session, owned by a task of the worker (activity side).

Imports the `mcp` package only when a connection is opened. A connection is owned by
one task that enters the MCP SDK's `Client` and holds it open; calls are sent through
it from the activities' tasks. Used by the worker's shared connections
(`mcp.connections`) and by the per-Interaction sessions (`mcp.sessions`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from scope_temporal.mcp.live_calls import LiveCalls, elicit_result, sample_result
from scope_temporal.mcp.values import McpStdio, McpTarget

if TYPE_CHECKING:
    from mcp import Client

_log = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 30.0
"""How long opening a connection (starting a stdio server, the MCP handshake) may take."""


class McpUnavailable(Exception):
    """No connection to the server could be opened: nothing was sent to it."""


class Connection:
    """One open MCP client session, held by its owner task until closed or broken."""

    def __init__(
        self,
        name: str,
        target: McpTarget,
        live: LiveCalls,
        *,
        key: str | None = None,
        sampling: bool = False,
    ) -> None:
        self.name = name
        self.sampling = sampling
        """Declare MCP's sampling capability (a Definition served lets this server use
        its model); without it the MCP SDK refuses a request, as before sampling existed."""
        self.key = key or name
        """What its calls in flight are grouped by (an elicitation goes to one of them)."""
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
            sampled = self._sampled if self.sampling else None
            async with _client_for(self._target, self._elicited, sampled) as client:
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

        answered = await self._live.elicited(self.key, params)
        if isinstance(answered, tuple):
            return ErrorData(code=answered[0], message=answered[1])
        return elicit_result(answered)

    async def _sampled(self, context: Any, params: Any) -> Any:
        """The server's `sampling/createMessage`: to the call that asked (`live_calls`),
        answered by its Interaction's model."""
        from mcp_types import ErrorData

        answered = await self._live.sampled(self.key, params)
        if isinstance(answered, tuple):
            return ErrorData(code=answered[0], message=answered[1])
        return sample_result(answered)


def _client_for(target: McpTarget, elicited: Any, sampled: Any = None) -> Client:
    """The MCP SDK's client for `target` (not yet entered), answering elicitation
    requests with `elicited` and sampling requests with `sampled` (None: refused by
    the MCP SDK, the capability not declared)."""
    from mcp import Client, StdioServerParameters

    if isinstance(target, McpStdio):
        parameters = StdioServerParameters(
            command=target.command,
            args=list(target.args),
            env=dict(target.env) if target.env is not None else None,
            cwd=target.cwd,
        )
        return Client(
            parameters,
            mode="legacy",
            cache=None,
            elicitation_callback=elicited,
            sampling_callback=sampled,
        )
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers=dict(target.headers))
    transport = streamable_http_client(target.url, http_client=http)
    return Client(
        transport,
        mode="legacy",
        cache=None,
        elicitation_callback=elicited,
        sampling_callback=sampled,
    )


__all__ = ["CONNECT_TIMEOUT_SECONDS", "Connection", "McpUnavailable"]

"""Per-Interaction MCP sessions as values: what the workflow records and carries.

Pure and workflow-safe. A server declared `McpServer(..., session="interaction")` gets
one client session per Interaction, held by one worker. The activity `scope.mcp.session`
opens it and answers with its route (the task queue only that worker polls); the result
is in history, continue-as-new carries it (`input.carry.mcp_sessions`), and every
later call of the server in that Interaction is scheduled on that queue. `scope.mcp.close`
closes an Interaction's sessions when it ends. See docs/mcp.md, Stateful servers.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class McpSessionRoute(BaseModel):
    """Where one Interaction's session of one server lives."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    server: str
    """The server's name (as the Definition declares it)."""
    queue: str
    """The task queue of the worker holding the session (`<task_queue>/mcp/<suffix>`)."""
    lost: bool = False
    """A call found the holder gone (or the session closed): every later call of the
    server in this Interaction fails with `tool.mcp.session_lost`."""


class McpSessionInput(BaseModel):
    """`scope.mcp.session`: open the session of `server` for Interaction `owner`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    definition: str
    digest: str
    """The worker refuses to open for another version of the Definition."""
    server: str
    owner: str
    """The Interaction's workflow id (continue-as-new keeps it: so does the session)."""


class McpSessionOpened(BaseModel):
    """The session is open on the worker polling `queue`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["opened"] = "opened"
    queue: str


class McpSessionRefused(BaseModel):
    """No session was opened (nothing was sent to the server); `message` says why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["refused"] = "refused"
    message: str


McpSessionOutcome = McpSessionOpened | McpSessionRefused


class McpCloseInput(BaseModel):
    """`scope.mcp.close`: close the sessions of `servers` held for Interaction `owner`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    owner: str
    servers: tuple[str, ...]


__all__ = [
    "McpCloseInput",
    "McpSessionInput",
    "McpSessionOpened",
    "McpSessionOutcome",
    "McpSessionRefused",
    "McpSessionRoute",
]

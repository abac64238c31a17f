"""What a worker serves model calls and tool attempts with, on either engine:
`ScopeActivities` (the `scope.model` and `scope.tool` activities) and `LocalRunner` hold
the same parts, and `model_once` / `attempt_once` take them as one value."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

from scope_temporal.chat import Message
from scope_temporal.mcp.connections import McpConnections
from scope_temporal.models.protocol import Model
from scope_temporal.observers import ObserverHub
from scope_temporal.registry import Registry
from scope_temporal.tools.middleware import Middleware
from scope_temporal.tools.registry import ToolRegistry

ContextReducer = Callable[[list[Message]], "list[Message] | Awaitable[list[Message]]"]
"""Replaces the messages about to be sent (e.g. summarises old turns). Runs on the worker."""


class Served(Protocol):
    """A worker's parts (none of them travels in a payload)."""

    registry: Registry
    tools: ToolRegistry
    mcp: McpConnections

    @property
    def models(self) -> Mapping[str, Model]: ...

    @property
    def reducers(self) -> Mapping[str, ContextReducer]: ...

    @property
    def observers(self) -> ObserverHub: ...

    @property
    def middleware(self) -> Sequence[Middleware]: ...


__all__ = ["ContextReducer", "Served"]

"""`ToolRegistry`: the tools bound on a worker, by name, without silent overwrites."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from scope_temporal.errors import DefinitionError
from scope_temporal.tools.decorator import Tool
from scope_temporal.tools.spec import ToolSpec

__all__ = ["ToolRegistry"]


class ToolRegistry:
    """Name -> Tool, in registration order.

    Args:
        tools: Tools to register, as if passed to `add` one by one.

    Raises:
        DefinitionError: see `add`.
    """

    def __init__(self, tools: Iterable[Tool[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool[..., Any]] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool[..., Any]) -> None:
        """Register a tool.

        Raises:
            DefinitionError: `tool` is not a `Tool` (e.g. a function missing `@tool`), or
                another tool is already registered under its name (registering the same
                Tool object twice is refused too: it is almost always a wiring mistake).
        """
        if not isinstance(tool, Tool):
            raise DefinitionError(f"{tool!r} is not a tool: decorate it with @tool")
        if tool.name in self._tools:
            raise DefinitionError(f"duplicate tool name {tool.name!r}: already registered")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool[..., Any] | None:
        """The tool registered under `name`, or None."""
        return self._tools.get(name)

    def specs(self) -> tuple[ToolSpec, ...]:
        """The specs of every registered tool, in registration order."""
        return tuple(tool.spec for tool in self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool[..., Any]]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

"""`ToolRegistry`: the tools bound on a worker, by name, without silent overwrites.

Beside each name's tool, a background tool's *retired* implementations (`RetiredTool`):
the implementation of another capability class the tool had before, kept only so the
tasks launched under it run their remaining attempts under it. A retired implementation
is never called by a model, never bound in a Definition and never starts a call.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from scope_temporal.errors import DefinitionError
from scope_temporal.tools.decorator import Tool
from scope_temporal.tools.spec import CapabilityClass, ToolSpec

__all__ = ["RetiredTool", "ToolRegistry"]


@dataclass(frozen=True)
class RetiredTool:
    """A background tool's former implementation, registered for its earlier tasks only.

    Build one with `BackgroundTool.retired()` and pass it in `tools=[...]` beside the
    tool's current implementation (or alone, when the tool is gone but tasks of it still
    run): the tasks launched under its capability class run their attempts on it.
    """

    tool: Tool[..., Any]
    """The implementation, as `@background_tool` declared it (its name is the tool's)."""

    @property
    def name(self) -> str:
        return self.tool.name

    @property
    def capability(self) -> CapabilityClass:
        assert self.tool.spec.background is not None  # checked by ToolRegistry.add
        return self.tool.spec.background.capability


class ToolRegistry:
    """Name -> Tool, in registration order, and the retired background implementations.

    Args:
        tools: Tools (and `RetiredTool`s) to register, as if passed to `add` one by one.

    Raises:
        DefinitionError: see `add`.
    """

    def __init__(self, tools: Iterable[Tool[..., Any] | RetiredTool] = ()) -> None:
        self._tools: dict[str, Tool[..., Any]] = {}
        self._retired: dict[tuple[str, CapabilityClass], Tool[..., Any]] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool[..., Any] | RetiredTool) -> None:
        """Register a tool, or a retired background implementation.

        Raises:
            DefinitionError: `tool` is not a `Tool` (e.g. a function missing `@tool`), or
                another tool is already registered under its name (registering the same
                Tool object twice is refused too: it is almost always a wiring mistake);
                a retired implementation that is not a background tool, is of the same
                capability class as the tool registered under its name, or of the same
                class as another retired implementation of that name.
        """
        if isinstance(tool, RetiredTool):
            self._add_retired(tool)
            return
        if not isinstance(tool, Tool):
            raise DefinitionError(f"{tool!r} is not a tool: decorate it with @tool")
        if tool.name in self._tools:
            raise DefinitionError(f"duplicate tool name {tool.name!r}: already registered")
        capability = _capability(tool)
        if capability is not None:
            self._refuse_same_class(tool.name, capability)
        self._tools[tool.name] = tool

    def _add_retired(self, retired: RetiredTool) -> None:
        tool = retired.tool
        if not isinstance(tool, Tool) or tool.spec.background is None:
            raise DefinitionError(
                f"{tool!r} is not a background tool: only a @background_tool's former "
                "implementation can be retired (it serves the tasks launched under it)"
            )
        key = (retired.name, retired.capability)
        if key in self._retired:
            raise DefinitionError(
                f"duplicate retired {retired.capability} implementation of tool "
                f"{retired.name!r}: register one per capability class"
            )
        self._refuse_same_class(*key)
        self._retired[key] = tool

    def _refuse_same_class(self, name: str, capability: CapabilityClass) -> None:
        """A tool and a retired implementation of one class would both claim its tasks."""
        current = self._tools.get(name)
        retired = (name, capability) in self._retired
        if retired or (current is not None and _capability(current) == capability):
            raise DefinitionError(
                f"tool {name!r} is registered as {capability} and has a retired {capability} "
                "implementation too: a retired implementation serves the tasks of the class "
                "the tool has left; register only the current one of its class"
            )

    def get(self, name: str) -> Tool[..., Any] | None:
        """The tool registered under `name`, or None (never a retired implementation)."""
        return self._tools.get(name)

    def implementation(self, name: str, capability: CapabilityClass) -> Tool[..., Any] | None:
        """The implementation that runs the attempts of a task of background tool `name`
        launched in class `capability`: the tool's registration if it is of that class,
        else its retired implementation of that class. A plain task falls back on a
        recoverable implementation (it has all a plain one has; the task's own record
        keeps it to its one attempt). None: nothing registered can run it.
        """
        by_class = {k: t for (n, k), t in self._retired.items() if n == name}
        current = self._tools.get(name)
        if current is not None and (kind := _capability(current)) is not None:
            by_class[kind] = current
        found = by_class.get(capability)
        if found is None and capability == "plain":
            found = by_class.get("recoverable")
        return found

    def retired(self, name: str) -> tuple[CapabilityClass, ...]:
        """The capability classes of the retired implementations of `name`."""
        return tuple(k for (n, k) in self._retired if n == name)

    def specs(self) -> tuple[ToolSpec, ...]:
        """The specs of every registered tool, in registration order."""
        return tuple(tool.spec for tool in self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool[..., Any]]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)


def _capability(tool: Tool[..., Any]) -> CapabilityClass | None:
    """A background tool's capability class (None: not a background tool)."""
    return None if tool.spec.background is None else tool.spec.background.capability

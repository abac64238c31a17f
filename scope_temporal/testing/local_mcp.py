"""`LocalRunner`'s MCP tool lists: fetched in-process when a run starts, as a worker's
`scope.mcp.list` fetches them for a new Interaction (docs/mcp.md)."""

from __future__ import annotations

from scope_temporal.driver.start import settings_of
from scope_temporal.mcp.connections import McpConnections
from scope_temporal.mcp.listing import list_tools
from scope_temporal.mcp.values import McpListInput, McpListRefused
from scope_temporal.outputs import Failure
from scope_temporal.payloads import RunSettings
from scope_temporal.registry import Registry


async def local_mcp_settings(
    registry: Registry, name: str, connections: McpConnections
) -> RunSettings | Failure | None:
    """The settings of a new run of Definition `name` with its MCP tool lists recorded;
    None when it names no MCP server (the run records its settings as usual); the
    failure when a list cannot be fetched or is refused."""
    definition = registry.lookup(name)
    if definition is None or not definition.mcp_servers:
        return None
    listed = await list_tools(
        McpListInput(definition=name, digest=definition.digest),
        registry=registry,
        connections=connections,
    )
    if isinstance(listed, McpListRefused):
        return Failure.of(listed.code, listed.message)
    return settings_of(definition, registry).model_copy(update={"mcp_tools": listed.listings})


__all__ = ["local_mcp_settings"]

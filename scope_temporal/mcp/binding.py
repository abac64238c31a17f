"""A Definition with its MCP servers' recorded tools bound, as the loop sees it.

Pure and workflow-safe. A Definition declares MCP servers by name (`McpServer`); which
tools they offer is known only once an Interaction fetched and recorded their lists
(`McpListing`, in its run settings). `bound_definition` gives the loop a Definition whose
ToolSet holds those tools after the local ones, each an ordinary `ToolSpec` (its name
prefixed, its schema the recorded one, its permission the server's), so admission,
schema checks, approvals, budgets, grants and scheduling treat an MCP tool exactly as a
local one; a server declared with `approval="destructive"` adds the tools it does not
mark harmless to the approval policy. The bound Definition keeps the declared digest: the
digest covers the declaration (which servers, allow lists, prefixes), the recorded list
is in history.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from scope_temporal.approval import ApprovalPolicy
from scope_temporal.definition import Definition, ToolSet
from scope_temporal.mcp.values import McpListing, McpServer, McpToolRecord
from scope_temporal.tools.spec import (
    RUN_IN_BACKGROUND,
    RUN_IN_BACKGROUND_SCHEMA,
    BackgroundSpec,
    ToolSpec,
)


class McpToolSet(ToolSet):
    """A Definition's ToolSet with its MCP servers' recorded tools after the local ones."""

    def __init__(self, base: ToolSet, servers: Iterable[McpServer], listings: Iterable[McpListing]):
        self.listings: tuple[McpListing, ...] = tuple(listings)
        """The recorded lists the tools come from."""
        self.records: dict[str, McpToolRecord] = {}
        """Model-visible tool name -> its record."""
        declared = {server.name: server for server in servers}
        specs: list[ToolSpec] = []
        for listing in self.listings:
            server = declared[listing.server]
            for record in listing.tools:
                self.records[record.tool] = record
                specs.append(spec_of(record, server))
        super().__init__(base.name, [*base.tools, *specs], deferred=base.deferred)


def spec_of(record: McpToolRecord, server: McpServer) -> ToolSpec:
    """The ToolSpec of one recorded MCP tool, under its server's declaration: a tool its
    server lets run in the background (`McpServer.background`) is a handoff background
    tool, with the `run_in_background` flag in its schema (docs/mcp.md, Background calls)."""
    parameters, background = record.input_schema, None
    if server.moves(record.name):
        parameters = with_background_flag(parameters)
        background = BackgroundSpec(foreground_timeout=server.foreground_timeout, handoff=True)
    return ToolSpec(
        name=record.tool,
        description=record.description,
        parameters=parameters,
        permission=server.permission,
        timeout=server.timeout,
        background=background,
    )


def with_background_flag(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with the optional `run_in_background` flag every background tool takes
    (a listed tool with a property of that name is refused when its list is checked)."""
    properties = {**schema.get("properties", {}), RUN_IN_BACKGROUND: RUN_IN_BACKGROUND_SCHEMA}
    return {**schema, "properties": properties}


def bound_definition(definition: Definition, listings: Iterable[McpListing] | None) -> Definition:
    """`definition` with the recorded tools of `listings` bound (itself when none)."""
    recorded = tuple(listings or ())
    if not recorded:
        return definition
    tools = McpToolSet(definition.tools, definition.mcp_servers, recorded)
    bound = copy.copy(definition)
    object.__setattr__(bound, "tools", tools)  # a copy of a frozen declaration, rebound once
    object.__setattr__(bound, "approval", _approval(definition, tools))
    return bound


def _approval(definition: Definition, tools: McpToolSet) -> ApprovalPolicy | None:
    """The Definition's policy, also asking before the recorded tools whose server says
    `approval="destructive"` / `"all"` (`McpServer.asks_before`)."""
    declared = {server.name: server for server in definition.mcp_servers}
    asked = {
        record.tool
        for record in tools.records.values()
        if declared[record.server].asks_before(record)
    }
    policy = definition.approval
    if not asked:
        return policy
    if policy is None:
        return ApprovalPolicy(tools=asked)
    return ApprovalPolicy(
        require=policy.require,
        tools=policy.tools | asked,
        exempt=policy.exempt,
        approver=policy.approver,
        otherwise=policy.otherwise,
    )


def mcp_record(definition: Definition, tool_name: str) -> McpToolRecord | None:
    """The recorded MCP tool a call of `tool_name` reaches (None: a local tool)."""
    tools = definition.tools
    return tools.records.get(tool_name) if isinstance(tools, McpToolSet) else None


def listings_of(definition: Definition) -> tuple[McpListing, ...]:
    """The recorded lists bound into `definition` (empty for one without)."""
    tools = definition.tools
    return tools.listings if isinstance(tools, McpToolSet) else ()


__all__ = ["McpToolSet", "bound_definition", "listings_of", "mcp_record", "spec_of"]

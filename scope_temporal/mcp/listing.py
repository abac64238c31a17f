"""What `scope.mcp.list` does: fetch a Definition's MCP tool lists and check them.

Activity side. A server's tool list is untrusted input: before it is recorded (and the
model ever sees a tool of it) each offered tool is checked, and anything refused fails
the Interaction before its first model call with a message naming the server and the
tool (`tool.mcp.list_invalid`); a server that cannot be reached fails it likewise
(`tool.mcp.list_failed`). Nothing ran, so nothing is lost; the worker keeps serving.

Checks, on the tools the Definition offers (its `allow` list, or all):
- the model-visible name (prefix + name) is 1-64 letters, digits, `_` or `-`, and
  unique among the local tools, the delegates and every other offered MCP tool;
- every name in `allow` is listed by the server, and no name is listed twice;
- every name in `retry_safe` and `background` is offered; a tool that may run in the
  background takes no argument named `run_in_background` (the framework's flag);
- the input schema is a valid JSON Schema (`jsonschema`'s `check_schema`) of an object;
- sizes: a description up to `MAX_DESCRIPTION_CHARS`, a schema up to `MAX_SCHEMA_BYTES`,
  at most `MAX_TOOLS` tools per server, at most `MAX_LISTING_BYTES` in all.
"""

from __future__ import annotations

import json
from typing import Any

from scope_temporal.definition import Definition
from scope_temporal.errors import MCP_LIST_FAILED, MCP_LIST_INVALID, DefinitionError
from scope_temporal.mcp.connections import McpConnections, McpUnavailable
from scope_temporal.mcp.values import (
    McpListed,
    McpListing,
    McpListInput,
    McpListOutcome,
    McpListRefused,
    McpServer,
    McpToolRecord,
)
from scope_temporal.registry import Registry
from scope_temporal.tools.spec import RUN_IN_BACKGROUND, is_provider_tool_name
from scope_temporal.tools.validation import check_schema

MAX_DESCRIPTION_CHARS = 8_192
MAX_SCHEMA_BYTES = 64 * 1024
MAX_TOOLS = 128
MAX_LISTING_BYTES = 512 * 1024
_MAX_PAGES = 50


class _Refused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


async def list_tools(
    input: McpListInput, *, registry: Registry, connections: McpConnections
) -> McpListOutcome:
    """The checked tool lists of the Definition's MCP servers, or why not."""
    definition = registry.lookup(input.definition)
    if definition is None or definition.digest != input.digest:
        return McpListRefused(
            code=MCP_LIST_FAILED,
            message=f"Definition {input.definition!r} is not served here under digest "
            f"{input.digest[:12]}; serve the same Definitions on every worker.",
        )
    taken = set(definition.tools.names) | {d.name for d in definition.delegates}
    listings: list[McpListing] = []
    try:
        for server in definition.mcp_servers:
            raw = await _fetch(server, connections)
            listing = _checked(definition, server, raw, taken)
            taken |= {record.tool for record in listing.tools}
            listings.append(listing)
        size = len(json.dumps([listing.model_dump(mode="json") for listing in listings]))
        if size > MAX_LISTING_BYTES:
            raise _Refused(
                MCP_LIST_INVALID,
                f"Definition {definition.name!r}: the MCP tool lists take {size:,} bytes, over "
                f"{MAX_LISTING_BYTES:,}; narrow them with McpServer(allow=[...]).",
            )
    except _Refused as refused:
        return McpListRefused(code=refused.code, message=refused.message)
    return McpListed(listings=tuple(listings))


async def _fetch(server: McpServer, connections: McpConnections) -> list[Any]:
    try:
        client = await connections.client(server.name)
    except McpUnavailable as error:
        raise _Refused(MCP_LIST_FAILED, str(error)) from None
    tools: list[Any] = []
    cursor: str | None = None
    try:
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None:
                return tools
    except Exception as error:  # a listing reads nothing but the list: fail, never guess
        await connections.drop(server.name, client)
        raise _Refused(
            MCP_LIST_FAILED,
            f"MCP server {server.name!r}: listing its tools failed: "
            f"{type(error).__name__}: {error}",
        ) from None
    raise _Refused(
        MCP_LIST_INVALID, f"MCP server {server.name!r} lists more than {_MAX_PAGES} pages."
    )


def _checked(
    definition: Definition, server: McpServer, raw: list[Any], taken: set[str]
) -> McpListing:
    where = f"Definition {definition.name!r}, MCP server {server.name!r}"
    listed: dict[str, Any] = {}
    for tool in raw:
        if tool.name in listed:
            raise _Refused(MCP_LIST_INVALID, f"{where} lists two tools named {tool.name!r}.")
        listed[tool.name] = tool
    offered = list(listed) if server.allow is None else list(server.allow)
    missing = [name for name in offered if name not in listed]
    if missing:
        raise _Refused(
            MCP_LIST_INVALID,
            f"{where}: allow names {missing}, which the server does not list (it lists "
            f"{sorted(listed)[:20]}).",
        )
    for option, named in (("retry_safe", server.retry_safe), ("background", server.background)):
        unknown = sorted(named - set(offered)) if isinstance(named, frozenset) else []
        if unknown:
            raise _Refused(
                MCP_LIST_INVALID,
                f"{where}: {option} names {unknown}, which it does not offer (it offers "
                f"{sorted(offered)[:20]}).",
            )
    if len(offered) > MAX_TOOLS:
        raise _Refused(
            MCP_LIST_INVALID,
            f"{where} offers {len(offered)} tools, over {MAX_TOOLS}; narrow them with allow=.",
        )
    records = tuple(_record(where, server, listed[name], taken) for name in offered)
    return McpListing(server=server.name, tools=records)


def _record(where: str, server: McpServer, tool: Any, taken: set[str]) -> McpToolRecord:
    name = tool.name
    visible = server.tool_prefix + name
    shown = visible if len(visible) <= 80 else visible[:77] + "..."
    if not is_provider_tool_name(visible):
        raise _Refused(
            MCP_LIST_INVALID,
            f"{where}, tool {shown!r}: a tool name must be 1-64 letters, digits, '_' or "
            "'-' (prefix included); leave it out with allow=, or shorten the prefix.",
        )
    if visible in taken:
        raise _Refused(
            MCP_LIST_INVALID,
            f"{where}, tool {name!r}: its name {visible!r} collides with another tool or "
            "delegate of the Definition; give the server another prefix=.",
        )
    description = tool.description or ""
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise _Refused(
            MCP_LIST_INVALID,
            f"{where}, tool {name!r}: its description has {len(description):,} characters, "
            f"over {MAX_DESCRIPTION_CHARS:,}.",
        )
    schema = tool.input_schema
    size = len(json.dumps(schema))
    if size > MAX_SCHEMA_BYTES:
        raise _Refused(
            MCP_LIST_INVALID,
            f"{where}, tool {name!r}: its input schema takes {size:,} bytes, over "
            f"{MAX_SCHEMA_BYTES:,}.",
        )
    try:
        check_schema(schema)
    except DefinitionError as error:
        raise _Refused(
            MCP_LIST_INVALID, f"{where}, tool {name!r}: invalid input schema: {error.message}"
        ) from None
    if schema.get("type") != "object":
        raise _Refused(
            MCP_LIST_INVALID, f"{where}, tool {name!r}: its input schema must be of an object."
        )
    if server.moves(name) and RUN_IN_BACKGROUND in schema.get("properties", {}):
        raise _Refused(
            MCP_LIST_INVALID,
            f"{where}, tool {name!r}: it takes an argument named {RUN_IN_BACKGROUND!r}, the "
            "flag of a tool that may run in the background; leave it out of background=.",
        )
    annotations = (
        tool.annotations.model_dump(by_alias=True, exclude_none=True)
        if (tool.annotations is not None)
        else {}
    )
    return McpToolRecord(
        server=server.name,
        name=name,
        tool=visible,
        description=description,
        input_schema=schema,
        annotations=annotations,
        retry_safe=server.retries(name),
    )


__all__ = ["MAX_DESCRIPTION_CHARS", "MAX_LISTING_BYTES", "MAX_TOOLS", "list_tools"]

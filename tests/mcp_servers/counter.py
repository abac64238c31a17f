"""A test-owned stateful MCP server, built with the MCP SDK's server API (`python -m
tests.mcp_servers.counter`): a counter whose value lives as long as the client session
(over stdio, one process per session), for the per-Interaction session tests.

Tools: `increment` (add `by`, answer the new value) and `get` (read-only: the value).
The call log (`MCP_CALL_LOG`, one fsynced JSON line each) records `opened` when the
session starts, every call with the value it answered, and `closed` when the client
closed the session (stdin ended), each with the process id naming the session.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

_value = 0


def _log(event: str, **fields: Any) -> None:
    path = os.environ.get("MCP_CALL_LOG")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps({"tool": event, "pid": os.getpid(), **fields}) + "\n")
        log.flush()
        os.fsync(log.fileno())


def tools() -> list[types.Tool]:
    by = {"by": {"type": "integer"}}
    return [
        types.Tool(
            name="increment",
            description="Add `by` to this session's counter; answer the new value.",
            input_schema={"type": "object", "properties": by, "required": ["by"]},
            annotations=types.ToolAnnotations(destructive_hint=False),
        ),
        types.Tool(
            name="get",
            description="This session's counter.",
            input_schema={"type": "object", "properties": {}},
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
    ]


async def _list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=tools())


async def _call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    global _value
    arguments = dict(params.arguments or {})
    if params.name == "increment":
        _value += int(arguments.get("by", 1))
    _log(params.name, arguments=arguments, value=_value)
    return types.CallToolResult(content=[types.TextContent(type="text", text=str(_value))])


def server() -> Server[Any]:
    return Server("counter", on_list_tools=_list_tools, on_call_tool=_call_tool)


async def _stdio() -> None:
    from mcp.server.stdio import stdio_server

    app = server()
    _log("opened")
    try:
        async with stdio_server() as (read, write):
            await app.run(read, write, app.create_initialization_options())
    finally:
        _log("closed")


if __name__ == "__main__":
    del sys.argv[1:]
    anyio.run(_stdio)

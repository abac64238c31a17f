"""One MCP tool call, as the body of an ordinary tool: sent at most once, classified.

Activity side. An MCP tool reaches `scope.tool` as a `Tool` built from its recorded
record (`McpTool`), so the executor's rules apply unchanged: the permission is checked
and the arguments validated against the recorded schema before anything is sent,
middleware runs around it, and the outcome is classified as for a local tool:

- the server answered with a result -> success (its text content for the model; a
  structured result as JSON when it sent no text);
- a result with `isError`, or a JSON-RPC error saying the server refused the call
  (method not found, invalid params, or a code the server defines) -> `ToolFailure`: a
  definite failure the model sees;
- no connection could be opened (the request was never written) -> `ToolFailure` too,
  saying nothing was sent;
- anything else once the request may have been written (the connection closed, the
  server died, the MCP SDK's timeout, a response that does not parse, cancellation)
  -> the outcome is unknown (`HostFailure`): an unknown Effect for a person to settle.
  The connection is dropped (the next call opens a new one) and this call is never sent
  again. The JSON-RPC codes the MCP SDK also produces itself when a transport fails
  (`AMBIGUOUS_CODES`: connection closed, request timeout, an HTTP error status read as an
  internal error, a response that does not parse, an unexpected response) read as
  unknown even when a server sent them: the safe reading, since an internal error may
  come from a tool that had begun.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from scope_temporal.definition import Definition
from scope_temporal.interaction.effects import ToolEffectRequest
from scope_temporal.mcp.binding import bound_definition, spec_of
from scope_temporal.mcp.connections import McpConnections, McpUnavailable
from scope_temporal.mcp.values import McpListing, McpServer, McpToolRecord
from scope_temporal.tools.decorator import Tool
from scope_temporal.tools.failures import HostFailure, ToolFailure
from scope_temporal.tools.output import ToolOutput
from scope_temporal.tools.registry import ToolRegistry
from scope_temporal.tools.validation import decode_arguments

AMBIGUOUS_CODES = frozenset({-32000, -32001, -32600, -32603, -32700})
"""CONNECTION_CLOSED, REQUEST_TIMEOUT, INVALID_REQUEST, INTERNAL_ERROR, PARSE_ERROR: codes
the MCP SDK's client transports synthesize themselves (see the module docstring)."""


class _Arguments(BaseModel):
    """Unused: an MCP tool takes its arguments as the JSON object the schema checked."""


async def _never(**_: Any) -> None:  # pragma: no cover - McpTool.invoke replaces the body
    raise AssertionError("an MCP tool is invoked through McpTool.invoke")


class McpTool(Tool[..., Any]):
    """A recorded MCP tool bound on the worker: its body sends `tools/call` once."""

    def __init__(
        self, record: McpToolRecord, server: McpServer, connections: McpConnections
    ) -> None:
        super().__init__(_never, spec_of(record, server), (), _Arguments)
        self.record = record
        self._connections = connections

    async def invoke(self, arguments_json: str) -> object:
        record = self.record
        arguments = decode_arguments(arguments_json)
        try:
            client = await self._connections.client(record.server)
        except McpUnavailable as error:
            raise ToolFailure(f"{error}. The call of {record.name!r} was not sent.") from None
        from mcp import MCPError

        try:
            result = await client.call_tool(record.name, arguments)
        except MCPError as error:
            if error.code in AMBIGUOUS_CODES:
                await self._connections.drop(record.server, client)
                raise HostFailure(_ambiguous(record, f"{error.message} ({error.code})")) from None
            raise ToolFailure(
                f"MCP server {record.server!r} refused the call of {record.name!r}: "
                f"{error.message} (JSON-RPC error {error.code})"
            ) from None
        except Exception as error:
            await self._connections.drop(record.server, client)
            raise HostFailure(_ambiguous(record, f"{type(error).__name__}: {error}")) from None
        text = _text_of(result)
        if result.is_error:
            raise ToolFailure(text or f"MCP tool {record.name!r} reported an error.")
        structured = result.structured_content
        return ToolOutput(for_llm=text, for_user=structured) if structured is not None else text


def _ambiguous(record: McpToolRecord, what: str) -> str:
    return (
        f"MCP server {record.server!r}, tool {record.name!r}: the request was sent and no "
        f"result came back ({what}); whether the tool ran is unknown. It is not sent again."
    )


def _text_of(result: Any) -> str:
    """The model-visible text: the text blocks; other blocks as JSON; else the
    structured content as JSON."""
    parts: list[str] = []
    for block in result.content:
        if getattr(block, "type", None) == "text":
            parts.append(block.text)
        else:
            parts.append(
                json.dumps(block.model_dump(mode="json", by_alias=True, exclude_none=True))
            )
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


def mcp_tool_for(
    record: McpToolRecord, servers: tuple[McpServer, ...], connections: McpConnections
) -> McpTool | None:
    """The worker-side tool of a recorded MCP call (None: the Definition does not declare
    its server, or its allow list leaves the tool out: a forged request)."""
    server = next((s for s in servers if s.name == record.server), None)
    if server is None or record.tool != server.tool_prefix + record.name:
        return None
    if server.allow is not None and record.name not in server.allow:
        return None
    return McpTool(record, server, connections)


def mcp_call_tools(
    request: ToolEffectRequest, definition: Definition | None, connections: McpConnections
) -> tuple[Definition | None, ToolRegistry]:
    """The Definition (its recorded tool bound) and the tool that serve an MCP call's
    attempt; an empty registry when the request is forged (the attempt is refused)."""
    record = request.mcp
    assert record is not None  # only MCP calls come here
    tool = None if definition is None else mcp_tool_for(record, definition.mcp_servers, connections)
    if definition is None or tool is None:
        return definition, ToolRegistry()
    listing = McpListing(server=record.server, tools=(record,))
    return bound_definition(definition, (listing,)), ToolRegistry([tool])


__all__ = ["McpTool", "mcp_call_tools", "mcp_tool_for"]

"""The MCP server of the `mcp` benchmark: W's `lookup` tool, served over stdio with the
MCP SDK's server API (`python -m bench.mcp_server`)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool()
def lookup(n: int) -> str:
    """Return a fact."""
    return f"fact {n}"


if __name__ == "__main__":
    server.run("stdio")

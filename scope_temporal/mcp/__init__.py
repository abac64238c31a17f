"""MCP servers as tool sources (docs/mcp.md).

Only the values load here (workflow-safe): `McpServer` (and `McpSampling`) for a
Definition, `McpStdio` / `McpHttp` for a worker. The client side
(`scope_temporal.mcp.connections`, `.listing`, `.calls`) imports the `mcp` package
(`pip install 'scope-temporal[mcp]'`) and loads only on a worker or `LocalRunner` that
serves MCP servers.
"""

from scope_temporal.mcp.values import McpHttp, McpSampling, McpServer, McpStdio

__all__ = ["McpHttp", "McpSampling", "McpServer", "McpStdio"]

"""The reference app's MCP server: `mcp-server-time` from the package index, beside the
local tools (docs/mcp.md).

The Definition names the server (`time_server`); how the worker reaches it (`mcp_servers`:
a stdio subprocess of this Python) stays on the worker. Guarded: without the `mcp` extra
(`pip install 'scope-temporal[mcp]'`) and the server's package, `AVAILABLE` is False, the
Definition names no server and the worker reaches none, so the app runs as before.
"""

from __future__ import annotations

import importlib.util
import sys

from scope_temporal.mcp import McpHttp, McpServer, McpStdio

AVAILABLE = all(importlib.util.find_spec(name) is not None for name in ("mcp", "mcp_server_time"))
"""Whether this environment has the MCP SDK and `mcp-server-time`."""

time_server = McpServer("time", allow=("get_current_time",), permission="read")
"""What `ops` declares: one read-only tool, offered to its model as `time_get_current_time`."""

mcp_servers: dict[str, McpStdio | McpHttp] = (
    {"time": McpStdio(sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"])}
    if AVAILABLE
    else {}
)
"""How the worker reaches it (none when unavailable)."""

__all__ = ["AVAILABLE", "mcp_servers", "time_server"]

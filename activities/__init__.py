"""The reference app's tools: the code that does I/O, run by the worker in `scope.tool`.

What a user writes: plain functions with `@tool`. The SDK never imports this package; the
worker (`scope-temporal worker`) and `scope-temporal demo` load it from the project root.
"""

from activities.clock import mcp_servers
from activities.exports import ExportLogs
from activities.incidents import read_runbook, search_logs
from activities.operations import open_ticket, restart_service

tools = [search_logs, read_runbook, restart_service, open_ticket, ExportLogs]

__all__ = [
    "ExportLogs",
    "mcp_servers",
    "open_ticket",
    "read_runbook",
    "restart_service",
    "search_logs",
    "tools",
]

"""The Definitions and tools behind the checked-in histories (keep them unchanged: a change
here must make `test_checked_in_histories_replay` fail, which is the point)."""

from __future__ import annotations

from scope_temporal import (
    Definition,
    HostFailure,
    require_tool_input,
    tool,
    tool_input_continuation,
)

APPROVAL = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@tool(permission="read")
def read_status(service: str) -> str:
    """Read a service's status."""
    return f"{service}: degraded"


@tool(permission="write")
def restart(service: str) -> str:
    """Restart a service after approval."""
    if tool_input_continuation() is None:
        require_tool_input(f"Restart {service}?", APPROVAL, state={"service": service})
    return f"{service} restarted"


@tool(permission="write")
def notify(channel: str) -> str:
    """Notify a channel (its outcome is ambiguous in the recording)."""
    raise HostFailure("chat gateway timed out")


recorded = Definition(
    "recorded",
    instructions="You fix services.",
    tools=[read_status, restart, notify],
    max_concurrent_tool_calls=2,
    tool_call_workflows="always",
)

recorded_on_demand = Definition(
    "recorded-on-demand",
    instructions="You fix services.",
    tools=[read_status, restart, notify],
    max_concurrent_tool_calls=2,
    tool_call_workflows="on_demand",
)

DEFINITIONS = [recorded, recorded_on_demand]
TOOLS = [read_status, restart, notify]

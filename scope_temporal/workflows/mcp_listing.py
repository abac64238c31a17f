"""Workflow side: a run's MCP tool lists, fetched once and recorded in its history.

Everything here runs inside the workflow. When a new Interaction of a Definition that
names MCP servers starts, `scope.mcp.list` (never retried) fetches and checks their
tool lists on a worker; its result is in history, so a replay reads the same lists back
(even after a server changed its tools), and continue-as-new carries them in the run's
settings. A list that cannot be fetched, or is refused, fails the Interaction before its
first model call: nothing ran.
"""

from __future__ import annotations

from datetime import timedelta  # deterministic: a value type, no clock

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from scope_temporal import names
from scope_temporal.definition import Definition
from scope_temporal.errors import MCP_LIST_FAILED
from scope_temporal.mcp.values import McpListed, McpListInput, McpListOutcome, McpListRefused
from scope_temporal.payloads import RunSettings
from scope_temporal.workflows.task_commands import command_issued

LIST_TIMEOUT = timedelta(seconds=60)
"""How long fetching every list of one Definition may take (starting stdio servers too)."""


async def with_mcp_tools(
    definition: Definition, settings: RunSettings
) -> RunSettings | McpListRefused:
    """`settings` with the Definition's MCP tool lists recorded (as they are when the
    Definition names no MCP server, or they were recorded before), or why not."""
    if settings.mcp_tools is not None or not definition.mcp_servers:
        return settings
    command_issued()
    servers = ", ".join(s.name for s in definition.mcp_servers)
    try:
        outcome: McpListOutcome = await workflow.execute_activity(
            names.MCP_LIST_ACTIVITY,
            McpListInput(definition=definition.name, digest=definition.digest),
            result_type=McpListed | McpListRefused,  # type: ignore[arg-type]
            start_to_close_timeout=LIST_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=1),
            summary=f"MCP tool lists: {servers}",
        )
    except ActivityError as error:
        cause = error.cause if error.cause is not None else error
        return McpListRefused(
            code=MCP_LIST_FAILED,
            message=f"Fetching the tool lists of MCP servers {servers} failed: {cause}",
        )
    if isinstance(outcome, McpListRefused):
        return outcome
    return settings.model_copy(update={"mcp_tools": outcome.listings})


__all__ = ["with_mcp_tools"]

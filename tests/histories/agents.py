"""The Definitions and tools behind the checked-in histories (keep them unchanged: a change
here must make `test_checked_in_histories_replay` fail, which is the point)."""

from __future__ import annotations

from datetime import timedelta

from scope_temporal import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    Definition,
    Delegate,
    HostFailure,
    ModelRetry,
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

# --- later recordings: one representative run each ---------------------------------

recorded_helper = Definition(
    "recorded-helper", tools=[read_status], max_model_calls=3, tool_call_workflows="always"
)

recorded_delegates = Definition(
    "recorded-delegates",
    tools=[read_status],
    delegates=[Delegate("summarize", "Summarise a service's state", definition="recorded-helper")],
    max_concurrent_tool_calls=2,
    tool_call_workflows="always",
)
"""A batch of a delegate (a child Interaction with its own tool call) and a read."""

recorded_steer_batch = Definition(
    "recorded-steer-batch",
    tools=[read_status, restart],
    max_concurrent_tool_calls=2,
    tool_call_workflows="always",
)
"""A steer that arrives while a batch runs (one call waits for approval): applied after it."""

recorded_continue_as_new = Definition(
    "recorded-continue-as-new", tools=[read_status], tool_call_workflows="on_demand"
)
"""Three model calls, continued-as-new after each (one history per run)."""

recorded_model_unknown = Definition(
    "recorded-model-unknown", tools=[read_status], tool_call_workflows="always"
)
"""The first model call's outcome is unknown; the host settles it with the response."""


def no_broadcast(request: ApprovalRequest) -> ApprovalDecision:
    """The approver of the approval recordings: never notify #all; a person decides the rest."""
    if request.arguments.get("channel") == "#all":
        return ApprovalDecision.deny("never notify #all")
    return ApprovalDecision.ask()


APPROVALS = ApprovalPolicy.deny_writes(approver=no_broadcast)

recorded_approvals = Definition(
    "recorded-approvals",
    tools=[read_status, restart, notify],
    approval=APPROVALS,
    max_concurrent_tool_calls=2,
    tool_call_workflows="always",
)
"""Approval waits: a denial, an approval remembered for the tool (then the tool's own
input wait), a later call approved by the remembered answer, a call the approver denies."""

recorded_approvals_on_demand = Definition(
    "recorded-approvals-on-demand",
    tools=[read_status, restart, notify],
    approval=APPROVALS,
    max_concurrent_tool_calls=2,
    tool_call_workflows="on_demand",
)
"""The same with `on_demand`: the calls waiting for approval are promoted at once."""

recorded_model_retry = Definition(
    "recorded-model-retry",
    tools=[read_status],
    tool_call_workflows="always",
    model_retry=ModelRetry(initial_interval=timedelta(milliseconds=500), jitter=0),
    max_total_tokens=100_000,
)
"""Model call #1 is refused with a 429 (a durable timer, then a new Effect), then its
outcome is unknown; the host sends it again (`retry_model_call`), which answers."""

DEFINITIONS = [
    recorded,
    recorded_on_demand,
    recorded_helper,
    recorded_delegates,
    recorded_steer_batch,
    recorded_continue_as_new,
    recorded_model_unknown,
    recorded_approvals,
    recorded_approvals_on_demand,
    recorded_model_retry,
]
TOOLS = [read_status, restart, notify]

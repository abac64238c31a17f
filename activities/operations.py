"""Tools that change things: restart a service (after human approval), open a ticket.

`restart_service` is an `exec` tool: it runs alone (sequential), and before acting it asks
a human through a tool input wait (`require_tool_input`). The Interaction keeps running its
other calls meanwhile; the answer is validated against `APPROVAL_SCHEMA` before the tool is
entered again with it.

`open_ticket` is *deferred*: the model does not see it until `read_runbook` advertises it.

Set `SCOPE_DEMO_UNKNOWN_RESTART=1` on the worker to make the restart's outcome *unknown*
(the fleet API "drops the connection" after the request): the Interaction then waits for
you to check and settle it with `scope-temporal resolve`.

Both use the call's `effect_id` (stable across retries, recovery and continue-as-new) as the
idempotency key, the way a real integration would pass it to the external system.
"""

from __future__ import annotations

import hashlib
import os
from typing import Literal

from activities.incidents import services
from scope_temporal import (
    HostFailure,
    ToolFailure,
    ToolOutput,
    current_tool_call,
    require_tool_input,
    tool,
    tool_input_continuation,
)

APPROVAL_SCHEMA = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "description": "true to go ahead"},
        "note": {"type": "string", "description": "why (kept with the result)"},
    },
    "required": ["approved"],
    "additionalProperties": False,
}

# What this sample "fleet" has done, keyed by idempotency key (a real tool calls an API).
RESTARTS: dict[str, str] = {}
TICKETS: dict[str, str] = {}


@tool(permission="exec")
def restart_service(name: str, reason: str) -> ToolOutput:
    """Restart a service (asks an operator for approval first).

    Args:
        name: the service, e.g. "payments-worker".
        reason: why it should be restarted (shown to the operator).
    """
    if name not in services():
        raise ToolFailure(f"unknown service {name!r}; known services: {services()}")
    continuation = tool_input_continuation()
    if continuation is None:
        require_tool_input(
            f"Restart {name}? Reason: {reason}", APPROVAL_SCHEMA, state={"service": name}
        )
    _, answer = continuation
    note = str(answer.get("note") or "")
    if not answer["approved"]:
        because = f": {note}" if note else ""
        raise ToolFailure(f"the operator declined the restart of {name}{because}")
    key = current_tool_call().effect_id
    RESTARTS.setdefault(key, name)
    if os.environ.get("SCOPE_DEMO_UNKNOWN_RESTART"):
        # Simulates the classic ambiguous failure: the request went out, the answer never
        # came back. The call's outcome becomes *unknown*; nothing retries it by itself.
        raise HostFailure(
            f"the fleet API connection dropped after the restart of {name} "
            "was requested: did it restart? Check, then settle the call."
        )
    return ToolOutput(
        f"{name} restarted (4 replicas rolled); its database connections were released.",
        for_user={"service": name, "approved_note": note},
        ref=f"restart:{key}",
    )


@tool(permission="write", deferred=True)
def open_ticket(
    title: str, body: str, severity: Literal["sev1", "sev2", "sev3"] = "sev2"
) -> ToolOutput:
    """Open a ticket for the team that owns the failing service.

    Args:
        title: one line.
        body: what happened, the evidence and what is asked of the team.
        severity: sev1 (outage), sev2 (customers see errors) or sev3.
    """
    key = current_tool_call().effect_id
    number = int(hashlib.sha256(key.encode()).hexdigest()[:6], 16) % 9000 + 1000
    ticket = TICKETS.setdefault(key, f"OPS-{number}")
    return ToolOutput(
        f"opened {ticket} ({severity}): {title}",
        ref=ticket,
        for_user={"ticket": ticket, "severity": severity},
    )

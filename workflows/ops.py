"""`ops`: the on-call assistant that investigates an incident in the sample data.

A Definition is pure description: tools are bound by their specs, the model by name, and
the completion validator is a deterministic function (it runs inside the workflow).
"""

from __future__ import annotations

import re

from activities import ExportLogs, open_ticket, read_runbook, restart_service, search_logs
from activities.clock import AVAILABLE, time_server
from scope_temporal import CompletionCandidate, CompletionDecision, Definition, Delegate, ToolSet

_ROOT_CAUSE = re.compile(r"^\s*\**root cause\**\s*:\s*\S", re.IGNORECASE | re.MULTILINE)


def require_root_cause(candidate: CompletionCandidate) -> CompletionDecision:
    """Accept only a report with a line starting `Root cause:` (deterministic, no I/O)."""
    if _ROOT_CAUSE.search(candidate.output_text):
        return CompletionDecision.accept()
    return CompletionDecision.reject(
        "The report must state the root cause on its own line starting with 'Root cause:' "
        "(which component failed and why, from the evidence you gathered). Rewrite it."
    )


ops = Definition(
    "ops",
    description="On-call assistant: investigates an incident, fixes it with approval, reports.",
    instructions=(
        "You are the on-call ops assistant. Investigate the incident with search_logs and "
        "read_runbook (call them in parallel) while export_logs saves the logs as evidence "
        "in the background, find the root cause, use the summarize "
        "delegate to condense the evidence, and follow the runbook: restart_service needs an "
        "operator's approval; open a ticket when the runbook says so. Before you report, read "
        "the export's result with task_output. Finish with a short report that has a line "
        "starting 'Root cause:'."
        + (
            " Note when the investigation ran (UTC) with time_get_current_time."
            if AVAILABLE
            else ""
        )
    ),
    model="default",
    tools=ToolSet(
        "ops-tools",
        [search_logs, read_runbook, restart_service, ExportLogs],
        deferred=[open_ticket],
    ),
    delegates=[
        Delegate(
            "summarize",
            "Condense incident evidence (log lines) into a short summary.",
            definition="summarizer",
            max_model_calls=3,
            capabilities={"read"},
        ),
    ],
    mcp_servers=[time_server] if AVAILABLE else [],
    max_model_calls=12,
    max_concurrent_tool_calls=4,
    completion_validator=require_root_cause,
)

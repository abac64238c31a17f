"""The offline, rule-based planner: the reference app's default model (no LLM involved).

It is a `ScriptedModel` *function* model: each call reads the request (the conversation so
far and the tools on offer) and decides the next step with fixed rules. It lets the demo
and the tests run the whole product offline and deterministically; set `OPENAI_API_KEY`
or `SCOPE_MODEL_BASE_URL` to put a real model in its place (see `activities/models.py`).

The investigation it plays, one step per model call:
  1. search every log for ERROR and read the runbook matching the request (in parallel),
     start exporting the logs as evidence (`export_logs`, a background tool: after
     half a second it moves to the background and the investigation goes on), and ask
     the MCP server `time` for the time (when the environment has it);
  2. find who holds the database connections; read that service's log and the
     connection runbook (in parallel);
  3. ask the `summarize` delegate to condense the evidence;
  4. restart the culprit (`restart_service` asks a human for approval);
  5. open a ticket, if a runbook made `open_ticket` available;
  6. read the export's result (`task_output`, waiting for it to finish);
  7. reply with a first draft -- without a "Root cause:" line, so the completion
     validator rejects it and you can watch the feedback loop;
  8. reply with the final report.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from scope_temporal import Message, ModelRequest, Response, ToolCall, ToolResult, reply

LABEL = "offline rule-based planner (no LLM; set OPENAI_API_KEY or SCOPE_MODEL_BASE_URL for one)"
FOOTER = (
    "(Written by the offline rule-based planner: no LLM was called. Set OPENAI_API_KEY or "
    "SCOPE_MODEL_BASE_URL and SCOPE_MODEL to use a real model.)"
)
_SKIP_RESTART = re.compile(r"\b(do not|don't|dont|never|no)\s+restart", re.I)


def plan(request: ModelRequest) -> Response:
    """Decide the next step of either reference Definition."""
    if any(t.name == "search_logs" for t in request.tools):
        return _investigate(request)
    return _summarize(request)


# --- the ops assistant ----------------------------------------------------------------


class _Progress:
    """What the conversation shows has been done so far."""

    def __init__(self, messages: tuple[Message, ...]) -> None:
        self.done: list[tuple[ToolCall, ToolResult]] = []
        self.drafts = 0
        self.prompt = next((m.text for m in messages if m.role == "user"), "")
        self.steers: list[str] = []
        calls: dict[str, ToolCall] = {}
        users = 0
        after_draft = False
        for message in messages:
            if message.role == "assistant":
                calls = {call.id: call for call in message.tool_calls}
                after_draft = not message.tool_calls
                self.drafts += after_draft
                continue
            if message.role == "tool":
                for result in message.tool_results:
                    call = calls.get(result.call_id)
                    if call is not None:
                        self.done.append((call, result))
            elif message.role == "user":
                if '"type": "task_notification"' in message.text:
                    continue  # a background task's news: task_output reads it anyway
                users += 1
                if users > 1 and not after_draft:  # validator feedback follows a draft
                    self.steers.append(message.text)
            after_draft = False

    def results(self, name: str) -> list[ToolResult]:
        return [result for call, result in self.done if call.name == name]

    def lines(self) -> list[str]:
        """Every log line the searches returned, once each, in order."""
        found: dict[str, None] = {}
        for result in self.results("search_logs"):
            for line in result.content.splitlines():
                if re.match(r"^[a-z0-9-]+: \d{4}-", line):
                    found[line] = None
        return list(found)


def _facts(lines: list[str]) -> dict[str, str]:
    """What the rules can establish from the log lines."""
    facts: dict[str, str] = {}
    holders = Counter(
        m.group(1) for line in lines for m in re.finditer(r"held by ([a-z0-9-]+)", line)
    )
    if holders:
        facts["suspect"] = holders.most_common(1)[0][0]
    for line in lines:
        if (m := re.search(r"(\d+)/(\d+), (\d+) held by", line)) and "held" not in facts:
            facts["held"], facts["total"] = m.group(3), m.group(2)
            facts["db"] = line.split(":", 1)[0]
        if (m := re.search(r"upstream=([a-z0-9-]+)", line)) and "upstream" not in facts:
            facts["upstream"], facts["caller"] = m.group(1), line.split(":", 1)[0]
        suspect = facts.get("suspect")
        if not suspect or not line.startswith(f"{suspect}:"):
            continue
        if m := re.search(r"version=(v[\w.]+)", line):
            facts["version"] = m.group(1)
        if "leak" in line:
            facts["leak"] = "yes"
    return facts


def _investigate(request: ModelRequest) -> Response:
    progress = _Progress(request.messages)
    facts = _facts(progress.lines())
    suspect = facts.get("suspect")
    offered = {t.name for t in request.tools}
    searches = progress.results("search_logs")
    if not searches:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("search_logs", {"query": "ERROR"}),
            ("read_runbook", {"query": progress.prompt}),
        ]
        if "export_logs" in offered:
            calls.append(("export_logs", {}))
        if "time_get_current_time" in offered:  # the MCP server `time` (activities/clock.py)
            calls.append(("time_get_current_time", {"timezone": "UTC"}))
        return reply.tool_calls(
            *calls, text="Searching every log for errors and looking up the matching runbook."
        )
    if len(searches) == 1 and suspect:
        return reply.tool_calls(
            ("search_logs", {"query": suspect, "service": suspect}),
            ("read_runbook", {"query": "too many connections held by a service"}),
            text=f"{suspect} holds most database connections; reading its log and the runbook.",
        )
    if not progress.results("summarize"):
        evidence = [line for line in progress.lines() if re.search(r"ERROR|WARN|deploy", line)]
        return reply.tool_calls(
            (
                "summarize",
                {
                    "task": "Summarise this incident evidence, one line per service:\n"
                    + "\n".join(evidence[:25])
                },
            ),
            text="Asking the summarizer to condense the evidence.",
        )
    skip_restart = any(_SKIP_RESTART.search(text) for text in progress.steers)
    if suspect and not skip_restart and not progress.results("restart_service"):
        reason = (
            f"it holds {facts.get('held', 'most')} of {facts.get('total', 'the')} "
            f"{facts.get('db', 'database')} connections"
        )
        if "version" in facts:
            reason += f" since deploy {facts['version']}"
        return reply.tool_calls(
            ("restart_service", {"name": suspect, "reason": reason}),
            text=f"Restarting {suspect} releases the connections it holds (needs approval).",
        )
    if "open_ticket" in offered and not progress.results("open_ticket"):
        title = f"{suspect or 'unknown service'} exhausts database connections"
        if "version" in facts:
            title += f" after deploy {facts['version']}"
        return reply.tool_calls(
            (
                "open_ticket",
                {"title": title, "body": _report_body(progress, facts), "severity": "sev2"},
            ),
            text="Recording the incident for the owning team.",
        )
    export = _envelope(progress.results("export_logs"))
    if export.get("type") == "launch_result" and not progress.results("task_output"):
        return reply.tool_calls(
            ("task_output", {"task_id": export["task_id"], "wait_seconds": 60}),
            text="Waiting for the evidence export to finish.",
        )
    if progress.drafts == 0:
        # A first draft without the root-cause line: the completion validator sends it back.
        return reply.text(f"Incident summary\n\n{_report_body(progress, facts)}")
    return reply.text(
        f"Incident report\n\nRoot cause: {_root_cause(facts)}\n\n"
        f"{_report_body(progress, facts)}\n\n{FOOTER}"
    )


def _root_cause(facts: dict[str, str]) -> str:
    suspect = facts.get("suspect")
    if not suspect:
        return "not established from the logs; see the evidence below."
    cause = suspect
    if "version" in facts:
        cause += f" {facts['version']}"
    cause += " leaks database connections" if "leak" in facts else " holds too many connections"
    if "held" in facts:
        cause += f" ({facts['held']} of {facts['total']} {facts.get('db', 'database')} connections)"
    if "upstream" in facts:
        cause += (
            f", so {facts['upstream']} cannot get a connection and {facts['caller']} "
            "times out with 502"
        )
    return cause + "."


def _envelope(results: list[ToolResult]) -> dict[str, Any]:
    """The JSON envelope of the latest result (background tools answer with one)."""
    try:
        found = json.loads(results[-1].content) if results else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _export_line(progress: _Progress) -> str | None:
    """What became of the evidence export, from its foreground result or its task's output."""
    done = _envelope(progress.results("task_output")) or _envelope(progress.results("export_logs"))
    data = done.get("data")
    if done.get("status") == "completed" and isinstance(data, dict):
        return f"- export_logs: {data.get('files')} evidence file(s) in {data.get('folder')}"
    if done:
        return f"- export_logs: {done.get('status')} {done.get('error') or ''}".rstrip()
    return None


def _clock_line(progress: _Progress) -> str | None:
    """When the investigation ran, as the MCP time server said (if it was offered)."""
    said = _envelope(progress.results("time_get_current_time"))
    if not said:
        return None
    return f"- investigated at {said.get('datetime')} (MCP server time)"


def _report_body(progress: _Progress, facts: dict[str, str]) -> str:
    summary = progress.results("summarize")
    evidence = summary[-1].content if summary else "\n".join(progress.lines()[:10])
    actions = [line for line in [_clock_line(progress), _export_line(progress)] if line]
    for name in ("restart_service", "open_ticket"):
        for result in progress.results(name):
            state = "failed: " if result.is_error else ""
            actions.append(f"- {name}: {state}{result.content.splitlines()[0]}")
    if not actions:
        actions.append("- none")
    if progress.steers:
        actions.append(f"- operator said: {progress.steers[0]}")
    return f"Evidence:\n{evidence}\n\nActions:\n" + "\n".join(actions)


# --- the summarizer delegate ------------------------------------------------------------


def _summarize(request: ModelRequest) -> Response:
    task = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
    per_service: dict[str, list[str]] = {}
    for line in task.splitlines():
        match = re.match(r"^([a-z0-9-]+): \S+ +(ERROR|WARN|INFO) +\S+ (.*)$", line)
        if match:
            per_service.setdefault(match.group(1), []).append(f"{match.group(2)} {match.group(3)}")
    if not per_service:
        return reply.text("Nothing to summarise: no log lines in the task.")
    out = []
    for service, entries in per_service.items():
        errors = [e for e in entries if e.startswith("ERROR")]
        pick = (errors or entries)[-1]
        out.append(f"- {service}: {len(errors)} error(s), e.g. {pick[:110]}")
    return reply.text("\n".join(out))

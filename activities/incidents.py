"""Read-only incident tools: search the sample logs, read a runbook.

Both declare `permission="read"`, so the Interaction runs them in parallel (up to the
Definition's `max_concurrent_tool_calls`). The data is the sample incident shipped in
`activities/data/`: checkout is returning 502s because a deploy leaks database connections.
"""

from __future__ import annotations

import re
from pathlib import Path

from scope_temporal import ToolFailure, ToolOutput, advertise_tools, tool

DATA = Path(__file__).parent / "data"
LOGS = DATA / "logs"
RUNBOOKS = DATA / "runbooks"


def services() -> list[str]:
    """The services that have a log file (the only ones the tools know)."""
    return sorted(path.stem for path in LOGS.glob("*.log"))


@tool(permission="read")
def search_logs(query: str, service: str | None = None, limit: int = 30) -> ToolOutput:
    """Search the service logs for lines containing a text (case-insensitive).

    Args:
        query: the text to look for, e.g. "ERROR" or "payments-worker".
        service: only this service's log (e.g. "payments-db"); all services when omitted.
        limit: at most this many lines are returned.
    """
    if service is not None and service not in services():
        raise ToolFailure(f"no logs for service {service!r}; known services: {services()}")
    paths = [LOGS / f"{service}.log"] if service else sorted(LOGS.glob("*.log"))
    needle = query.lower()
    hits = [
        f"{path.stem}: {line}"
        for path in paths
        for line in path.read_text().splitlines()
        if needle in line.lower()
    ]
    shown = hits[: max(1, limit)]
    text = "\n".join(shown) if shown else f"no log line contains {query!r}"
    if len(hits) > len(shown):
        text += f"\n... {len(hits) - len(shown)} more lines"
    return ToolOutput(
        text,
        for_user=f"{len(hits)} matching line(s) in {len(paths)} log(s)",
        metadata={"matches": len(hits)},
    )


@tool(permission="read")
def read_runbook(query: str) -> ToolOutput:
    """Find the runbook that best matches a symptom and return its text.

    Runbooks that tell you to open a ticket make the `open_ticket` tool available.

    Args:
        query: the symptom or topic, e.g. "checkout returns 502" or "too many connections".
    """
    words = set(re.findall(r"[a-z0-9]+", query.lower()))
    best: tuple[int, Path] | None = None
    for path in sorted(RUNBOOKS.glob("*.md")):
        text = path.read_text().lower()
        score = sum(1 for word in words if len(word) > 2 and word in text)
        if best is None or score > best[0]:
            best = (score, path)
    if best is None or best[0] == 0:
        raise ToolFailure(f"no runbook matches {query!r}")
    path = best[1]
    text = path.read_text()
    if "open_ticket" in text:
        advertise_tools("open_ticket")  # committed only if this call succeeds
    return ToolOutput(f"[runbook {path.stem}]\n{text}", ref=f"runbooks/{path.name}")

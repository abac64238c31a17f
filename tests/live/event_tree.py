"""The tree the event-stream tests follow (live: test_live_events.py; in-process:
tests/unit/test_events_local.py): at once an input wait, an unknown outcome, a delegate
and a background job with progress; the reply streams once the job was seen to end."""

from __future__ import annotations

import asyncio

from scope_temporal import (
    Definition,
    Delegate,
    HostFailure,
    ModelRequest,
    Response,
    reply,
    require_tool_input,
    stream_delta,
    tool,
    tool_input_continuation,
)
from tests.live.background_tools import Job as job

APPROVAL = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}


@tool(permission="write")
def restart(service: str) -> str:
    """Restart a service (asks first)."""
    continued = tool_input_continuation()
    if continued is None:
        require_tool_input(f"Restart {service}?", APPROVAL)  # raises: the call waits
    assert continued is not None
    _, answer = continued
    return f"{service} restarted" if answer["approved"] else "not restarted"


@tool(permission="write")
def notify(channel: str) -> str:
    """Notify a channel (its connection drops: the outcome is unknown)."""
    raise HostFailure("the chat API connection dropped")


class Scenario:
    """A model for the whole tree: the root asks for a wait, an unknown, a delegate and a
    background job at once; once the test saw the job end, it streams its reply."""

    def __init__(self) -> None:
        self.job_seen = asyncio.Event()

    async def __call__(self, request: ModelRequest) -> Response:
        if request.messages[0].text.startswith("Summarise"):
            return reply.text("summary: all quiet")
        if request.model_call_seq == 1:
            return reply.tool_calls(
                ("restart", {"service": "web"}),
                ("notify", {"channel": "#ops"}),
                ("summarize", {"task": "Summarise the logs"}),
                ("job", {"steps": 3, "run_in_background": True}),
            )
        await asyncio.wait_for(self.job_seen.wait(), 30)
        for piece in ("All ", "done: ", "web ", "restarted."):
            stream_delta(piece)
            await asyncio.sleep(0.05)
        return reply.text("All done: web restarted.")


def definitions() -> list[Definition]:
    return [
        Definition(
            "events-ops",
            tools=[restart, notify, job],
            delegates=[Delegate("summarize", "Summarise", definition="events-helper")],
            max_concurrent_tool_calls=4,
        ),
        Definition("events-helper"),
    ]


__all__ = ["APPROVAL", "Scenario", "definitions", "job", "notify", "restart"]

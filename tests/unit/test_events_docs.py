"""docs/events.md's host runs as written, here against a local run (`LocalRun.events` is
`InteractionHandle.events` in-process): it approves the wait, reports the unknown, prints
the streamed text, and returns the reply."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from scope_temporal import Message, ModelRequest, Response, ScriptedModel, reply, stream_delta
from scope_temporal.testing import LocalRunner
from tests.live.event_tree import definitions, job, notify, restart

PAGE = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def host_program() -> dict[str, Any]:
    match = re.search(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    assert match, "docs/events.md has no python block"
    namespace: dict[str, Any] = {}
    exec(compile(match.group(1), str(PAGE), "exec"), namespace)
    return namespace


async def test_the_host_of_the_events_page_runs_as_written(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def model(request: ModelRequest) -> Response:
        if request.model_call_seq == 1:
            return reply.tool_calls(("restart", {"service": "web"}))
        stream_delta("web ")
        stream_delta("restarted")
        return reply.text("web restarted")

    runner = LocalRunner(
        definitions=definitions(),
        tools=[restart, notify, job],
        models={"default": ScriptedModel(model)},
    )
    run = await runner.start("events-ops", [Message.user("fix web")])
    follow = host_program()["follow"]
    assert await follow(run) == "web restarted"
    shown = capsys.readouterr().out
    assert "→ restart started" in shown and "web restarted" in shown

"""Per-Interaction MCP sessions (docs/mcp.md, Stateful servers), in-process: the
declaration and its digest, the worker's session table (limit, idle bound, never
reopened), and `LocalRunner` runs against the test-owned stateful server
`tests.mcp_servers.counter` over stdio (a real subprocess per session, the real MCP SDK).
The live tests (`tests/live/test_live_mcp_sessions.py`) cover the Temporal side."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from scope_temporal import Definition, ModelRequest, Response
from scope_temporal.chat import ToolCall
from scope_temporal.driver.calls import attempt_tool
from scope_temporal.driver.transport import Lost
from scope_temporal.errors import MCP_SESSION_LOST, DefinitionError
from scope_temporal.interaction.effects import ToolEffectRequest
from scope_temporal.interaction.tool_call import ToolAttempt
from scope_temporal.mcp import McpServer, McpStdio
from scope_temporal.mcp.live_calls import LiveCalls
from scope_temporal.mcp.sessions import McpSessionLost, McpSessionRefusal, McpSessions
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.payloads import Route
from scope_temporal.testing import LocalRunner
from scope_temporal.tools.outcome import Failed, Unknown

ROOT = Path(__file__).resolve().parents[2]


def counter(log: Path) -> McpStdio:
    env = {"MCP_CALL_LOG": str(log), "PYTHONPATH": str(ROOT)}
    return McpStdio(sys.executable, ["-m", "tests.mcp_servers.counter"], env=env)


def logged(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def events(log: Path, event: str) -> list[dict[str, Any]]:
    return [e for e in logged(log) if e["tool"] == event]


def increments(times: int) -> ScriptedModel:
    """Increment the counter `times` times, one call per round, then say its values."""

    def plan(request: ModelRequest) -> Response:
        results = [r.content for m in request.messages for r in m.tool_results]
        if len(results) < times:
            return reply.tool_calls(("counter_increment", {"by": 1}))
        return reply.text(",".join(results))

    return ScriptedModel(plan)


def counted(session: str) -> Definition:
    return Definition("counted", mcp_servers=[McpServer("counter", session=session)])  # type: ignore[arg-type]


# --- the declaration -------------------------------------------------------------------


def test_session_worker_is_the_default_and_keeps_the_definition_digest() -> None:
    plain = Definition("d", mcp_servers=[McpServer("counter")])
    spelled = Definition("d", mcp_servers=[McpServer("counter", session="worker")])
    own = Definition("d", mcp_servers=[McpServer("counter", session="interaction")])
    assert "session" not in McpServer("counter").declaration()
    assert plain.digest == spelled.digest
    assert own.digest != plain.digest
    assert McpServer("counter", session="interaction").declaration()["session"] == "interaction"


def test_session_interaction_with_retry_safe_is_a_definition_error() -> None:
    with pytest.raises(DefinitionError, match="cannot be retry_safe"):
        McpServer("counter", session="interaction", retry_safe=True)
    with pytest.raises(DefinitionError, match="cannot be retry_safe"):
        McpServer("counter", session="interaction", retry_safe={"increment"})
    McpServer("counter", session="interaction", retry_safe=False)  # declared off: fine


# --- the worker's session table --------------------------------------------------------


async def test_a_worker_refuses_the_session_over_its_limit_and_says_what_to_do(log: Path) -> None:
    sessions = McpSessions({"counter": counter(log)}, LiveCalls(), limit=2)
    try:
        await sessions.open("counter", "a")
        await sessions.open("counter", "a")  # held already: the same one
        await sessions.open("counter", "b")
        with pytest.raises(McpSessionRefusal, match=r"holds 2 open MCP sessions.*mcp_session_idle"):
            await sessions.open("counter", "c")
        assert len(sessions) == 2 and len(events(log, "opened")) == 2
        assert await sessions.close("a", ("counter",)) == 1
        await sessions.open("counter", "c")  # room again
    finally:
        await sessions.aclose()


async def test_an_idle_session_is_closed_and_never_opened_again_by_a_call(log: Path) -> None:
    sessions = McpSessions({"counter": counter(log)}, LiveCalls(), idle=timedelta(seconds=0.3))
    try:
        await sessions.open("counter", "a")
        await sessions.client("counter", "a")
        sessions.release("counter", "a")
        for _ in range(100):
            if not sessions.holds("counter", "a"):
                break
            await asyncio.sleep(0.05)
        assert not sessions.holds("counter", "a") and sessions.closed_idle == 1
        with pytest.raises(McpSessionLost, match="without a call"):
            await sessions.client("counter", "a")
        assert len(events(log, "opened")) == 1  # the call opened nothing
    finally:
        await sessions.aclose()


async def test_a_session_in_use_is_not_idle(log: Path) -> None:
    sessions = McpSessions({"counter": counter(log)}, LiveCalls(), idle=timedelta(seconds=0.1))
    try:
        await sessions.open("counter", "a")
        await sessions.client("counter", "a")  # a call runs on it (not released)
        await asyncio.sleep(0.5)
        assert sessions.holds("counter", "a")
    finally:
        await sessions.aclose()


async def test_an_unconfigured_server_is_refused_before_anything_is_sent(log: Path) -> None:
    sessions = McpSessions({}, LiveCalls())
    with pytest.raises(McpSessionRefusal, match="not configured"):
        await sessions.open("counter", "a")


# --- a lost holder, as the driver reads it ----------------------------------------------


class _Pickup:
    """A transport whose tool attempt comes back `Lost` (nobody picked it up, or it ran)."""

    def __init__(self, not_started: bool) -> None:
        self.not_started = not_started

    async def run_tool(self, input: Any, **_: Any) -> Lost:
        return Lost("activity timed out", not_started=self.not_started)


def _attempt() -> ToolAttempt:
    definition = counted("interaction")
    request = ToolEffectRequest(
        definition=definition.name,
        digest=definition.digest,
        process_id="root/tool/1/0",
        parent_id="root",
        effect_id="root/tool/1/0/effect",
        ref="root/1/0",
        model_call_seq=1,
        call_index=0,
        call=ToolCall(id="c1", name="counter_increment", arguments='{"by": 1}'),
        granted=("read", "write", "exec"),
    )
    return ToolAttempt(request=request, entry=1)


async def test_an_attempt_the_session_holder_never_picked_up_is_a_definite_session_lost() -> None:
    outcome = await attempt_tool(
        _Pickup(not_started=True),  # type: ignore[arg-type]
        _attempt(),
        start_to_close=timedelta(seconds=5),
        heartbeat=None,
        route=Route(),
        task_queue="q/mcp/x",
        session=True,
    )
    assert isinstance(outcome, Failed) and outcome.code == MCP_SESSION_LOST
    assert "was not sent" in outcome.result.content


async def test_an_attempt_that_started_and_lost_its_holder_is_unknown_as_usual() -> None:
    outcome = await attempt_tool(
        _Pickup(not_started=False),  # type: ignore[arg-type]
        _attempt(),
        start_to_close=timedelta(seconds=5),
        heartbeat=None,
        route=Route(),
        task_queue="q/mcp/x",
        session=True,
    )
    assert isinstance(outcome, Unknown)


async def test_a_pool_attempt_nobody_picked_up_stays_unknown() -> None:
    outcome = await attempt_tool(
        _Pickup(not_started=True),  # type: ignore[arg-type]
        _attempt(),
        start_to_close=timedelta(seconds=5),
        heartbeat=None,
        route=Route(),
        task_queue="pool",
    )
    assert isinstance(outcome, Unknown)


# --- LocalRunner ------------------------------------------------------------------------


async def test_two_interactions_each_see_their_own_counter(
    runners: list[LocalRunner], log: Path
) -> None:
    runner = LocalRunner(
        definitions=[counted("interaction")],
        models={"default": increments(2)},
        mcp_servers={"counter": counter(log)},
    )
    runners.append(runner)
    first, second = await runner.start("counted", "go"), await runner.start("counted", "go")
    outs = await asyncio.gather(first.result(), second.result())
    assert [o.text for o in outs] == ["1,2", "1,2"]
    assert len(events(log, "opened")) == 3  # one session each, and the listing's shared one
    assert len({e["pid"] for e in events(log, "increment")}) == 2


async def test_the_worker_session_is_shared_by_every_interaction(
    runners: list[LocalRunner], log: Path
) -> None:
    runner = LocalRunner(
        definitions=[counted("worker")],
        models={"default": increments(2)},
        mcp_servers={"counter": counter(log)},
    )
    runners.append(runner)
    first = await (await runner.start("counted", "go")).result()
    second = await (await runner.start("counted", "go")).result()
    assert (first.text, second.text) == ("1,2", "3,4")


async def test_an_interaction_closes_its_sessions_when_it_ends(
    runners: list[LocalRunner], log: Path
) -> None:
    runner = LocalRunner(
        definitions=[counted("interaction")],
        models={"default": increments(1)},
        mcp_servers={"counter": counter(log)},
    )
    runners.append(runner)
    assert (await (await runner.start("counted", "go")).result()).text == "1"
    assert len(runner.mcp.sessions) == 0
    [call] = events(log, "increment")
    for _ in range(100):  # the server process sees its stdin end
        if any(e["pid"] == call["pid"] for e in events(log, "closed")):
            break
        await asyncio.sleep(0.05)
    assert any(e["pid"] == call["pid"] for e in events(log, "closed"))


async def test_a_session_gone_from_its_holder_fails_this_call_and_every_later_one_definitely(
    runners: list[LocalRunner], log: Path
) -> None:
    made: list[LocalRunner] = []

    async def plan(request: ModelRequest) -> Response:
        results = [r.content for m in request.messages for r in m.tool_results]
        if len(results) == 1:  # the holder loses the session between two calls
            await made[0].mcp.sessions.aclose()
        if len(results) < 3:
            return reply.tool_calls(("counter_increment", {"by": 1}))
        return reply.text("|".join(results))

    runner = LocalRunner(
        definitions=[counted("interaction")],
        models={"default": ScriptedModel(plan)},
        mcp_servers={"counter": counter(log)},
    )
    made.append(runner)
    runners.append(runner)
    run = await runner.start("counted", "go")
    out = await run.result()
    first, second, third = out.text.split("|")
    assert first == "1"
    assert "holds no session" in second and "was not sent" in second
    assert "lost earlier" in third and "was not sent" in third
    snap = run.snapshot()
    assert snap.unknown_effects == []
    dispositions = [e.disposition for r in snap.root.settled_results for e in r.entries]
    assert dispositions == ["succeeded", "failed", "failed"]  # definite, the model saw them
    assert len(events(log, "increment")) == 1  # nothing else reached a server
    assert len(events(log, "opened")) == 2  # the listing's shared one, and the session


async def test_a_session_that_cannot_be_opened_fails_the_call_definitely(
    runners: list[LocalRunner], log: Path
) -> None:
    runner = LocalRunner(
        definitions=[counted("interaction")],
        models={"default": increments(1)},
        mcp_servers={"counter": counter(log)},
    )
    runner.mcp.sessions.limit = 0
    runners.append(runner)
    run = await runner.start("counted", "go")
    out = await run.result()
    assert "No session of MCP server 'counter' was opened" in out.text
    assert "mcp_session_idle" in out.text
    entries = [e for r in run.snapshot().root.settled_results for e in r.entries]
    assert [e.disposition for e in entries] == ["failed"]

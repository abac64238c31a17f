"""What an MCP server sends back mid-call, in-process (`LocalRunner`), against the
test-owned server `tests.mcp_servers.faulty` over stdio: progress notifications as
bounded `tool_progress` events, and elicitation requests as tool input waits answered
by the host on the ordinary answer path, the call never sent twice."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from scope_temporal import Definition, ScopeError
from scope_temporal.interaction.events import Event, ToolProgressEvent
from scope_temporal.mcp import McpServer
from scope_temporal.mcp.live_calls import answer_schema
from scope_temporal.mcp.progress import MAX_EVENTS, ProgressReports
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.testing import LocalRunner
from tests.unit.test_mcp_local import calls, faulty


async def _with_runner(definition: Definition, model: ScriptedModel, log: Path) -> LocalRunner:
    return LocalRunner(
        definitions=[definition],
        models={"default": model},
        mcp_servers={"faulty": faulty(log)},
    )


async def test_mcp_progress_notifications_become_tool_progress_events_of_the_call(
    log: Path,
) -> None:
    definition = Definition("mcp-progress", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel(
        [reply.tool_calls(("faulty_progress", {"count": 3, "pause": 1.2})), reply.text("ok")]
    )
    runner = await _with_runner(definition, model, log)
    try:
        run = await runner.start("mcp-progress", "go")
        assert (await run.result()).text == "ok"
        seen: list[Event] = [e async for e in run.events()]
    finally:
        await runner.aclose()
    progress = [e for e in seen if isinstance(e, ToolProgressEvent)]
    started = next(e for e in seen if e.kind == "tool_started")
    assert [(e.progress, e.total, e.message) for e in progress] == [
        (1.0, 3.0, "step 1 of 3"),
        (2.0, 3.0, "step 2 of 3"),
        (3.0, 3.0, "step 3 of 3"),
    ]
    assert [e.seq for e in progress] == [1, 2, 3]
    assert {(e.process_id, e.ref) for e in progress} == {(started.child_id, started.ref)}  # type: ignore[union-attr]
    settled = next(i for i, e in enumerate(seen) if e.kind == "tool_settled")
    assert all(seen.index(e) < settled for e in progress)
    assert model.requests[1].messages[-1].tool_results[0].content == "progressed 3"


async def test_mcp_chatty_progress_is_coalesced_and_capped_per_call(log: Path) -> None:
    definition = Definition("mcp-chatty", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel(
        [reply.tool_calls(("faulty_progress", {"count": 500, "pause": 0})), reply.text("ok")]
    )
    runner = await _with_runner(definition, model, log)
    try:
        run = await runner.start("mcp-chatty", "go")
        assert (await run.result()).text == "ok"
        progress = [e async for e in run.events() if isinstance(e, ToolProgressEvent)]
    finally:
        await runner.aclose()
    # 500 notifications within well under a second: the first, then the latest at the end
    assert 1 <= len(progress) <= 3
    assert progress[0].progress == 1.0 and progress[-1].progress == 500.0
    assert model.requests[1].messages[-1].tool_results[0].content == "progressed 500"


async def test_mcp_progress_reports_are_bounded_in_rate_count_and_size() -> None:
    sent: list[ToolProgressEvent] = []

    async def send(event: ToolProgressEvent) -> None:
        sent.append(event)

    reports = ProgressReports(send, "p", "p/1/0")
    for step in range(1000):
        await reports.notified(step, 1000, "m" * 5000)
        await asyncio.sleep(0)  # as between the notifications a transport reads
    await reports.notified(float("nan"), None, None)  # ignored
    await reports.close()
    assert [e.progress for e in sent] == [0.0, 999.0]  # the first, then the latest
    assert all(len(e.message or "") == 200 for e in sent)
    assert reports.received == 1001
    import scope_temporal.mcp.progress as progress_module

    capped = ProgressReports(send, "p", "p/1/1")
    original = progress_module.MIN_INTERVAL
    progress_module.MIN_INTERVAL = 0.0
    try:
        sent.clear()
        for step in range(3 * MAX_EVENTS):
            await capped.notified(step, None, None)
            await asyncio.sleep(0.001)
        await capped.close()
    finally:
        progress_module.MIN_INTERVAL = original
    assert len(sent) == MAX_EVENTS and [e.seq for e in sent] == list(range(1, MAX_EVENTS + 1))


async def test_mcp_elicitation_is_a_tool_input_wait_answered_on_the_answer_path(
    log: Path,
) -> None:
    definition = Definition("mcp-elicit", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel(
        [reply.tool_calls(("faulty_elicit", {"text": "Which colour?"})), reply.text("ok")]
    )
    runner = await _with_runner(definition, model, log)
    try:
        run = await runner.start("mcp-elicit", "go")
        snap = await run.idle()
        [pending] = snap.pending_tool_inputs
        assert pending.prompt == {
            "mcp_elicitation": "Which colour?",
            "server": "faulty",
            "tool": "elicit",
        }
        content = {"type": "object", "properties": {"answer": {"type": "string"}}}
        assert (
            pending.response_schema["oneOf"][0]["properties"]["content"]["properties"]
            == (content["properties"])
        )
        with pytest.raises(ScopeError) as refused:  # not valid: refused, the wait stays
            await run.answer(pending, "a0", {"action": "accept", "content": {"answer": 5}})
        assert "answer" in str(refused.value)
        assert run.snapshot().pending_tool_inputs == [pending]
        await run.answer(pending, "a1", {"action": "accept", "content": {"answer": "blue"}})
        assert (await run.result()).text == "ok"
        events = [e.kind async for e in run.events()]
    finally:
        await runner.aclose()
    [result] = model.requests[1].messages[-1].tool_results
    assert (result.content, result.is_error) == ('elicit accept: {"answer": "blue"}', False)
    assert [c["tool"] for c in calls(log)] == ["elicit", "elicited"]  # sent once
    assert "wait_opened" in events and "wait_answered" in events


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_mcp_elicitation_declined_or_cancelled_is_passed_back_as_mcp_defines(
    log: Path, action: str
) -> None:
    definition = Definition("mcp-decline", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_elicit_twice", {"text": "x"})),
            reply.text("ok"),
        ]
    )
    runner = await _with_runner(definition, model, log)
    try:
        run = await runner.start("mcp-decline", "go")
        [first] = (await run.idle()).pending_tool_inputs
        await run.answer(first, "a1", {"action": "accept", "content": {"answer": "one"}})
        for _ in range(100):  # the second question of the same call
            pending = run.snapshot().pending_tool_inputs
            if pending and pending[0].wait_id != first.wait_id:
                break
            await asyncio.sleep(0.05)
        [second] = run.snapshot().pending_tool_inputs
        assert second.prompt["mcp_elicitation"] == "second?"  # type: ignore[index]
        await run.answer(second, "a2", {"action": action})
        assert (await run.result()).text == "ok"
    finally:
        await runner.aclose()
    [result] = model.requests[1].messages[-1].tool_results
    assert result.content == f'elicit accept: {{"answer": "one"}} | elicit {action}: null'
    assert [c["tool"] for c in calls(log)] == ["elicit_twice", "elicited", "elicited"]


def test_mcp_elicitation_answer_schema_takes_an_action_and_for_accept_the_content() -> None:
    import jsonschema

    schema = answer_schema({"type": "object", "properties": {"n": {"type": "integer"}}})
    jsonschema.validate({"action": "accept", "content": {"n": 1}}, schema)
    jsonschema.validate({"action": "decline"}, schema)
    for bad in ({"action": "accept"}, {"action": "decline", "content": {}}, {"n": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


async def test_mcp_elicitation_answer_reaching_a_worker_without_the_call_is_unknown(
    log: Path,
) -> None:
    """The call is held on the worker that sent it; an answer whose attempt finds no
    held call (that worker restarted) cannot re-send it: the outcome is unknown."""
    definition = Definition("mcp-lost", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel([reply.tool_calls(("faulty_elicit", {"text": "?"})), reply.text("x")])
    runner = await _with_runner(definition, model, log)
    try:
        run = await runner.start("mcp-lost", "go")
        [pending] = (await run.idle()).pending_tool_inputs
        assert runner.mcp is not None
        for held in runner.mcp.live.held.values():  # as if the worker holding it died
            held.cancel()
        runner.mcp.live.held.clear()
        await run.answer(pending, "a1", {"action": "accept", "content": {"answer": "y"}})
        snap = await run.idle()
        [unknown] = snap.unknown_effects
        assert "does not hold it" in unknown.diagnostic
        assert [c["tool"] for c in calls(log)] == ["elicit"]  # never sent again
    finally:
        await runner.aclose()


async def test_mcp_elicitation_with_two_calls_in_flight_on_the_server_is_refused(
    log: Path,
) -> None:
    """MCP over stdio does not say which request asks: with two calls in flight on one
    connection the server gets MCP's error, and its tool reports it."""
    definition = Definition("mcp-two", mcp_servers=[McpServer("faulty")])
    hang = ScriptedModel([reply.tool_calls(("faulty_hang", {"text": "x"})), reply.text("x")])
    model = ScriptedModel([reply.tool_calls(("faulty_elicit", {"text": "?"})), reply.text("ok")])
    runner = LocalRunner(
        definitions=[definition],
        models={"default": hang},
        mcp_servers={"faulty": faulty(log)},
    )
    try:
        first = await runner.start("mcp-two", "hang")
        for _ in range(100):
            if calls(log):
                break
            await asyncio.sleep(0.05)
        runner.models["default"] = model  # the second Interaction's model
        second = await runner.start("mcp-two", "ask")
        assert (await second.result()).text == "ok"
        await first.cancel()
    finally:
        await runner.aclose()
    [elicit] = model.requests[1].messages[-1].tool_results
    assert elicit.is_error and "2 calls are in flight" in elicit.content


async def _one_call(log: Path, server: McpServer, tool: str) -> tuple[LocalRunner, object]:
    definition = Definition("mcp-retry", mcp_servers=[server])
    model = ScriptedModel([reply.tool_calls((f"faulty_{tool}", {"text": "t"})), reply.text("ok")])
    runner = await _with_runner(definition, model, log)
    run = await runner.start("mcp-retry", "go")
    return runner, (run, model)


async def test_mcp_server_declared_retry_safe_sends_an_ambiguous_call_again(log: Path) -> None:
    runner, (run, model) = await _one_call(log, McpServer("faulty", retry_safe=True), "flaky")
    try:
        assert (await run.result()).text == "ok"  # type: ignore[attr-defined]
    finally:
        await runner.aclose()
    [result] = model.requests[1].messages[-1].tool_results  # type: ignore[attr-defined]
    assert (result.content, result.is_error) == ("flaky answered on send 2", False)
    assert [c["tool"] for c in calls(log)] == ["flaky", "flaky"]  # the server died once


async def test_mcp_tools_declared_retry_safe_by_name_only_those_are_sent_again(
    log: Path,
) -> None:
    server = McpServer("faulty", retry_safe={"flaky"})
    runner, (run, _) = await _one_call(log, server, "crash")
    try:
        [unknown] = (await run.idle()).unknown_effects  # type: ignore[attr-defined]
        assert "It is not sent again" in unknown.diagnostic
    finally:
        await runner.aclose()
    assert [c["tool"] for c in calls(log)] == ["crash"]


async def test_mcp_idempotent_hint_alone_never_makes_a_call_retry(log: Path) -> None:
    runner, (run, _) = await _one_call(log, McpServer("faulty"), "flaky")  # idempotentHint
    try:
        [unknown] = (await run.idle()).unknown_effects  # type: ignore[attr-defined]
    finally:
        await runner.aclose()
    assert unknown.request.mcp.annotations["idempotentHint"] is True  # type: ignore[union-attr]
    assert [c["tool"] for c in calls(log)] == ["flaky"]


async def test_mcp_retry_safe_call_still_ambiguous_after_three_sends_is_unknown(
    log: Path,
) -> None:
    runner, (run, _) = await _one_call(log, McpServer("faulty", retry_safe=True), "crash")
    try:
        [unknown] = (await run.idle()).unknown_effects  # type: ignore[attr-defined]
        assert "sent 3 times in all (declared safe to retry)" in unknown.diagnostic
    finally:
        await runner.aclose()
    assert [c["tool"] for c in calls(log)] == ["crash"] * 3


def test_mcp_retry_safe_enters_the_digest_only_when_declared() -> None:
    plain = Definition("d", mcp_servers=[McpServer("faulty")])
    assert Definition("d", mcp_servers=[McpServer("faulty", retry_safe=False)]).digest == (
        plain.digest
    )
    safe = Definition("d", mcp_servers=[McpServer("faulty", retry_safe=True)])
    named = Definition("d", mcp_servers=[McpServer("faulty", retry_safe={"echo"})])
    assert len({plain.digest, safe.digest, named.digest}) == 3


async def test_mcp_retry_safe_naming_a_tool_not_offered_is_refused(log: Path) -> None:
    server = McpServer("faulty", allow=("echo",), retry_safe={"add"})
    definition = Definition("mcp-retry", mcp_servers=[server])
    runner = await _with_runner(definition, ScriptedModel([reply.text("x")]), log)
    try:
        with pytest.raises(ScopeError, match="retry_safe names \\['add'\\]"):
            await runner.start("mcp-retry", "go")
    finally:
        await runner.aclose()
    assert calls(log) == []


async def test_mcp_cancelling_while_an_elicitation_waits_leaves_the_call_unknown(
    log: Path,
) -> None:
    definition = Definition("mcp-cancel-wait", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel([reply.tool_calls(("faulty_elicit", {"text": "?"})), reply.text("x")])
    runner = await _with_runner(definition, model, log)
    try:
        run = await runner.start("mcp-cancel-wait", "go")
        [pending] = (await run.idle()).pending_tool_inputs
        await run.cancel()
        with pytest.raises(ScopeError, match="cancelled"):
            await run.result()
        snap = run.snapshot()
        assert snap.pending_tool_inputs == []
        [unknown] = snap.unknown_effects
        assert unknown.effect_id == pending.process_id.replace("/tool/", "/call/")
    finally:
        await runner.aclose()
    assert [c["tool"] for c in calls(log)] == ["elicit"]


async def test_mcp_retry_safe_call_whose_held_call_is_gone_is_sent_again_and_asks_again(
    log: Path,
) -> None:
    definition = Definition("mcp-lost-safe", mcp_servers=[McpServer("faulty", retry_safe=True)])
    model = ScriptedModel([reply.tool_calls(("faulty_elicit", {"text": "?"})), reply.text("ok")])
    runner = await _with_runner(definition, model, log)
    try:
        run = await runner.start("mcp-lost-safe", "go")
        [first] = (await run.idle()).pending_tool_inputs
        assert runner.mcp is not None
        for held in runner.mcp.live.held.values():  # as if the worker holding it died
            held.cancel()
        runner.mcp.live.held.clear()
        await run.answer(first, "a1", {"action": "accept", "content": {"answer": "lost"}})
        for _ in range(100):  # sent again: the server asks again
            pending = run.snapshot().pending_tool_inputs
            if pending and pending[0].wait_id != first.wait_id:
                break
            await asyncio.sleep(0.05)
        [second] = run.snapshot().pending_tool_inputs
        await run.answer(second, "a2", {"action": "accept", "content": {"answer": "kept"}})
        assert (await run.result()).text == "ok"
    finally:
        await runner.aclose()
    [result] = model.requests[1].messages[-1].tool_results
    assert result.content == 'elicit accept: {"answer": "kept"}'
    assert [c["tool"] for c in calls(log)] == ["elicit", "elicit", "elicited"]


async def test_mcp_progress_shows_as_a_line_when_a_run_is_followed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from typing import Any

    from scope_temporal.cli._follow import Follower

    class _Handle:
        id = "root"

    follower = Follower(_Handle())  # type: ignore[arg-type]
    shown: Any = follower._show  # the line a host sees for one event
    await shown(
        ToolProgressEvent(
            process_id="root/tool/1/0", ref="root/1/0", progress=2, total=3, message="step 2 of 3"
        )
    )
    assert "… 2/3 step 2 of 3" in capsys.readouterr().out

"""Status for people (`interaction.attention`): the pure roll-up, and a root that says what
its whole tree needs, through LocalRunner (the same drivers the workflows run)."""

from __future__ import annotations

from typing import Any

from scope_temporal.chat import Message
from scope_temporal.definition import Definition, Delegate
from scope_temporal.interaction.attention import (
    AttentionReport,
    Reporter,
    Reports,
    attention_of,
    most,
    scope_status,
)
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.settle import settle_model_result
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import require_tool_input, tool, tool_input_continuation

WAIT = 2.0
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


@tool(permission="read")
async def ask(question: str) -> str:
    """Ask a person."""
    continuation = tool_input_continuation()
    if continuation is None:
        require_tool_input(question, SCHEMA)
    return f"answered {continuation[1]['ok']}"


@tool(permission="read")
def boom() -> str:
    """Fail ambiguously."""
    raise RuntimeError("the line dropped")


def report(sender: str, need: Any, seq: int) -> AttentionReport:
    return AttentionReport(process_id=sender, attention=need, seq=seq, source=sender)


# --- the pure rules ------------------------------------------------------------------------


def test_an_ended_process_shows_its_end_whatever_is_pending() -> None:
    assert scope_status("completed", False, "unknown") == "completed"
    assert scope_status("failed", True, "waiting_input") == "failed"
    assert scope_status("canceled", False, None) == "canceled"


def test_unknown_outranks_a_question_which_outranks_pause() -> None:
    assert most(["waiting_input", None, "unknown"]) == "unknown"
    assert most([None, None]) is None
    assert scope_status("running", True, "waiting_input") == "waiting_input"
    assert scope_status("waiting", True, None) == "paused"
    assert scope_status("running", False, None) == "running"
    assert attention_of("paused") is None and attention_of("unknown") == "unknown"


def test_reports_keep_the_newest_per_sender_and_count_only_live_ones() -> None:
    reports = Reports()
    assert reports.record(report("a", "waiting_input", 2), live=True)
    assert not reports.record(report("a", None, 1), live=True)  # older: ignored
    assert reports.need({"a"}) == "waiting_input"
    assert reports.need(set()) is None  # ended: needs nothing
    # a first report that overtook the news of its sender's start is kept, and counts later
    assert not reports.record(report("b", "unknown", 1), live=False)
    assert reports.need({"a", "b"}) == "unknown"
    assert [r.process_id for r in reports.carried({"b"})] == ["b"]
    assert list(reports.needing({"a", "b"})) == ["a", "b"]


def test_a_reporter_tells_only_changes_with_rising_numbers() -> None:
    reporter = Reporter()
    assert reporter.next("c", None, "") is None  # nothing to say yet
    first = reporter.next("c", "waiting_input", "c")
    assert first is not None and first.seq == 1
    assert reporter.next("c", "waiting_input", "c") is None
    cleared = reporter.next("c", None, "")
    assert cleared is not None and (cleared.seq, cleared.attention) == (2, None)


# --- through the drivers -------------------------------------------------------------------


def delegating_runner(child_script: list[Any], tools: tuple[Any, ...] = ()) -> LocalRunner:
    parent = Definition("parent", delegates=[Delegate("helper", "Helps", definition="helper")])
    helper = Definition("helper", model="child", tools=list(tools))
    return LocalRunner(
        definitions=[parent, helper],
        tools=list(tools),
        models={
            "default": ScriptedModel(
                [reply.tool_calls(("helper", {"task": "look"})), reply.text("done")]
            ),
            "child": ScriptedModel(child_script),
        },
    )


async def test_a_delegates_unknown_model_call_makes_the_root_say_unknown() -> None:
    runner = delegating_runner([TimeoutError("worker lost"), reply.text("helped")])
    run = await runner.start("parent", [Message.user("go")])
    snap = await run.idle()
    [unknown] = snap.unknown_effects
    assert unknown.process_id != run.id  # the delegate's, not the root's
    assert snap.root.scope_status == "unknown"  # what the root records as ScopeStatus
    assert snap.scope_status == "unknown" and snap.status == "waiting"
    settled = settle_model_result(unknown.request, reply.text("helped"), unknown.request.messages)
    await run.resolve(unknown, settled)
    assert (await run.result(timeout=WAIT)).text == "done"
    assert run.snapshot().root.scope_status == "completed"


async def test_a_wait_two_levels_down_makes_the_root_wait_and_an_answer_clears_it() -> None:
    runner = delegating_runner(
        [reply.tool_calls(("ask", {"question": "ok?"})), reply.text("helped")], tools=(ask,)
    )
    run = await runner.start("parent", [Message.user("go")])
    snap = await run.idle()
    [pending] = snap.pending_tool_inputs
    assert snap.root.scope_status == "waiting_input"
    assert snap.scope_status == "waiting_input"
    await run.answer(pending, "a1", {"ok": True})
    assert (await run.result(timeout=WAIT)).text == "done"
    assert run.snapshot().root.scope_status == "completed"


async def test_an_unknown_tool_call_beside_a_waiting_one_makes_the_root_say_unknown() -> None:
    definition = Definition("both", tools=[ask, boom], max_concurrent_tool_calls=2)
    runner = LocalRunner(
        definitions=[definition],
        tools=[ask, boom],
        models={
            "default": ScriptedModel(
                [reply.tool_calls(("ask", {"question": "ok?"}), ("boom", {})), reply.text("x")]
            )
        },
    )
    run = await runner.start("both", [Message.user("go")])
    snap = await run.idle()
    assert len(snap.pending_tool_inputs) == 1 and len(snap.unknown_effects) == 1
    assert snap.root.scope_status == "unknown"
    await run.pause()
    assert run.snapshot().root.scope_status == "unknown"  # paused, but a person must act
    await run.cancel()
    assert run.snapshot().root.scope_status == "canceled"


async def test_a_paused_root_with_nothing_pending_says_paused() -> None:
    runner = LocalRunner(
        definitions=[Definition("idle", tools=[ask])],
        tools=[ask],
        models={"default": ScriptedModel([reply.tool_calls(("ask", {"question": "?"}))])},
    )
    run = await runner.start("idle", [Message.user("go")])
    snap = await run.idle()
    [pending] = snap.pending_tool_inputs
    await run.pause()
    assert run.snapshot().root.scope_status == "waiting_input"
    await run.answer(pending, "a1", {"ok": False})
    snap = await run.idle()
    assert snap.root.scope_status == "paused"
    await run.cancel()

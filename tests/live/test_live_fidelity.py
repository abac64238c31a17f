"""Scope fidelity live, in both tool-call mappings: a concurrency classifier run in
workflow code (CONFORMANCE 51), options given at start (52), a Tool child's budget (53)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    InteractionFailed,
    InteractionHandle,
    InvalidOptions,
    Options,
    ScriptedModel,
    ToolBudget,
    ToolInvocation,
    current_tool_call,
    reply,
    require_tool_input,
    tool,
    tool_input_continuation,
)
from tests.live.harness import eventually, fresh_id, has_workflow, serving

RESULT_TIMEOUT = 20.0
RUNNING: Counter[str] = Counter()
PEAK: Counter[str] = Counter()
"""Per root and per (root, path): how many writes ran at once, at most."""


def by_path(invocation: ToolInvocation) -> tuple[str | None, bool]:
    """One key per file: writes to one file never overlap."""
    return json.loads(invocation.call.arguments)["path"], True


def refuse(invocation: ToolInvocation) -> tuple[str | None, bool]:
    raise ValueError("cannot classify")


async def _write(path: str) -> str:
    root = current_tool_call().process_id.split("/tool/")[0]
    keys = (root, f"{root}:{path}")
    for key in keys:
        RUNNING[key] += 1
        PEAK[key] = max(PEAK[key], RUNNING[key])
    await asyncio.sleep(0.4)
    for key in keys:
        RUNNING[key] -= 1
    return f"wrote {path}"


@tool(name="write", permission="write", concurrency=by_path)
async def write(path: str) -> str:
    """Write a file."""
    return await _write(path)


@tool(name="write", permission="write", concurrency=refuse)
async def write_refused(path: str) -> str:
    """Write a file."""
    return await _write(path)


@tool(permission="read")
def ask(question: str) -> str:
    """Ask until told to stop."""
    continuation = tool_input_continuation()
    entry = 1 if continuation is None else continuation[0] + 1
    require_tool_input(f"{question} #{entry}", {"type": "object"}, entry)


async def _result(handle: InteractionHandle) -> Any:
    return await asyncio.wait_for(handle.result(), RESULT_TIMEOUT)


async def test_c51_the_classifier_runs_in_workflow_code_keys_per_invocation(
    temporal_env: WorkflowEnvironment,
) -> None:
    files = Definition("files-live", tools=[write], max_concurrent_tool_calls=4)
    calls = [("write", {"path": p}) for p in ("a", "b", "a")]
    model = ScriptedModel([reply.tool_calls(*calls), reply.text("done")])
    async with serving(temporal_env, [files], tools=[write], models={"default": model}) as scope:
        handle = await scope.start("files-live", "go", id=fresh_id("classify"))
        assert (await _result(handle)).text == "done"
    assert PEAK[handle.id] == 2  # a and b overlapped although write tools are sequential
    assert PEAK[f"{handle.id}:a"] == 1  # the two writes to a never did


async def test_c51_a_classifier_that_raises_fails_the_interaction_before_any_body(
    temporal_env: WorkflowEnvironment,
) -> None:
    files = Definition("files-live-refused", tools=[write_refused])
    model = ScriptedModel([reply.tool_calls(("write", {"path": "a"}))])
    async with serving(
        temporal_env, [files], tools=[write_refused], models={"default": model}
    ) as scope:
        handle = await scope.start("files-live-refused", "go", id=fresh_id("classify"))
        with pytest.raises(InteractionFailed) as failed:
            await _result(handle)
        assert failed.value.code == "interaction.host.failed"
        assert "cannot classify" in failed.value.message
        assert not await has_workflow(temporal_env.client, f"{handle.id}/tool/1/0")
    assert PEAK[handle.id] == 0


async def test_c52_options_given_at_start_reach_this_interactions_model_calls(
    temporal_env: WorkflowEnvironment,
) -> None:
    sampled = Definition("sampled-live", options=Options(temperature=0.2, max_tokens=50))
    model = ScriptedModel([reply.text("one"), reply.text("two")])
    async with serving(temporal_env, [sampled], models={"default": model}) as scope:
        tuned = await scope.start(
            "sampled-live", "a", id=fresh_id("options"), options=Options(temperature=0.9)
        )
        await _result(tuned)
        plain = await scope.start("sampled-live", "b", id=fresh_id("options"))
        await _result(plain)
        refused_id = fresh_id("options")
        with pytest.raises(InvalidOptions, match="temperature=3"):
            await scope.start("sampled-live", "c", id=refused_id, options=Options(temperature=3))
        assert not await has_workflow(temporal_env.client, refused_id)
    assert [r.options for r in model.requests] == [
        Options(temperature=0.9, max_tokens=50),
        Options(temperature=0.2, max_tokens=50),
    ]


async def test_c53_a_tool_child_beyond_its_budget_fails_model_visibly(
    temporal_env: WorkflowEnvironment,
) -> None:
    asks = Definition("asks-live", tools=[ask], tool_budget=ToolBudget(max_input_continuations=1))
    model = ScriptedModel([reply.tool_calls(("ask", {"question": "q"})), reply.text("gave up")])
    async with serving(temporal_env, [asks], tools=[ask], models={"default": model}) as scope:
        handle = await scope.start("asks-live", "go", id=fresh_id("budget"))
        snap = await eventually(handle.snapshot, lambda s: bool(s.pending_tool_inputs))
        [pending] = snap.pending_tool_inputs
        assert pending.prompt == "q #1"
        await handle.answer(pending, "a1", {})
        assert (await _result(handle)).text == "gave up"
        [entry] = (await handle.snapshot()).settled_results[0].entries
    assert entry.disposition == "failed" and "budget" in entry.result.content
    tool_text = [r.content for m in model.requests[1].messages for r in m.tool_results]
    assert tool_text == [entry.result.content]

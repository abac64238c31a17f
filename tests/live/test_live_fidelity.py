"""Scope fidelity live, in both tool-call mappings: a concurrency classifier run in
workflow code (CONFORMANCE 51), options given at start (52), a Tool child's budget (53),
attribution across continue-as-new (56), a Definition's response bound (57)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Attribution,
    Definition,
    InteractionFailed,
    InteractionHandle,
    InvalidOptions,
    Options,
    ScriptedModel,
    ToolBudget,
    ToolInvocation,
    ToolResult,
    current_tool_call,
    reply,
    require_tool_input,
    settle_tool_result,
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


ATTRIBUTIONS: list[Attribution] = []


@tool(permission="read")
def whoami() -> str:
    """Say which call this is."""
    ATTRIBUTIONS.append(current_tool_call().attribution)
    return "me"


@tool(permission="read")
def dump(size: int) -> str:
    """Return `size` characters."""
    return "x" * size


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


async def test_c56_attribution_reaches_tools_and_models_and_counts_continue_as_new(
    temporal_env: WorkflowEnvironment,
) -> None:
    named = Definition("whoami-live", tools=[whoami])
    script = [reply.tool_calls(("whoami", {})), reply.tool_calls(("whoami", {})), reply.text("ok")]
    model = ScriptedModel(script)
    async with serving(temporal_env, [named], tools=[whoami], models={"default": model}) as scope:
        handle = await scope.start(
            "whoami-live", "go", id=fresh_id("attribution"), continue_as_new_every=1
        )
        assert (await _result(handle)).text == "ok"
    # one continue-as-new after each model call's round: each run is one incarnation on
    models = [
        (r.process_id, r.step, r.attempt, r.incarnation)
        for r in (q.attribution for q in model.requests)
    ]
    assert models == [(handle.id, n, 1, n) for n in (1, 2, 3)]
    tools = [a for a in ATTRIBUTIONS if a.process_id.startswith(f"{handle.id}/")]
    assert tools == [
        Attribution(process_id=f"{handle.id}/tool/{n}/0", step=n, attempt=1, incarnation=n)
        for n in (1, 2)
    ]


async def test_c57_results_over_a_definitions_bound_are_unknown_with_their_requests(
    temporal_env: WorkflowEnvironment,
) -> None:
    bound = 2_000
    bounded = Definition("bounded-live", tools=[dump], max_response_bytes=bound)
    script = [reply.tool_calls(("dump", {"size": bound})), reply.text("y" * bound)]
    model = ScriptedModel(script)
    async with serving(temporal_env, [bounded], tools=[dump], models={"default": model}) as scope:
        handle = await scope.start("bounded-live", "go", id=fresh_id("bounded"))
        snap = await eventually(handle.snapshot, lambda s: bool(s.unknown_effects))
        [tool_unknown] = snap.unknown_effects
        assert tool_unknown.kind == "tool" and "max_response_bytes" in tool_unknown.diagnostic
        request = tool_unknown.request
        assert request.kind == "tool" and request.call.name == "dump"
        result = ToolResult(call_id=request.call.id, name="dump", content="kept elsewhere")
        await handle.resolve(tool_unknown, settle_tool_result(request, result, "succeeded"))
        snap = await eventually(
            handle.snapshot, lambda s: any(u.kind == "model" for u in s.unknown_effects)
        )
        [model_unknown] = snap.unknown_effects
        assert "max_response_bytes" in model_unknown.diagnostic
        assert model_unknown.request.kind == "model"
        assert model_unknown.request.messages[-1].tool_results[0].content == "kept elsewhere"
        await handle.cancel()
    assert len(model.requests) == 2  # the over-bound response was not asked for again

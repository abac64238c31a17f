"""CONFORMANCE 45 live: continue-as-new at a round boundary changes nothing observable,
whether asked for (`continue_as_new_every`) or suggested by Temporal (a second dev server
that suggests it after a few dozen history events)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, ModelRequest, Output, Response, ScriptedModel, reply, tool
from scope_temporal.definition import ToolCallWorkflows
from scope_temporal.names import SEARCH_ATTRIBUTES
from scope_temporal.testing.devserver import DEV_SERVER_ARGS, temporal_cli_path
from scope_temporal.testing.replay import replay_history
from tests.live.harness import in_mode, serving

SUGGEST_AFTER_EVENTS = 30


@tool(permission="read")
def count(n: int) -> str:
    """Count."""
    return f"counted {n}"


def planner(rounds: int) -> Callable[[ModelRequest], Response]:
    def plan(request: ModelRequest) -> Response:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < rounds:
            return reply.tool_calls(("count", {"n": done}))
        return reply.text(f"finished after {done} rounds")

    return plan


@pytest.fixture(scope="module")
async def suggesting_env() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server of its own whose histories get Temporal's continue-as-new suggestion
    after a few rounds (the session server's threshold is thousands of events)."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli_path(),
        dev_server_extra_args=[
            *DEV_SERVER_ARGS,
            "--dynamic-config-value",
            f"limit.historyCount.suggestContinueAsNew={SUGGEST_AFTER_EVENTS}",
        ],
        search_attributes=SEARCH_ATTRIBUTES,
    )
    try:
        yield env
    finally:
        await env.shutdown()


async def run_once(
    env: WorkflowEnvironment, every: int | None, rounds: int = 6
) -> tuple[Output, int, str]:
    definition = Definition("long", tools=[count], max_model_calls=rounds + 4)
    async with serving(
        env, [definition], tools=[count], models={"default": ScriptedModel(planner(rounds))}
    ) as scope:
        handle = await scope.start("long", f"count to {rounds}", continue_as_new_every=every)
        out = await handle.result()
        snap = await handle.snapshot()
    return out, len(snap.context), handle.id


async def test_c45_continue_as_new_keeps_output_and_model_call_count(
    temporal_env: WorkflowEnvironment,
) -> None:
    plain, plain_context, _ = await run_once(temporal_env, None)
    continued, continued_context, _ = await run_once(temporal_env, 2)
    assert continued.text == plain.text == "finished after 6 rounds"
    assert continued.model_calls == plain.model_calls == 7
    assert continued_context == plain_context


async def test_c45_the_chain_really_continued_as_new(
    temporal_env: WorkflowEnvironment, tool_call_mode: str
) -> None:
    _, _, root = await run_once(temporal_env, 2)
    runs = [e async for e in temporal_env.client.list_workflows(f"WorkflowId = '{root}'")]
    assert len(runs) >= 3  # 7 model calls, a new run every 2
    # ToolCall children keep parent-derived ids across runs: seq keeps counting
    children = [
        e.id
        async for e in temporal_env.client.list_workflows(
            f"WorkflowType = 'scope.ToolCall' AND RootWorkflowId = '{root}'"
        )
    ]
    if tool_call_mode == "always":
        assert sorted(children) == sorted(f"{root}/tool/{seq}/0" for seq in range(1, 7))
    else:  # every call settled in its first attempt: none needed a workflow of its own
        assert children == []


async def test_c45_continue_as_new_when_temporal_suggests_it_changes_nothing(
    temporal_env: WorkflowEnvironment,
    suggesting_env: WorkflowEnvironment,
    tool_call_mode: ToolCallWorkflows,
) -> None:
    rounds = 10
    plain, plain_context, _ = await run_once(temporal_env, None, rounds)
    suggested, suggested_context, root = await run_once(suggesting_env, None, rounds)
    assert suggested.text == plain.text == f"finished after {rounds} rounds"
    assert suggested.model_calls == plain.model_calls == rounds + 1
    assert suggested_context == plain_context
    client = suggesting_env.client
    runs = [e async for e in client.list_workflows(f"WorkflowId = '{root}'")]
    continued = [r for r in runs if r.status == WorkflowExecutionStatus.CONTINUED_AS_NEW]
    assert len(continued) >= 3, [r.status for r in runs]  # suggested again and again
    # these histories are on their own server: replay them here (CONFORMANCE 42)
    definition = in_mode(
        Definition("long", tools=[count], max_model_calls=rounds + 4), tool_call_mode
    )
    for run in runs:
        history = await client.get_workflow_handle(root, run_id=run.run_id).fetch_history()
        assert (await replay_history(history, [definition])).replay_failure is None


@tool(permission="read")
def bulky(n: int) -> str:
    """Return 20 KB."""
    return f"{n}:" + "b" * 20_000


async def test_c46_a_state_too_large_to_carry_keeps_its_run_instead_of_looping(
    temporal_env: WorkflowEnvironment,
) -> None:
    # each request fits the limit, the state (context plus settled rounds) soon does not
    def plan(request: ModelRequest) -> Response:
        done = sum(1 for m in request.messages if m.role == "tool")
        return reply.tool_calls(("bulky", {"n": done})) if done < 2 else reply.text("carried on")

    definition = Definition("bulky", tools=[bulky], max_model_calls=5)
    async with serving(
        temporal_env,
        [definition],
        tools=[bulky],
        models={"default": ScriptedModel(plan)},
        payload_limit_bytes=70_000,
    ) as scope:
        handle = await scope.start("bulky", "go", continue_as_new_every=1)
        out = await handle.result()
    assert out.text == "carried on" and out.model_calls == 3
    client = temporal_env.client
    runs = [e async for e in client.list_workflows(f"WorkflowId = '{handle.id}'")]
    assert len(runs) == 2  # carried once while it fitted, then kept its run
    for run in runs:
        events = client.get_workflow_handle(handle.id, run_id=run.run_id).fetch_history_events()
        failed = [
            e async for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        ]
        assert failed == []

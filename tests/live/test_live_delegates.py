"""Live delegates (CONFORMANCE 38-41) on the dev server.

A Delegate is a child `scope.Interaction` of another Definition, id
`<parent id>/delegate/<model seq>/<call index>`. Child models here are function models,
so several children can share one model without depending on call interleaving.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Artifact,
    CompletionCandidate,
    CompletionDecision,
    Definition,
    DefinitionError,
    Delegate,
    InteractionHandle,
    Message,
    ModelRequest,
    Output,
    Response,
    ScopeWorker,
    ScriptedModel,
    ToolSet,
    reply,
    tool,
)
from tests.live.harness import eventually, fresh_id, serving

RESULT_TIMEOUT = 15.0


async def _result(handle: InteractionHandle) -> Output:
    """The Output, failing fast (not at the session timeout) if the Interaction got stuck."""
    return await asyncio.wait_for(handle.result(), RESULT_TIMEOUT)


@tool(permission="read")
async def parent_lookup(key: str) -> str:
    """A parent-side tool."""
    return f"value of {key}"


@tool(permission="read")
async def child_lookup(query: str) -> str:
    """A child-side tool."""
    return f"facts about {query}"


def _researcher(request: ModelRequest) -> Response:
    """Needs two model calls: one tool round, then the summary."""
    last = request.messages[-1]
    if last.role == "user":
        return reply.tool_calls(("child_lookup", {"query": last.text}))
    return reply.text(f"summary: {last.tool_results[0].content}")


def _writer(request: ModelRequest) -> Response:
    return reply.text(f"written: {request.messages[-1].text}")


def _broken(request: ModelRequest) -> Response:
    # Tool calls with finish `stop`: the child fails interaction.model.tool_calls_not_completed.
    return reply.response(None, [("child_lookup", {"query": "x"})], "stop")


def _child_models() -> dict[str, Any]:
    return {
        "researcher": ScriptedModel(_researcher),
        "writer": ScriptedModel(_writer),
        "broken": ScriptedModel(_broken),
    }


RESEARCHER = Definition("dg-researcher", model="researcher", tools=[child_lookup])
WRITER = Definition("dg-writer", model="writer")
BROKEN = Definition("dg-broken", model="broken", tools=[child_lookup])


async def _absent(scope: Any, workflow_id: str) -> bool:
    try:
        await scope.client.get_workflow_handle(workflow_id).describe()
    except RPCError as error:
        return error.status == RPCStatusCode.NOT_FOUND
    return False


# --- 38 ------------------------------------------------------------------------------


async def test_c38_mixed_batch_keeps_order_and_each_delegate_gets_its_budget(
    temporal_env: WorkflowEnvironment,
) -> None:
    parent = Definition(
        "dg-c38-parent",
        tools=[parent_lookup],
        delegates=[
            Delegate(
                "research_tight", "Research (1 model call)", "dg-researcher", max_model_calls=1
            ),
            Delegate(
                "research_roomy", "Research (3 model calls)", "dg-researcher", max_model_calls=3
            ),
        ],
        max_concurrent_tool_calls=2,
    )
    model = ScriptedModel(
        [
            reply.tool_calls(
                ("parent_lookup", {"key": "a"}),
                ("research_tight", {"task": "tight topic"}),
                ("parent_lookup", {"key": "b"}),
                ("research_roomy", {"task": "roomy topic"}),
            ),
            reply.text("all done"),
        ]
    )
    root = fresh_id("c38")
    models = {"default": model, **_child_models()}
    async with serving(
        temporal_env, [parent, RESEARCHER], tools=[parent_lookup, child_lookup], models=models
    ) as scope:
        handle = await scope.start("dg-c38-parent", [Message.user("go")], id=root)
        out = await _result(handle)
        roomy = await scope.client.get_workflow_handle(
            f"{root}/delegate/1/3", result_type=Output
        ).result()
        tight_status = (
            await scope.client.get_workflow_handle(f"{root}/delegate/1/1").describe()
        ).status
        snap = await handle.snapshot()

    assert out.text == "all done"
    results = model.requests[1].messages[-1].tool_results
    # Call order, whatever order the tools and delegates finished in.
    assert [(r.call_id, r.name) for r in results] == [
        ("call_1", "parent_lookup"),
        ("call_2", "research_tight"),
        ("call_3", "parent_lookup"),
        ("call_4", "research_roomy"),
    ]
    assert results[0].content == "value of a" and results[2].content == "value of b"
    # max_model_calls=1: the child needed a second call and failed on its budget.
    assert results[1].is_error
    assert "interaction.limit.model_calls" in results[1].content
    assert "max_model_calls=1" in results[1].content
    assert tight_status == WorkflowExecutionStatus.FAILED
    # max_model_calls=3: enough for the same child to finish in two calls.
    assert not results[3].is_error
    assert results[3].content == "summary: facts about roomy topic"
    assert roomy.model_calls == 2
    [entries] = [r.entries for r in snap.settled_results if r.model_call_seq == 1]
    assert [e.disposition for e in entries] == ["succeeded", "failed", "succeeded", "succeeded"]


# --- 39 ------------------------------------------------------------------------------


async def test_c39_delegate_arguments_violating_schema_start_no_child(
    temporal_env: WorkflowEnvironment,
) -> None:
    parent = Definition(
        "dg-c39-parent",
        delegates=[Delegate("write", "Write something", "dg-writer")],
    )
    model = ScriptedModel(
        [
            reply.tool_calls(("write", {"topic": "no task field"})),
            reply.text("gave up"),
        ]
    )
    models = {"default": model, **_child_models()}
    root = fresh_id("c39a")
    async with serving(temporal_env, [parent, WRITER], models=models) as scope:
        handle = await scope.start("dg-c39-parent", [Message.user("go")], id=root)
        out = await _result(handle)
        snap = await handle.snapshot()
        assert await _absent(scope, f"{root}/delegate/1/0")
    assert out.text == "gave up"
    [result] = model.requests[1].messages[-1].tool_results
    assert result.is_error and "invalid arguments" in result.content
    assert result.call_id == "call_1"
    assert snap.settled_results[0].entries[0].disposition == "rejected"
    assert models["writer"].requests == []


def test_c39_worker_refuses_a_delegate_whose_definition_is_not_registered(
    temporal_env: WorkflowEnvironment,
) -> None:
    parent = Definition(
        "dg-c39-orphan",
        delegates=[Delegate("ghost", "Nobody serves this", "dg-not-registered")],
    )
    with pytest.raises(DefinitionError) as refused:
        ScopeWorker(
            temporal_env.client,
            task_queue=fresh_id("tq-c39"),
            definitions=[parent],
            models={"default": ScriptedModel([])},
        )
    assert "dg-not-registered" in str(refused.value)


async def test_c39_refused_child_start_is_model_visible(temporal_env: WorkflowEnvironment) -> None:
    # The worker refuses unregistered delegate Definitions up front, so the refused start
    # is produced honestly another way: a workflow already runs under the child's id.
    parent = Definition(
        "dg-c39-refused",
        delegates=[Delegate("write", "Write something", "dg-writer")],
    )
    model = ScriptedModel([reply.tool_calls(("write", {"task": "hello"})), reply.text("noted")])
    models = {"default": model, **_child_models()}
    root = fresh_id("c39b")
    child_id = f"{root}/delegate/1/0"
    blocker = await temporal_env.client.start_workflow(
        "not.served",
        id=child_id,
        task_queue=fresh_id("tq-nobody"),
        execution_timeout=timedelta(minutes=1),
    )
    try:
        async with serving(temporal_env, [parent, WRITER], models=models) as scope:
            handle = await scope.start("dg-c39-refused", [Message.user("go")], id=root)
            out = await _result(handle)
            snap = await handle.snapshot()
        assert out.text == "noted"
        [result] = model.requests[1].messages[-1].tool_results
        assert result.is_error
        assert "interaction.delegate.rejected" in result.content
        assert snap.settled_results[0].entries[0].disposition == "rejected"
        assert snap.artifacts == ()
        # No child ran: the blocker is untouched and the child's model was never called.
        assert models["writer"].requests == []
        described = await blocker.describe()
        assert described.status == WorkflowExecutionStatus.RUNNING
        assert described.workflow_type == "not.served"
    finally:
        await blocker.terminate("test cleanup")


# --- 40 ------------------------------------------------------------------------------


def test_c40_delegate_name_collisions_rejected_at_build() -> None:
    with pytest.raises(DefinitionError, match="collides with a tool"):
        Definition(
            "dg-c40-a",
            tools=[parent_lookup],
            delegates=[Delegate("parent_lookup", "Shadows the tool", "dg-writer")],
        )
    with pytest.raises(DefinitionError, match="collides with a tool"):
        Definition(
            "dg-c40-b",
            tools=ToolSet("set", [], deferred=[parent_lookup]),
            delegates=[Delegate("parent_lookup", "Shadows a deferred tool", "dg-writer")],
        )
    with pytest.raises(DefinitionError, match="two delegates"):
        Definition(
            "dg-c40-c",
            delegates=[
                Delegate("helper", "One", "dg-writer"),
                Delegate("helper", "Two", "dg-researcher"),
            ],
        )
    # Control: distinct names build fine.
    Definition(
        "dg-c40-d",
        tools=[parent_lookup],
        delegates=[Delegate("helper", "One", "dg-writer"), Delegate("other", "Two", "dg-writer")],
    )


# --- 41 ------------------------------------------------------------------------------

SEEN_ARTIFACTS: list[tuple[Artifact, ...]] = []
"""What the completion validator of `dg-c41-parent` was shown."""


def _needs_artifact(candidate: CompletionCandidate) -> CompletionDecision:
    SEEN_ARTIFACTS.append(candidate.artifacts)
    if not candidate.artifacts:
        return CompletionDecision.reject("Produce the written artifact first.")
    return CompletionDecision.accept()


async def test_c41_delegate_failure_is_model_visible_success_is_an_artifact(
    temporal_env: WorkflowEnvironment,
) -> None:
    parent = Definition(
        "dg-c41-parent",
        delegates=[
            Delegate("broken", "Always fails", "dg-broken"),
            Delegate("write", "Write something", "dg-writer"),
        ],
        completion_validator=_needs_artifact,
    )
    model = ScriptedModel(
        [
            reply.tool_calls(("broken", {"task": "try"}), ("write", {"task": "the report"})),
            reply.text("final"),
        ]
    )
    models = {"default": model, **_child_models()}
    root = fresh_id("c41")
    SEEN_ARTIFACTS.clear()
    async with serving(
        temporal_env, [parent, WRITER, BROKEN], tools=[child_lookup], models=models
    ) as scope:
        handle = await scope.start("dg-c41-parent", [Message.user("go")], id=root)
        out = await _result(handle)
        snap = await eventually(handle.snapshot, lambda s: s.status == "completed")

    failed, written = model.requests[1].messages[-1].tool_results
    assert failed.is_error
    assert "interaction.model.tool_calls_not_completed" in failed.content
    assert not written.is_error and written.content == "written: the report"
    [entries] = [r.entries for r in snap.settled_results]
    assert [e.disposition for e in entries] == ["failed", "succeeded"]

    expected = Artifact(
        delegate="write",
        ref=f"{root}/1/1",
        process_id=f"{root}/delegate/1/1",
        text="written: the report",
    )
    assert out.text == "final"
    assert out.model_calls == 2
    assert out.artifacts == (expected,)
    assert snap.artifacts == (expected,)
    # The validator saw the artifact (and only the successful delegate's) on the candidate.
    assert SEEN_ARTIFACTS and SEEN_ARTIFACTS[0] == (expected,)

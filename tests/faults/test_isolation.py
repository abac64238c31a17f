"""Observer and middleware isolation, live, in both tool-call mappings.

- Observers that raise (sync or async, any Exception, and even a stray CancelledError)
  in every callback change no settlement: the run's snapshot and output equal a run
  without them, and each failure is counted in `ScopeWorker.observer_failures`.
- A middleware that raises is a tool outcome like any other: `ToolFailure` is a definite
  failed result; any other exception is unknown - before `call_next` the body did not
  run, after it the body did (its side effect is there), and the host settles from that.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    Message,
    ScopeClient,
    ScopeWorker,
    ScriptedModel,
    ToolFailure,
    ToolInvocation,
    ToolResult,
    TreeSnapshot,
    reply,
    settle_tool_result,
    tool,
)
from scope_temporal.definition import ToolCallWorkflows
from scope_temporal.interaction.effects import ToolEffectRequest
from scope_temporal.tools.outcome import Disposition
from tests.faults import figures
from tests.live.harness import STARTED_IDS, eventually, in_mode

MODES: tuple[ToolCallWorkflows, ...] = ("always", "on_demand")
EFFECTS: Counter[str] = Counter()
EVENTS = ("model_started", "model_settled", "tool_started", "tool_settled")


@tool(permission="read", execution="parallel")
def fetch(key: str) -> str:
    """Fetch a value."""
    EFFECTS[f"fetch:{key}"] += 1
    return f"value of {key}"


@tool(permission="write", execution="parallel")
def store(key: str) -> str:
    """Store a value (refuses the key 'bad')."""
    if key == "bad":
        raise ToolFailure("refusing to store 'bad'")
    EFFECTS[f"store:{key}"] += 1
    return f"stored {key}"


def script() -> ScriptedModel:
    return ScriptedModel(
        [
            reply.tool_calls(("fetch", {"key": "a"}), ("store", {"key": "bad"})),
            reply.text("done"),
        ]
    )


class Raising:
    """Every callback raises something else."""

    def model_started(self, request: Any) -> None:
        raise RuntimeError("observer bug")

    async def model_settled(self, request: Any, outcome: Any) -> None:
        raise asyncio.CancelledError("a stray cancellation, not the activity's")

    def tool_started(self, invocation: Any) -> None:
        raise KeyError("missing")

    async def tool_settled(self, invocation: Any, outcome: Any) -> None:
        await asyncio.sleep(0)
        raise ValueError("observer bug, async")


def _settled(snap: TreeSnapshot) -> list[Any]:
    return [
        (e.call.name, e.disposition, e.result.content if e.result else None)
        for r in snap.settled_results
        for e in r.entries
    ]


async def _run(
    env: WorkflowEnvironment, mode: ToolCallWorkflows, observers: list[Any], middleware: Any = ()
) -> tuple[ScopeWorker, Any, TreeSnapshot]:
    queue = f"iso-{uuid.uuid4().hex[:8]}"
    definition = in_mode(Definition("iso", tools=[fetch, store], max_concurrent_tool_calls=2), mode)
    worker = ScopeWorker(
        env.client,
        task_queue=queue,
        definitions=[definition],
        tools=[fetch, store],
        models={"default": script()},
        observers=observers,
        middleware=list(middleware),
    )
    async with worker:
        scope = ScopeClient(env.client, task_queue=queue)
        handle = await scope.start("iso", [Message.user("go")])
        STARTED_IDS.append(handle.id)
        out = await asyncio.wait_for(handle.result(), 30)
        snap = await handle.snapshot()
    return worker, out, snap


@pytest.mark.parametrize("mode", MODES)
async def test_raising_observers_change_no_settlement_and_are_counted(
    temporal_env: WorkflowEnvironment, mode: ToolCallWorkflows
) -> None:
    _, baseline_out, baseline = await _run(temporal_env, mode, [])
    worker, out, snap = await _run(temporal_env, mode, [Raising()])
    assert out.model_dump(exclude={"model_response"}) == baseline_out.model_dump(
        exclude={"model_response"}
    )
    assert out.text == baseline_out.text == "done"
    assert (
        _settled(snap)
        == _settled(baseline)
        == [
            ("fetch", "succeeded", "value of a"),
            ("store", "failed", "refusing to store 'bad'"),
        ]
    )
    failures = worker.observer_failures
    # two model calls and two tool calls, each started and settled
    assert len(failures) == 8
    assert Counter(f.event for f in failures) == Counter({e: 2 for e in EVENTS})
    figures.FIGURES["observer_failures_isolated"] += len(failures)


# --- middleware -------------------------------------------------------------------------


async def raising_middleware(invocation: ToolInvocation, call_next: Any) -> object:
    key = invocation.call.arguments
    if '"refuse"' in key:
        raise ToolFailure("policy: refused by middleware")
    if '"before"' in key:
        raise RuntimeError("middleware crashed before the body")
    result = await call_next(invocation)
    if '"after-' in key:
        raise RuntimeError("middleware crashed after the body")
    return result


@pytest.mark.parametrize("mode", MODES)
async def test_a_raising_middleware_is_a_tool_outcome_like_any_other(
    temporal_env: WorkflowEnvironment, mode: ToolCallWorkflows
) -> None:
    tag = uuid.uuid4().hex[:6]
    model = ScriptedModel(
        [
            reply.tool_calls(
                ("store", {"key": "refuse"}),
                ("store", {"key": "before"}),
                ("store", {"key": f"after-{tag}"}),
            ),
            reply.text("done"),
        ]
    )
    queue = f"iso-{uuid.uuid4().hex[:8]}"
    definition = in_mode(Definition("iso-mw", tools=[store], max_concurrent_tool_calls=3), mode)
    async with ScopeWorker(
        temporal_env.client,
        task_queue=queue,
        definitions=[definition],
        tools=[store],
        models={"default": model},
        middleware=[raising_middleware],
    ):
        scope = ScopeClient(temporal_env.client, task_queue=queue)
        handle = await scope.start("iso-mw", [Message.user("go")])
        STARTED_IDS.append(handle.id)
        snap = await eventually(handle.snapshot, lambda s: len(s.unknown_effects) == 2)
        requests = {u.effect_id: u.request for u in snap.unknown_effects}
        assert all(isinstance(r, ToolEffectRequest) for r in requests.values())
        unknowns = {
            u.request.call.arguments: u
            for u in snap.unknown_effects
            if isinstance(u.request, ToolEffectRequest)
        }
        assert set(unknowns) == {'{"key": "before"}', f'{{"key": "after-{tag}"}}'}
        assert "before the body" in unknowns['{"key": "before"}'].diagnostic
        # the careful host: the body ran only where its side effect is there
        assert EFFECTS["store:before"] == 0 and EFFECTS[f"store:after-{tag}"] == 1
        for arguments, unknown in unknowns.items():
            assert isinstance(unknown.request, ToolEffectRequest)
            call = unknown.request.call
            ran = "after" in arguments
            result = ToolResult(
                call_id=call.id,
                name=call.name,
                content="stored (checked)" if ran else "not stored",
                is_error=not ran,
            )
            disposition: Disposition = "succeeded" if ran else "failed"
            await handle.resolve(unknown, settle_tool_result(unknown.request, result, disposition))
        out = await asyncio.wait_for(handle.result(), 30)
        final = await handle.snapshot()
    assert out.text == "done"
    assert _settled(final) == [
        ("store", "failed", "policy: refused by middleware"),
        ("store", "failed", "not stored"),
        ("store", "succeeded", "stored (checked)"),
    ]
    assert EFFECTS[f"store:after-{tag}"] == 1  # never re-run
    assert len(model.requests) == 2

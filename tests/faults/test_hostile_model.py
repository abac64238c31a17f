"""Hostile model output, live: tool calls with arguments that are not JSON, not an object,
or break the tool's schema, and calls to tools that do not exist, in random batches.

Each invalid call gets a model-visible rejected result and its body never runs; each
valid one runs exactly once; the Interaction completes (the rejection is a result, never
a failure of the workflow). The oracle is `jsonschema` itself, independent of the SDK.
15 batches by default, 60 with --full.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator

import jsonschema
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from temporalio import activity
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    Message,
    ModelRequest,
    Response,
    ScopeClient,
    ScriptedModel,
    ToolCall,
    current_tool_call,
    reply,
    tool,
)
from tests.faults import figures
from tests.live.harness import fresh_id, serving

EXAMPLES = 60 if figures.FULL else 15
RAN: Counter[str] = Counter()
BATCHES: dict[str, list[ToolCall]] = {}


@tool(permission="read", execution="parallel")
def lookup(key: str, limit: int = 3) -> str:
    """Look a key up."""
    RAN[current_tool_call().effect_id] += 1
    return f"found {key}"


SCHEMA = lookup.spec.parameters


def _answer(request: ModelRequest) -> Response:
    root = activity.info().workflow_id or ""
    if request.model_call_seq == 1:
        return reply.tool_calls(*BATCHES[root])
    return reply.text("done")


ARGUMENTS = st.one_of(
    st.text(max_size=30),  # mostly not JSON
    st.builds(json.dumps, st.lists(st.integers(), max_size=3)),  # JSON, not an object
    st.builds(
        json.dumps,
        st.fixed_dictionaries(
            {},
            optional={
                "key": st.one_of(st.text(max_size=10), st.integers(), st.none()),
                "limit": st.one_of(st.integers(), st.text(max_size=3), st.floats(allow_nan=False)),
                "extra": st.booleans(),
            },
        ),
    ),
)
CALL = st.tuples(st.sampled_from(["lookup", "lookup", "lookup", "drop_tables", ""]), ARGUMENTS)


def valid(name: str, arguments: str) -> bool:
    if name != "lookup":
        return False
    try:
        value = json.loads(arguments)
        jsonschema.validate(value, SCHEMA)
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def scope(temporal_env: WorkflowEnvironment) -> AsyncIterator[ScopeClient]:
    definition = Definition("hostile-model", tools=[lookup], max_concurrent_tool_calls=4)
    model = ScriptedModel(_answer)
    async with serving(temporal_env, [definition], tools=[lookup], models={"default": model}) as s:
        yield s


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(calls=st.lists(CALL, min_size=1, max_size=6))
async def test_invalid_tool_calls_are_rejected_results_and_never_run(
    scope: ScopeClient, calls: list[tuple[str, str]]
) -> None:
    root = fresh_id("hostile-model")
    BATCHES[root] = [
        ToolCall(id=f"call_{i}", name=name, arguments=arguments)
        for i, (name, arguments) in enumerate(calls)
    ]
    handle = await scope.start("hostile-model", [Message.user("go")], id=root)
    out = await asyncio.wait_for(handle.result(), 30)
    snap = await handle.snapshot()
    assert out.text == "done"
    [round_] = snap.settled_results
    for entry, (name, arguments) in zip(round_.entries, calls, strict=True):
        effect = f"{root}/call/1/{entry.call_index}"
        if valid(name, arguments):
            assert entry.disposition == "succeeded", (name, arguments, entry)
            assert RAN[effect] == 1
        else:
            assert entry.disposition == "rejected", (name, arguments, entry)
            assert entry.result is not None and entry.result.is_error
            assert RAN[effect] == 0
        figures.FIGURES["hostile_model_calls"] += 1

"""Hostile input, generated: hypothesis builds steers, answers and settlements that are
invalid by construction (each carries at least one defect, the rest is random) and sends
them raw, as signals and updates, to any process of a live Interaction. Every one must be
refused and change nothing (`tests.faults.hostile.send_hostile`); a valid steer follows
each, and all of them must be applied when the Interaction completes.

60 examples by default, 400 with --full.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from temporalio.testing import WorkflowEnvironment

from tests.faults import figures
from tests.faults.hostile import (
    Handler,
    Target,
    Where,
    finish,
    send_hostile,
    serving_target,
    steer_valid,
)

EXAMPLES = 400 if figures.FULL else 60

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
TEXT = st.text(max_size=60)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"kind": "text", "text": text}]}


@st.composite
def hostile_steer(draw: st.DrawFn) -> bytes:
    text = draw(TEXT)
    base: dict[str, Any] = {"signal_id": f"h-{draw(TEXT)}"[:200], "messages": [_user(text)]}
    defect = draw(
        st.sampled_from(
            ["not json", "not an object", "role", "extra", "id type", "no message", "conflict"]
        )
    )
    if defect == "not json":
        return b"{" + draw(st.binary(max_size=40))
    if defect == "not an object":
        return json.dumps(draw(st.lists(JSON, max_size=3))).encode()
    if defect == "role":
        role = draw(st.sampled_from(["system", "assistant", "tool"]))
        base["messages"].append({"role": role, "parts": [{"kind": "text", "text": text}]})
    elif defect == "extra":
        base[draw(st.sampled_from(["admin", "process_id", "priority"]))] = draw(JSON)
    elif defect == "id type":
        base["signal_id"] = draw(JSON.filter(lambda v: not isinstance(v, str)))
    elif defect == "no message":
        base["messages"] = []
    else:  # an id already used, with other content
        base["signal_id"] = "valid-0"
        base["messages"] = [_user(f"other {text}")]
    return json.dumps(base).encode()


def _valid_answer(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"approved"}
        and isinstance(value["approved"], bool)
    )


@st.composite
def hostile_answer(draw: st.DrawFn, target: Target) -> bytes:
    base: dict[str, Any] = {
        "wait_id": target.wait_id,
        "answer_id": f"h-{draw(TEXT)}"[:200],
        "response": {"approved": draw(st.booleans())},
        "process_id": target.ids["wait"],
    }
    defect = draw(st.sampled_from(["wait id", "schema", "answer id", "extra", "types"]))
    if defect == "wait id":
        base["wait_id"] = draw(TEXT.filter(lambda t: t != target.wait_id))
    elif defect == "schema":
        base["response"] = draw(JSON.filter(lambda v: not _valid_answer(v)))
    elif defect == "answer id":
        base["answer_id"] = draw(st.sampled_from(["", "x" * 257]))
    elif defect == "extra":
        base["admin"] = draw(JSON)
    else:
        base[draw(st.sampled_from(["wait_id", "answer_id"]))] = draw(
            JSON.filter(lambda v: not isinstance(v, str))
        )
    return json.dumps(base).encode()


@st.composite
def hostile_settlement(draw: st.DrawFn, target: Target) -> bytes:
    request = target.unknown.request.model_dump(mode="json")
    call = request["call"]
    result = {"call_id": call["id"], "name": call["name"], "content": draw(TEXT)}
    outcome: dict[str, Any] = {"kind": "succeeded", "result": result}
    defect = draw(st.sampled_from(["request", "call id", "disposition", "kind", "types"]))
    if defect == "request":
        key = draw(st.sampled_from(["effect_id", "process_id", "definition", "digest", "ref"]))
        request[key] = draw(TEXT.filter(lambda t: t != request[key]))
    elif defect == "call id":
        result["call_id"] = draw(TEXT.filter(lambda t: t != call["id"]))
    elif defect == "disposition":
        outcome["kind"] = draw(st.sampled_from(["failed", "rejected"]))
        outcome["code"] = "tool.execution_failed"
    elif defect == "kind":
        outcome["kind"] = draw(st.sampled_from(["unknown", "input_required", "done"]))
    else:
        outcome["result"] = draw(JSON)
    settlement = {"kind": "tool", "request": request, "outcome": outcome}
    return json.dumps({"signal_id": f"h-{draw(TEXT)}"[:200], "settlement": settlement}).encode()


def payloads(target: Target) -> st.SearchStrategy[tuple[Handler, bytes]]:
    return st.one_of(
        st.tuples(st.just("steer"), hostile_steer()),
        st.tuples(st.just("tool_input"), hostile_answer(target)),
        st.tuples(st.just("resolve"), hostile_settlement(target)),
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def target(temporal_env: WorkflowEnvironment) -> AsyncIterator[Target]:
    async with serving_target(temporal_env, "hostile-gen") as found:
        assert await found.handle.steer("valid-0", "steer valid-0") is True
        found.valid_steers.append("valid-0")
        yield found


WHERE: tuple[Where, ...] = ("root", "wait", "unknown")


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_generated_hostile_input_is_refused_and_changes_nothing(
    target: Target, data: st.DataObject
) -> None:
    handler, payload = data.draw(payloads(target))
    where = data.draw(st.sampled_from(WHERE))
    as_update = data.draw(st.booleans())
    await send_hostile(target, where, handler, payload, as_update=as_update)
    figures.FIGURES["hostile_inputs_generated"] += 1
    await steer_valid(target)


async def test_after_generated_hostile_input_every_valid_steer_is_applied(target: Target) -> None:
    assert target.tried >= EXAMPLES
    await finish(target)

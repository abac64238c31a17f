"""Hostile answers to an approval wait (rule a9 of docs/approvals.md), live.

The target Interaction's round holds one call waiting for approval (`reboot`, an exec
tool its Definition's `ApprovalPolicy.deny_writes()` covers) and one call needing none
whose outcome is unknown (`lost`, a read tool). Wrong decision values, answers off the
schema, forged wait ids and approval answers to the call that needs no approval are
sent raw, as signals and updates, to each process (hand-written, then generated): each
must be refused and change nothing (`tests.faults.hostile.send_hostile`), the body of
`reboot` never runs, and the Interaction then completes normally once approved.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    ApprovalPolicy,
    Definition,
    HostFailure,
    Message,
    ModelRequest,
    Response,
    ScriptedModel,
    reply,
    tool,
)
from tests.faults import figures
from tests.faults.hostile import (
    Handler,
    Target,
    Where,
    as_json,
    finish,
    held_target,
    send_hostile,
    steer_valid,
)
from tests.live.harness import fresh_id, serving

EXAMPLES = 200 if figures.FULL else 30
REBOOTS: Counter[str] = Counter()


@tool(permission="exec", execution="parallel")  # parallel: the unknown sibling runs too
def reboot(host: str) -> str:
    """Reboot a host (its calls need approval)."""
    REBOOTS[host] += 1
    return f"{host} rebooted"


@tool(permission="read")
def lost(what: str) -> str:
    """Its outcome is always unknown."""
    raise HostFailure(f"lost while fetching {what}")


def _answer(request: ModelRequest) -> Response:
    if request.model_call_seq == 1:
        return reply.tool_calls(("reboot", {"host": "db-1"}), ("lost", {"what": "logs"}))
    steers = [m.text for m in request.messages[1:] if m.role == "user"]
    return reply.text("steers: " + ",".join(steers))


GUARDED = Definition(
    "hostile-approvals",
    tools=[reboot, lost],
    approval=ApprovalPolicy.deny_writes(),
    max_concurrent_tool_calls=2,
)


APPROVE: Any = {"decision": "approve"}


def _approval(t: Target, *, response: Any = APPROVE, **changes: Any) -> bytes:
    payload: dict[str, Any] = {
        "wait_id": t.wait_id,
        "answer_id": "hostile-approval",
        "response": response,
        "process_id": t.ids["wait"],
    }
    payload.update(changes)
    return as_json(payload)


def _to_unknown(t: Target, **changes: Any) -> bytes:
    unknown = t.ids["unknown"]
    return _approval(t, wait_id=f"{unknown}/wait/approval", process_id=unknown, **changes)


CASES: list[tuple[str, Where, Handler, Any]] = [
    ("wrong decision", "wait", "tool_input", lambda t: _approval(t, response={"decision": "yes"})),
    (
        "decision in capitals",
        "wait",
        "tool_input",
        lambda t: _approval(t, response={"decision": "APPROVE"}),
    ),
    ("boolean decision", "wait", "tool_input", lambda t: _approval(t, response={"decision": True})),
    ("no decision", "wait", "tool_input", lambda t: _approval(t, response={"reason": "ok"})),
    (
        "a tool's own approval shape",
        "wait",
        "tool_input",
        lambda t: _approval(t, response={"approved": True}),
    ),
    (
        "extra property",
        "wait",
        "tool_input",
        lambda t: _approval(t, response={"decision": "approve", "admin": True}),
    ),
    (
        "reason not a string",
        "wait",
        "tool_input",
        lambda t: _approval(t, response={"decision": "deny", "reason": ["no"]}),
    ),
    (
        "over-long reason",
        "wait",
        "tool_input",
        lambda t: _approval(t, response={"decision": "deny", "reason": "r" * 2001}),
    ),
    (
        "remember not a boolean",
        "wait",
        "tool_input",
        lambda t: _approval(t, response={"decision": "approve", "remember": "always"}),
    ),
    ("a string answer", "wait", "tool_input", lambda t: _approval(t, response="approve")),
    (
        "forged entry wait id",
        "wait",
        "tool_input",
        lambda t: _approval(t, wait_id=t.wait_id.replace("/wait/approval", "/wait/1")),
    ),
    (
        "another call's approval wait",
        "wait",
        "tool_input",
        lambda t: _approval(t, wait_id=f"{t.ids['unknown']}/wait/approval"),
    ),
    (
        "another workflow's approval wait",
        "wait",
        "tool_input",
        lambda t: _approval(t, wait_id="someone-else/tool/1/0/wait/approval"),
    ),
    ("to a call that needs no approval", "unknown", "tool_input", _to_unknown),
    ("via root: to a call that needs no approval", "root", "tool_input", _to_unknown),
    (
        "via root: wrong decision",
        "root",
        "tool_input",
        lambda t: _approval(t, response={"decision": "allow"}),
    ),
    (
        "via root: another workflow's call",
        "root",
        "tool_input",
        lambda t: _approval(t, process_id="someone-else/tool/1/0"),
    ),
]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def target(temporal_env: WorkflowEnvironment) -> AsyncIterator[Target]:
    async with serving(
        temporal_env, [GUARDED], tools=[reboot, lost], models={"default": ScriptedModel(_answer)}
    ) as scope:
        handle = await scope.start(
            "hostile-approvals", [Message.user("go")], id=fresh_id("hostile-approvals")
        )
        found = await held_target(handle)
        assert found.wait_id.endswith("/wait/approval")
        yield found


@pytest.mark.parametrize("as_update", [True, False], ids=["update", "signal"])
@pytest.mark.parametrize(("name", "where", "handler", "build"), CASES, ids=[c[0] for c in CASES])
async def test_a9_a_hostile_approval_answer_is_refused_and_changes_nothing(
    target: Target, name: str, where: Where, handler: Handler, build: Any, as_update: bool
) -> None:
    await send_hostile(target, where, handler, build(target), as_update=as_update)
    await steer_valid(target)
    assert REBOOTS["db-1"] == 0


def _valid(value: Any) -> bool:
    if not isinstance(value, dict) or value.get("decision") not in ("approve", "deny"):
        return False
    if set(value) - {"decision", "reason", "remember"}:
        return False
    reason, remember = value.get("reason", ""), value.get("remember", False)
    return isinstance(reason, str) and len(reason) <= 2000 and isinstance(remember, bool)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)
RESPONSES = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {"decision": st.one_of(st.sampled_from(["approve", "deny"]), JSON)},
        optional={"reason": JSON, "remember": JSON, "admin": JSON},
    ),
).filter(lambda v: not _valid(v))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_a9_generated_approval_answers_off_the_schema_change_nothing(
    target: Target, data: st.DataObject
) -> None:
    response = data.draw(RESPONSES)
    where: Where = data.draw(st.sampled_from(["wait", "root"]))
    payload = json.loads(_approval(target, response=response, answer_id=f"gen-{target.tried}"))
    await send_hostile(
        target,
        where,
        "tool_input",
        json.dumps(payload).encode(),
        as_update=data.draw(st.booleans()),
    )
    figures.FIGURES["hostile_inputs_generated"] += 1
    await steer_valid(target)


async def test_a9_after_every_hostile_approval_answer_an_approval_runs_the_body_once(
    target: Target,
) -> None:
    assert target.tried >= len(CASES) + EXAMPLES
    assert REBOOTS["db-1"] == 0
    await finish(target, {"decision": "approve", "reason": "checked"})
    assert REBOOTS["db-1"] == 1

"""Approval answers, policies and the UI's answer (rules a9-a11 of docs/approvals.md) on
the pure machines and the ToolCall driver: answers off the schema, forged wait ids and
reused answer ids change nothing; the policy and the approver's code are part of the
digest, and a bad policy is refused when built; the Tool call's live status holds the
exact signal input that answers its approval wait."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest

from scope_temporal.approval import ApprovalDecision, ApprovalPolicy
from scope_temporal.driver.tool_call import ToolCallDriver
from scope_temporal.errors import DefinitionError, InvalidToolInput, NoSuchWait, SignalConflict
from scope_temporal.interaction.approvals import signal_json
from scope_temporal.interaction.effects import CallSettled
from scope_temporal.interaction.tool_call import ToolCallMachine
from scope_temporal.payloads import ToolCallInput, ToolInputAnswer
from scope_temporal.tools import Succeeded
from tests.unit.approval_rounds import (
    DENY_WRITES,
    definition,
    gated,
    non_prod,
    raises,
    reply_result,
    responded,
    starts,
    wait_of,
)

# --- a9 on the machine -------------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [
        {"decision": "yes"},
        {"decision": "APPROVE"},
        {"decision": True},
        {},
        {"approved": True},
        {"decision": "approve", "admin": True},
        {"decision": "deny", "reason": 5},
        {"decision": "deny", "reason": "x" * 2001},
        {"decision": "approve", "remember": "yes"},
        "approve",
        None,
    ],
)
def test_a9_an_answer_off_the_schema_is_refused_and_changes_nothing(response: Any) -> None:
    child = gated()
    before = child.state
    with pytest.raises(InvalidToolInput):
        child.answer(wait_of(child), "h1", response)
    assert child.state == before


def test_a9_forged_wait_ids_and_reused_answer_ids_are_refused() -> None:
    child = gated()
    before = child.state
    for forged in ("root/tool/1/0/wait/1", "root/tool/1/1/wait/approval", "other/wait/approval"):
        with pytest.raises(NoSuchWait):
            child.answer(forged, "h1", {"decision": "approve"})
    assert child.state == before
    child.answer(wait_of(child), "a1", {"decision": "deny", "reason": "no"})
    assert (
        child.answer("root/tool/1/0/wait/approval", "a1", {"decision": "deny", "reason": "no"})
        is False
    )
    with pytest.raises(SignalConflict):
        child.answer("root/tool/1/0/wait/approval", "a1", {"decision": "approve"})
    with pytest.raises(NoSuchWait):  # answered: nothing waits any more
        child.answer("root/tool/1/0/wait/approval", "a2", {"decision": "approve"})


def test_a9_an_approval_answer_to_a_call_that_needs_none_is_refused() -> None:
    [start] = starts(responded(ApprovalPolicy.deny_writes(), ("read_status", {"name": "db"})))
    child = ToolCallMachine.start(start.request, start.approval)
    with pytest.raises(NoSuchWait):
        child.answer("root/tool/1/0/wait/approval", "h1", {"decision": "approve"})
    assert child.phase == "ready"


def test_a9_an_answer_while_paused_is_taken_and_the_body_runs_after_resume() -> None:
    child = gated()
    child.pause()
    child.answer(wait_of(child), "a1", {"decision": "approve"})
    assert child.next_attempt() is None and child.status == "paused"
    child.resume()
    assert child.next_attempt() is not None


def test_a9_a_cancelled_call_takes_no_approval() -> None:
    child = gated()
    wait = wait_of(child)
    child.cancel()
    with pytest.raises(NoSuchWait, match="was cancelled"):
        child.answer(wait, "a1", {"decision": "approve"})


# --- a10 ---------------------------------------------------------------------------------


def test_a10_the_policy_is_part_of_the_digest_only_when_set() -> None:
    plain = definition(None)
    assert "approval" not in plain.declaration()
    digests = {
        definition(p).digest
        for p in (
            None,
            ApprovalPolicy.deny_writes(),
            ApprovalPolicy(require=("exec",)),
            ApprovalPolicy.deny_writes(exempt=("write_note",)),
            ApprovalPolicy.deny_writes(otherwise="deny"),
            ApprovalPolicy.deny_writes(approver=non_prod),
            ApprovalPolicy.deny_writes(approver=raises),
        )
    }
    assert len(digests) == 7
    assert definition().digest == definition(ApprovalPolicy(require=("write", "exec"))).digest
    declared = definition(ApprovalPolicy.deny_writes(approver=non_prod)).declaration()["approval"]
    assert declared["approver"]["name"] == "tests.unit.approval_rounds.non_prod"
    assert declared["approver"]["code"].startswith("source:")


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (lambda: ApprovalPolicy(require=("delete",)), "unknown permissions ['delete']"),
        (
            lambda: ApprovalPolicy(tools=("write_note",), exempt=("write_note",)),
            "both required and exempt",
        ),
        (lambda: ApprovalPolicy(otherwise="maybe"), "otherwise must be 'ask' or 'deny'"),  # type: ignore[arg-type]
        (lambda: ApprovalPolicy(approver="yes"), "is not callable"),  # type: ignore[arg-type]
        (lambda: definition(ApprovalPolicy(tools=("rm_rf",))), "does not bind as tools"),
        (lambda: definition(ApprovalPolicy(exempt=("nope",))), "['nope']"),
    ],
    ids=["permission", "both", "otherwise", "approver", "unbound-tool", "unbound-exempt"],
)
def test_a10_a_bad_policy_is_refused_when_built(build: Any, says: str) -> None:
    with pytest.raises(DefinitionError, match=None) as refused:
        build()
    assert says in refused.value.message


def test_a10_a_policy_is_frozen() -> None:
    policy = ApprovalPolicy.deny_writes()
    with pytest.raises(AttributeError):
        policy.otherwise = "deny"  # type: ignore[misc]
    with pytest.raises(ValueError, match="needs a reason"):
        ApprovalDecision.deny("")


# --- a11 ---------------------------------------------------------------------------------


def test_a11_the_signal_json_answers_the_wait_as_is() -> None:
    child = gated()
    wait = wait_of(child)
    approve = json.loads(signal_json(wait, "approve"))
    deny = json.loads(signal_json(wait, "deny"))
    assert approve["wait_id"] == deny["wait_id"] == wait
    child.check_answer(wait, deny["answer_id"], deny["response"])
    assert child.answer(wait, approve["answer_id"], approve["response"]) is True
    assert child.phase == "ready"


class _Shown:
    """A transport that records the live status and runs every attempt successfully."""

    def __init__(self) -> None:
        self.details: list[str] = []
        self.attempts = 0

    async def wait_until(self, ready: Any) -> None:
        while not ready():
            await asyncio.sleep(0)

    def changed(self) -> None:
        pass

    def show(self, details: str) -> None:
        self.details.append(details)

    def warn(self, message: str) -> None:  # pragma: no cover - nothing to warn about
        pass

    def record_outcome(self, request: Any, outcome: Any) -> None:
        pass

    def publish(self, events: Any) -> None:
        pass

    async def flush_events(self) -> None:
        pass

    def evicted(self) -> bool:
        return False

    def record_settlement(self, settlement: Any) -> None:  # pragma: no cover
        pass

    async def run_tool(
        self, input: Any, *, start_to_close: Any, summary: str, task_queue: Any = None
    ) -> Any:
        self.attempts += 1
        return Succeeded(result=reply_result("web-1 restarted"))

    async def start_task(self, input: Any, *, summary: str) -> str | None:  # pragma: no cover
        return None


async def test_a11_the_live_status_holds_the_signal_input_that_answers_the_wait() -> None:
    [start] = starts(responded(DENY_WRITES, ("restart_service", {"name": "web-1"})))
    transport = _Shown()
    driver = ToolCallDriver(
        ToolCallInput(
            request=start.request, start_to_close=timedelta(seconds=5), approval=start.approval
        ),
        transport,
        limit=10**6,
    )
    running = asyncio.ensure_future(driver.run())
    for _ in range(5):
        await asyncio.sleep(0)
    shown = transport.details[-1]
    assert shown.startswith("**waiting** · entries 0 · waiting for approval ")
    assert 'Allow restart_service(name="web-1")?' in shown
    assert "send signal `scope.tool_input` with input" in shown
    pasted = [line.strip() for line in shown.splitlines() if line.startswith("    {")]
    assert len(pasted) == 2  # approve, then deny
    driver.tool_input_signal(ToolInputAnswer.model_validate_json(pasted[0]))
    settled = await asyncio.wait_for(running, 2)
    assert isinstance(settled, CallSettled) and settled.outcome.kind == "succeeded"
    assert settled.approval is not None and settled.approval.answer_id == "ui-approve"
    assert transport.attempts == 1

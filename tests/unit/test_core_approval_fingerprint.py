"""Defect 7 (issue 25): an approver's fingerprint covers what decides, not only its class.

A callable object or a bound method decides by its state as much as by its code: two
approvers that decide differently must give their Definitions different digests, so a
tightened policy deployed in place is a changed Definition. A plain function's digest
stays what it was (recorded histories hold it).
"""

from __future__ import annotations

import dataclasses
import functools
import threading

import pytest
from pydantic import BaseModel

from scope_temporal import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    Definition,
    DefinitionError,
    tool,
)
from tests.histories import agents


@tool(permission="exec")
def deploy(service: str) -> str:
    """Deploy a service."""
    return service


def _allow_prefix(prefix: str = "dev-", *, limit: int = 3):  # type: ignore[no-untyped-def]
    def approve(request: ApprovalRequest) -> ApprovalDecision:
        if str(request.arguments.get("service", "")).startswith(prefix) and limit > 0:
            return ApprovalDecision.approve(f"{prefix} is safe")
        return ApprovalDecision.ask()

    return approve


def plain_approver(request: ApprovalRequest, prefix: str = "dev-") -> ApprovalDecision:
    """A plain function: its digest is pinned below, from before defect 7 was fixed."""
    if request.arguments.get("service", "").startswith(prefix):
        return ApprovalDecision.approve("dev")
    return ApprovalDecision.ask()


def _digest(approver: object) -> str:
    policy = ApprovalPolicy(require=("exec",), approver=approver)  # type: ignore[arg-type]
    return Definition("fingerprinted", tools=[deploy], approval=policy).digest


class Approver:
    """A callable object: what it approves is its state."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        if str(request.arguments.get("service", "")).startswith(self.prefix):
            return ApprovalDecision.approve(self.prefix)
        return ApprovalDecision.ask()

    def judge(self, request: ApprovalRequest) -> ApprovalDecision:
        return self(request)


@dataclasses.dataclass(frozen=True)
class Rules:
    prefixes: tuple[str, ...]


class Settings(BaseModel):
    prefix: str


class Nested:
    def __init__(self, rules: Rules) -> None:
        self.rules = rules

    def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.ask()


class Slotted:
    __slots__ = ("prefix",)

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.ask()


def by_settings(request: ApprovalRequest, settings: Settings) -> ApprovalDecision:
    return ApprovalDecision.ask()


PAIRS = {
    "callable object": (Approver("dev-"), Approver("prod-")),
    "bound method": (Approver("dev-").judge, Approver("prod-").judge),
    "partial over an object": (
        functools.partial(by_settings, settings=Settings(prefix="dev-")),
        functools.partial(by_settings, settings=Settings(prefix="prod-")),
    ),
    "closure over an object": (
        _allow_prefix(Settings(prefix="dev-")),  # type: ignore[arg-type]
        _allow_prefix(Settings(prefix="prod-")),  # type: ignore[arg-type]
    ),
    "nested dataclass": (Nested(Rules(("dev-",))), Nested(Rules(("prod-",)))),
    "slots": (Slotted("dev-"), Slotted("prod-")),
}


@pytest.mark.parametrize("kind", list(PAIRS))
def test_seam_07_approvers_with_different_state_give_different_digests(kind: str) -> None:
    dev, prod = PAIRS[kind]
    assert _digest(dev) != _digest(prod)
    assert _digest(dev) == _digest(PAIRS[kind][0])  # the same state: the same digest


def test_seam_07_equal_state_gives_equal_digests_in_any_instance() -> None:
    assert _digest(Approver("dev-")) == _digest(Approver("dev-"))
    assert _digest(Approver("dev-").judge) == _digest(Approver("dev-").judge)
    looped = Approver("dev-")
    looped.me = looped  # type: ignore[attr-defined]  # a cycle ends the walk there
    assert _digest(looped) != _digest(Approver("dev-"))


def test_seam_07_a_plain_function_approvers_digest_is_what_it_was() -> None:
    # pinned from the code before defect 7 was fixed: histories record these digests
    assert _digest(plain_approver) == (
        "baa51626b6a761161e66e5e60b66ec2e1ccee71c8b7ac38817d9cdb0bd31c50a"
    )
    assert _digest(_allow_prefix("dev-")) == (
        "d7be84806bb65f90fdf0f9b569a887ca2302540864ad0fd5113f03dc0c78a257"
    )
    assert _digest(_allow_prefix("prod-")) != _digest(_allow_prefix("dev-"))
    declared = agents.recorded_approvals.declaration()["approval"]["approver"]
    assert set(declared) == {"name", "code"}  # no state entry for a plain function


class Locked:
    def __init__(self) -> None:
        self.guard = threading.Lock()

    def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.ask()


def test_seam_07_an_approver_whose_state_cannot_be_read_is_refused_when_built() -> None:
    with pytest.raises(DefinitionError) as refused:
        ApprovalPolicy(require=("exec",), approver=Locked())
    message = refused.value.message
    assert "approver.guard" in message and "lock" in message.lower()
    assert "Pass a plain function" in message
    with pytest.raises(DefinitionError):  # at any depth, and through a bound method
        ApprovalPolicy(require=("exec",), approver=Approver(threading.Lock()).judge)  # type: ignore[arg-type]

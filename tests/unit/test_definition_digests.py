"""A Definition's digest is recorded by every Interaction and checked on replay: the
digests of Definitions declared today are pinned here, so a change to how a Definition
is declared (or built) that would change a running Interaction's digest fails this test.

The values were computed before `Definition` became a dataclass built from its fields;
they must never change. A new option changes no digest while it is left at its default.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from datetime import timedelta

import pytest

from scope_temporal import (
    ApprovalPolicy,
    CompletionCandidate,
    CompletionDecision,
    Definition,
    DefinitionError,
    Delegate,
    ModelRetry,
    Options,
    ToolBudget,
    ToolSet,
    tool,
)


@tool(permission="read")
def look(query: str) -> str:
    """Look something up."""
    return query


@tool(permission="write", deferred=True)
def write_row(table: str, row: int) -> str:
    """Write a row."""
    return table


def judge(candidate: CompletionCandidate) -> CompletionDecision:
    return CompletionDecision.accept()


def minimal() -> Definition:
    return Definition("minimal")


def classic() -> Definition:
    """Every option the first Definition had, set away from its default."""
    return Definition(
        "classic",
        description="an agent",
        instructions="be brief",
        model="gpt-4o-mini",
        tools=ToolSet("kit", [look], deferred=[write_row]),
        delegates=[Delegate("helper", "helps", definition="other", capabilities={"read"})],
        max_model_calls=7,
        max_concurrent_tool_calls=3,
        completion_validator=judge,
        capabilities=("read", "write"),
        context_reducer="window",
        options=Options(temperature=0.2, response_format={"type": "json_object"}),
        output_schema={"type": "object", "properties": {"x": {"type": "string"}}},
        model_timeout=timedelta(minutes=2),
        model_heartbeat_timeout=None,
        tool_timeout=timedelta(seconds=90),
        tool_heartbeat_timeout=timedelta(seconds=4),
        tool_call_workflows="on_demand",
    )


def later_options() -> Definition:
    """Every option added since, each in the digest only when set."""
    return Definition(
        "later",
        tools=[look, write_row],
        max_model_calls=None,
        approval=ApprovalPolicy.deny_writes(otherwise="deny"),
        model_retry=ModelRetry(attempts=2, ambiguous=1),
        fallback_models=["backup-a", "backup-b"],
        max_total_tokens=10_000,
        tool_budget=ToolBudget(max_input_continuations=2),
        max_response_bytes=65_536,
    )


def zero_concurrency() -> Definition:
    """0 behaves as 1, and is declared as 1."""
    return Definition("zero", tools=[look], max_concurrent_tool_calls=0, capabilities=["read"])


PINNED = {
    minimal: "a8027e2f4d89649ea925266f5ee37f63e8884478c6743d9949f0ff141edb6a85",
    classic: "9ffb2e6c2eacc240e8a5206a5ef819a5f500689965ae21a5ed4e277bb3c25f9e",
    later_options: "66aaa0f2b2059e559dc6341f519c543c3e30b39fe39d99a409fcfb914ff6dd68",
    zero_concurrency: "0795ca6499447b89ee34566feccc3e011cbc703916b5bd2039e35013b2b1f49b",
}


@pytest.mark.parametrize("build", list(PINNED), ids=lambda build: build.__name__)
def test_the_digests_of_existing_definitions_never_change(build: object) -> None:
    assert callable(build)
    assert build().digest == PINNED[build]


def test_replace_builds_a_validated_variant_with_the_digest_of_the_same_declaration() -> None:
    original = classic()
    variant = original.replace(max_model_calls=9, fallback_models=["backup"])
    assert variant.max_model_calls == 9 and variant.fallback_models == ("backup",)
    assert original.max_model_calls == 7 and original.digest == PINNED[classic]
    spelled_out = Definition(
        **{f.name: getattr(original, f.name) for f in dataclasses.fields(original) if f.init}
        | {"max_model_calls": 9, "fallback_models": ["backup"]}
    )
    assert variant.digest == spelled_out.digest != original.digest
    assert original.replace().digest == original.digest  # nothing changed: the same digest
    with pytest.raises(DefinitionError, match="max_model_calls"):
        original.replace(max_model_calls=0)


def test_only_the_name_is_positional() -> None:
    assert Definition("named").name == "named"
    with pytest.raises(TypeError):
        Definition("named", "a description")  # type: ignore[misc]


def test_every_option_of_a_definition_carries_its_docstring() -> None:
    tree = ast.parse(inspect.getsource(Definition))
    body = tree.body[0]
    assert isinstance(body, ast.ClassDef)
    undocumented = [
        node.target.id
        for node, after in zip(body.body, [*body.body[1:], None], strict=True)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
        if node.target.id != "_"
        if not (
            isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        )
    ]
    assert undocumented == []
    options = {f.name for f in dataclasses.fields(Definition)}
    assert len(options) > 20

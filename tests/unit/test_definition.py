"""Definitions are validated when built and carry a digest of exactly their declaration."""

from __future__ import annotations

from datetime import timedelta

import pytest

from scope_temporal import CompletionDecision, Definition, DefinitionError, Delegate, ToolSet, tool


@tool(permission="read")
def a(x: int) -> str:
    """A."""
    return str(x)


@tool(permission="write")
def b(y: str) -> str:
    """B."""
    return y


def build(**changes: object) -> Definition:
    options: dict[str, object] = {
        "instructions": "hi",
        "tools": ToolSet("t", [a, b]),
        "delegates": [Delegate("helper", "helps", definition="other")],
        "max_model_calls": 5,
    }
    options.update(changes)
    return Definition("agent", **options)  # type: ignore[arg-type]


def accept(candidate: object) -> CompletionDecision:
    return CompletionDecision.accept()


def test_digest_is_stable_and_changes_with_the_declaration() -> None:
    assert build().digest == build().digest
    variants = [
        build(instructions="other"),
        build(tools=ToolSet("t", [a])),
        build(tools=ToolSet("t", [b, a])),
        build(max_model_calls=6),
        build(max_concurrent_tool_calls=2),
        build(capabilities={"read"}, delegates=[]),
        build(completion_validator=accept),
        build(delegates=[Delegate("helper", "helps", definition="other", max_model_calls=2)]),
    ]
    digests = {v.digest for v in variants} | {build().digest}
    assert len(digests) == len(variants) + 1  # every change changes it
    # ...and only a change does: the same declaration spelled differently keeps it
    assert build(tools=ToolSet("t", [a, b], deferred=[])).digest == build().digest


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_model_calls": 0}, "max_model_calls"),
        ({"max_concurrent_tool_calls": -1}, "max_concurrent_tool_calls"),
        ({"delegates": [Delegate("a", "collides", definition="x")]}, "collides with a tool"),
        (
            {"delegates": [Delegate("d", "1", definition="x"), Delegate("d", "2", definition="y")]},
            "two delegates",
        ),
        ({"capabilities": {"read", "fly"}}, "unknown capabilities"),
        (
            {
                "capabilities": {"read"},
                "delegates": [Delegate("d", "d", definition="x", capabilities={"write"})],
            },
            "may only narrow",
        ),
    ],
)
def test_bad_declarations_are_refused_when_built(changes: dict[str, object], message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        build(**changes)


def test_delegate_input_schema_must_be_an_object_schema_and_names_valid() -> None:
    with pytest.raises(DefinitionError, match="object schema"):
        Delegate("d", "d", definition="x", input_schema={"type": "string"})
    with pytest.raises(DefinitionError, match="valid tool name"):
        Delegate("bad name!", "d", definition="x")


def test_zero_concurrency_behaves_as_one_and_none_is_unlimited() -> None:
    assert build(max_concurrent_tool_calls=0).max_concurrent_tool_calls == 1
    assert build(max_model_calls=None).max_model_calls is None


def test_c9_c43_model_and_tool_calls_heartbeat_by_default() -> None:
    # a lost worker is noticed within the heartbeat timeout, not the 5-minute model timeout
    definition = Definition("beats")
    assert definition.model_heartbeat_timeout == timedelta(seconds=10)
    assert definition.tool_heartbeat_timeout == timedelta(seconds=10)
    assert definition.model_timeout == timedelta(minutes=5)

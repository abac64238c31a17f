"""Definitions are validated when built, immutable, and carry a digest of exactly their
declaration."""

from __future__ import annotations

import copy
import hashlib
import json
import pickle
from collections.abc import Callable
from datetime import timedelta

import pytest
from pydantic import ValidationError

from scope_temporal import (
    CompletionDecision,
    Definition,
    DefinitionError,
    Delegate,
    Options,
    ToolSet,
    tool,
)
from scope_temporal.frozen import FrozenDict, freeze_json


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


# --- immutability: the digest can never go stale ------------------------------------------

OUTPUT = {"type": "object", "properties": {"root_cause": {"type": "string"}}, "required": ["x"]}


def immutable_build() -> Definition:
    schema = {"type": "object", "properties": {"task": {"type": "string"}}, "required": []}
    return build(
        output_schema=json.loads(json.dumps(OUTPUT)),
        delegates=[Delegate("helper", "helps", definition="other", input_schema=schema)],
        options=Options(temperature=0.1, response_format={"type": "json_object", "keys": []}),
    )


@pytest.mark.parametrize(
    "target",
    [
        lambda d: d,
        lambda d: d.tools,
        lambda d: d.delegates[0],
    ],
    ids=["definition", "toolset", "delegate"],
)
def test_definitions_refuse_attribute_assignment_and_deletion(
    target: Callable[[Definition], object],
) -> None:
    definition = immutable_build()
    obj = target(definition)
    with pytest.raises(AttributeError, match=r"is immutable .* cannot set 'name'"):
        obj.name = "renamed"  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="cannot set 'new_attribute'"):
        obj.new_attribute = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="cannot delete 'name'"):
        del obj.name  # type: ignore[attr-defined]
    assert definition.digest == immutable_build().digest


def test_the_containers_a_definition_exposes_are_immutable_too() -> None:
    definition = immutable_build()
    before = definition.digest
    spec = definition.tools.tools[0]
    schema = definition.output_schema
    assert schema is not None
    mutations: list[Callable[[], object]] = [
        lambda: schema.update(type="string"),
        lambda: schema["properties"].pop("root_cause"),
        lambda: schema["required"].append("y"),
        lambda: schema["required"].__setitem__(0, "y"),
        lambda: spec.parameters["properties"].clear(),
        lambda: spec.parameters.__setitem__("type", "array"),
        lambda: definition.delegates[0].input_schema["required"].append("task"),
        lambda: definition.options.model_extra["response_format"]["keys"].append("k"),  # type: ignore[index]
    ]
    for mutate in mutations:
        with pytest.raises(TypeError, match="part of a declaration and cannot change"):
            mutate()
    with pytest.raises(ValidationError):
        spec.name = "other"  # type: ignore[misc]
    assert isinstance(definition.delegates, tuple) and isinstance(definition.tools.tools, tuple)
    assert isinstance(definition.capabilities, frozenset)
    assert definition.digest == before == immutable_build().digest
    canonical = json.dumps(definition.declaration(), sort_keys=True, separators=(",", ":"))
    assert hashlib.sha256(canonical.encode()).hexdigest() == before


def test_a_definition_keeps_its_own_copy_of_the_schemas_it_was_given() -> None:
    mine = json.loads(json.dumps(OUTPUT))
    definition = build(output_schema=mine)
    mine["properties"]["root_cause"]["type"] = "integer"  # the caller's dict stays theirs
    assert definition.output_schema == OUTPUT
    assert definition.digest == build(output_schema=OUTPUT).digest


def test_frozen_json_still_reads_copies_and_pickles_as_json() -> None:
    frozen = freeze_json({"a": [1, {"b": 2}], "t": (3,)})
    assert isinstance(frozen, dict) and isinstance(frozen["a"], list)
    assert json.loads(json.dumps(frozen)) == {"a": [1, {"b": 2}], "t": [3]}
    thawed = copy.deepcopy(frozen)
    thawed["a"][1]["b"] = 5  # a copy is the caller's own, and mutable
    assert frozen["a"][1]["b"] == 2
    shallow = copy.copy(frozen)
    shallow["c"] = 1
    assert "c" not in frozen
    again = pickle.loads(pickle.dumps(frozen))
    assert again == frozen and isinstance(again, FrozenDict)


def test_the_definition_says_its_completion_validator_runs_in_workflow_code_and_is_pure() -> None:
    doc = " ".join((Definition.__doc__ or "").split())
    assert "completion_validator" in doc
    assert "runs in workflow code" in doc and "must be pure" in doc

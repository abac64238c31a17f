"""`@tool` declarations, their validation, and the tool registry."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from scope_temporal.errors import TOOL_SCHEMA_INVALID, DefinitionError
from scope_temporal.tools import Tool, ToolInvocation, ToolRegistry, ToolSpec, inner, tool


class Query(BaseModel):
    text: str
    limit: int = 3


@tool
def bare(text: str) -> str:
    """Echo the text.

    Longer explanation that is not part of the description.
    """
    return text


@tool(permission="read", execution="parallel", timeout=1.5, concurrency_key="db")
async def configured(query: Query) -> str:
    """Search."""
    return query.text * query.limit


def test_bare_decorator_builds_a_tool_with_defaults() -> None:
    assert isinstance(bare, Tool)
    assert bare.name == "bare"
    assert bare.spec == ToolSpec(
        name="bare",
        description="Echo the text.",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": False,
        },
    )
    assert bare.spec.permission == "exec"
    assert bare.spec.scheduling_class == "sequential"
    assert bare.middleware == ()
    assert bare("hi") == "hi"  # the Tool still calls like the function


def test_options_reach_the_spec() -> None:
    spec = configured.spec
    assert spec.permission == "read"
    assert spec.execution == "parallel"
    assert spec.timeout == timedelta(seconds=1.5)
    assert spec.concurrency_key == "db"
    assert spec.parameters["properties"]["query"]["properties"]["limit"]["default"] == 3


def test_name_description_flags_timedelta_and_middleware() -> None:
    async def mw(invocation: ToolInvocation, call_next: Any) -> object:
        return await call_next(invocation)

    marked = inner(mw)

    @tool(
        name="renamed-tool",
        description="Custom.",
        timeout=timedelta(minutes=2),
        direct_result=True,
        deferred=True,
        middleware=[mw, marked],
    )
    def original() -> str:
        """Ignored docstring."""
        return ""

    assert original.name == "renamed-tool"
    assert original.spec.description == "Custom."
    assert original.spec.timeout == timedelta(minutes=2)
    assert original.spec.direct_result and original.spec.deferred
    assert original.middleware == (mw, marked)


def test_explicit_schema_replaces_the_generated_one() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}

    @tool(schema=schema)
    def count(n: int) -> str:
        return str(n)

    assert count.spec.parameters == schema
    assert count.spec.parameters is not schema
    schema["properties"] = {}
    assert count.spec.parameters["properties"] == {"n": {"type": "integer", "minimum": 1}}


def test_missing_docstring_gives_empty_description() -> None:
    @tool
    def quiet() -> str:
        return ""

    assert quiet.spec.description == ""


def _plain() -> str:
    return ""


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"name": "has space"}, "invalid tool name"),
        ({"name": "x" * 65}, "invalid tool name"),
        ({"name": ""}, "invalid tool name"),
        ({"permission": "admin"}, "unknown permission 'admin'"),
        ({"execution": "eventually"}, "unknown execution 'eventually'"),
        ({"timeout": 0}, "timeout must be positive"),
        ({"timeout": timedelta(seconds=-1)}, "timeout must be positive"),
        ({"timeout": "5s"}, "timeout must be a timedelta or seconds"),
        ({"timeout": True}, "timeout must be a timedelta or seconds"),
        ({"timeout": float("nan")}, "timeout must be a timedelta or seconds"),
        ({"middleware": ["not callable"]}, "middleware"),
        ({"concurrency_key": 5}, "concurrency_key"),
    ],
)
def test_invalid_declarations_are_definition_errors(options: dict[str, Any], fragment: str) -> None:
    with pytest.raises(DefinitionError, match=fragment):
        tool(**options)(_plain)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array"},
        {"properties": {}},
        {"type": "object", "properties": []},
        {"type": "object", "default": object()},
    ],
)
def test_invalid_explicit_schema_is_a_schema_error(schema: dict[str, Any]) -> None:
    with pytest.raises(DefinitionError) as caught:
        tool(schema=schema)(_plain)
    assert caught.value.code == TOOL_SCHEMA_INVALID


def test_decorating_twice_or_a_non_callable_is_refused() -> None:
    with pytest.raises(DefinitionError, match="plain function"):
        tool(bare)
    with pytest.raises(DefinitionError, match="plain function"):
        tool("text")  # type: ignore[call-overload]


def test_registry_maps_names_and_keeps_order() -> None:
    registry = ToolRegistry([bare, configured])
    assert registry.get("bare") is bare
    assert registry.get("configured") is configured
    assert registry.get("missing") is None
    assert registry.specs() == (bare.spec, configured.spec)
    assert "bare" in registry and len(registry) == 2
    assert list(registry) == [bare, configured]


def test_registry_refuses_duplicate_names() -> None:
    @tool(name="bare")
    def impostor() -> str:
        return "other"

    registry = ToolRegistry([bare])
    with pytest.raises(DefinitionError, match="duplicate tool name 'bare'"):
        registry.add(impostor)
    assert registry.get("bare") is bare
    with pytest.raises(DefinitionError, match="duplicate"):
        ToolRegistry([bare, bare])


def test_registry_refuses_undecorated_functions() -> None:
    with pytest.raises(DefinitionError, match="decorate it with @tool"):
        ToolRegistry([_plain])  # type: ignore[list-item]

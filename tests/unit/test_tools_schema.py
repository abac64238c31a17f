"""Parameter schemas generated from type hints, and argument/value validation."""

from __future__ import annotations

from enum import Enum
from typing import Literal, Optional

import pytest
from pydantic import BaseModel

from scope_temporal.errors import TOOL_SCHEMA_INVALID, DefinitionError
from scope_temporal.tools.docstrings import parameter_descriptions, summary
from scope_temporal.tools.schema import (
    check_schema,
    function_schema,
    validate_arguments,
    validate_value,
)
from scope_temporal.tools.validation import InvalidArguments, bind_arguments


class Color(Enum):
    red = "red"
    blue = "blue"


class Address(BaseModel):
    """A postal address."""

    street: str
    title: str = "home"


class Node(BaseModel):
    value: int
    children: list[Node] = []


def everything(
    query: str,
    limit: int = 5,
    ratio: float = 0.5,
    exact: bool = False,
    tags: list[str] | None = None,
    page: Optional[int] = None,  # noqa: UP045 - the typing.Optional spelling is under test
    color: Color = Color.red,
    mode: Literal["fast", "slow"] = "fast",
    address: Address | None = None,
    extra: dict[str, int] | None = None,
    json: str = "x",
) -> str:
    """Search everything.

    Second paragraph, not part of the summary.

    Args:
        query: What to look
            for.
        limit (int): How many hits.
        address: Where to ship.

    Returns:
        The hits.
    """
    return query


def test_scalar_types_defaults_and_required() -> None:
    schema = function_schema(everything)
    props = schema["properties"]
    assert schema["type"] == "object"
    assert schema["required"] == ["query"]
    assert schema["additionalProperties"] is False
    assert props["query"] == {"type": "string", "description": "What to look for."}
    assert props["limit"] == {"type": "integer", "default": 5, "description": "How many hits."}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["exact"] == {"type": "boolean", "default": False}
    assert props["json"] == {"type": "string", "default": "x"}


def test_list_optional_and_dict_types() -> None:
    props = function_schema(everything)["properties"]
    assert props["tags"]["anyOf"] == [
        {"type": "array", "items": {"type": "string"}},
        {"type": "null"},
    ]
    assert props["tags"]["default"] is None
    assert props["page"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    mapping = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert mapping in props["extra"]["anyOf"]


def test_enum_and_literal_become_enums() -> None:
    props = function_schema(everything)["properties"]
    assert props["color"]["enum"] == ["red", "blue"]
    assert props["color"]["default"] == "red"
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert "$ref" not in str(props)


def test_pydantic_model_parameter_is_inlined_without_titles() -> None:
    schema = function_schema(everything)
    address = schema["properties"]["address"]
    assert address["description"] == "Where to ship."
    obj = address["anyOf"][0]
    assert obj["type"] == "object"
    assert obj["required"] == ["street"]
    # "title" is a property name here and must survive title stripping.
    assert obj["properties"]["title"] == {"type": "string", "default": "home"}
    assert "$defs" not in schema
    assert "title" not in schema
    assert "title" not in schema["properties"]["query"]


def test_recursive_model_keeps_defs() -> None:
    def grow(root: Node) -> str:
        return ""

    schema = function_schema(grow)
    assert schema["properties"]["root"] == {"$ref": "#/$defs/Node"}
    assert set(schema["$defs"]) == {"Node"}
    assert validate_arguments(schema, '{"root": {"value": 1, "children": [{"value": 2}]}}') is None
    assert validate_arguments(schema, '{"root": {"value": 1, "children": [{"value": "x"}]}}')


def test_nested_forward_references_resolve_in_the_tool_module() -> None:
    def grow(roots: list["Node"]) -> str:  # noqa: UP037 - a forward reference is under test
        return ""

    assert function_schema(grow)["properties"]["roots"]["items"] == {"$ref": "#/$defs/Node"}


def test_no_parameters_gives_empty_object_schema() -> None:
    def ping() -> str:
        return "pong"

    assert function_schema(ping) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("def f(x): pass", "needs a type annotation"),
        ("def f(*args: int): pass", "passable by keyword"),
        ("def f(**kw: int): pass", "passable by keyword"),
        ("def f(x: int, /): pass", "passable by keyword"),
        ("def f(x: Missing): pass", "cannot read its signature"),
        ("def f(x: list['Missing']): pass", "Missing"),
    ],
)
def test_unusable_parameters_are_definition_errors(source: str, fragment: str) -> None:
    namespace: dict[str, object] = {}
    exec(source, namespace)
    with pytest.raises(DefinitionError, match=fragment):
        function_schema(namespace["f"])  # type: ignore[arg-type]


def test_docstring_summary_and_parameter_descriptions() -> None:
    assert summary(everything.__doc__) == "Search everything."
    assert summary(None) == ""
    assert parameter_descriptions(everything.__doc__) == {
        "query": "What to look for.",
        "limit": "How many hits.",
        "address": "Where to ship.",
    }
    assert parameter_descriptions("No args section.") == {}


SCHEMA = function_schema(everything)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"query": "x"}', None),
        ('{"query": "x", "limit": 3, "color": "blue", "mode": "slow"}', None),
        ("{}", "'query' is a required property"),
        ('{"query": 1}', "query: 1 is not of type 'string'"),
        ('{"query": "x", "tags": ["a", 2]}', "tags"),
        ('{"query": "x", "mode": "medium"}', "mode: 'medium' is not one of ['fast', 'slow']"),
        ('{"query": "x", "bogus": 1}', "'bogus' was unexpected"),
        ('{"query": "x", "address": {}}', "address"),
        ("not json", "arguments are not valid JSON"),
        ('{"query": "x", "limit": NaN}', "arguments are not valid JSON"),
        ('["query"]', "arguments must be a JSON object, not an array"),
        ('"query"', "arguments must be a JSON object, not a string"),
    ],
)
def test_validate_arguments(arguments: str, expected: str | None) -> None:
    error = validate_arguments(SCHEMA, arguments)
    if expected is None:
        assert error is None
    else:
        assert error is not None
        assert expected in error


def test_validate_arguments_counts_further_errors() -> None:
    error = validate_arguments(SCHEMA, '{"query": 1, "limit": "many"}')
    assert error is not None
    assert "(and 1 more error)" in error


def test_big_integers_keep_precision() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 2**70}}}
    assert validate_arguments(schema, f'{{"n": {2**70}}}') is None
    error = validate_arguments(schema, f'{{"n": {2**70 + 1}}}')
    assert error is not None
    assert str(2**70 + 1) in error


def test_validate_value() -> None:
    schema = {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}},
        "required": ["approved"],
    }
    assert validate_value(schema, {"approved": True}) is None
    assert validate_value(schema, {"approved": "yes"}) == "approved: 'yes' is not of type 'boolean'"
    assert validate_value({"type": "integer"}, 2**70) is None


def test_invalid_schemas_are_schema_errors() -> None:
    with pytest.raises(DefinitionError) as caught:
        check_schema({"type": "bogus"})
    assert caught.value.code == TOOL_SCHEMA_INVALID
    with pytest.raises(DefinitionError):
        validate_value({"type": "object", "required": "x"}, {})
    check_schema({"type": "object", "properties": {"a": {"type": "string"}}})


class Limits(BaseModel):
    limit: int = 3
    nested: Address | None = None


@pytest.mark.parametrize(
    ("arguments", "limit"),
    [
        ({"limit": 3.0}, 3),
        ({"limit": 9.223372036854776e18}, 2**63),  # found by the hostile-model test
        ({"limit": 1e20}, 10**20),
    ],
)
def test_an_integral_number_binds_to_an_int_as_json_schema_counts_it(
    arguments: dict[str, object], limit: int
) -> None:
    schema = {"type": "object", "properties": {"limit": {"type": "integer"}}}
    assert validate_value(schema, arguments) is None  # the schema takes it: so does the tool
    assert bind_arguments(Limits, arguments).limit == limit


def test_a_fraction_or_a_missing_field_is_still_refused_naming_it() -> None:
    with pytest.raises(InvalidArguments, match=r"limit: .*fractional"):
        bind_arguments(Limits, {"limit": 9.5})
    with pytest.raises(InvalidArguments, match=r"nested\.street: Field required"):
        bind_arguments(Limits, {"limit": 1e20, "nested": {"title": "x"}})

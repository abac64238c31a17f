"""JSON schemas for tool parameters, generated from a function's type hints.

Each parameter becomes a property of one object schema: its annotation gives the type
(str, int, float, bool, list[X], dict, Optional[X] / X | None, Literal, Enum, pydantic
models, ...), its default makes it optional, and its `Args:` docstring entry becomes its
description. Pydantic builds the schema; this module turns the result into one plain,
self-contained object schema (no titles, `$ref`s inlined unless a model is recursive).

The same generated pydantic model later turns validated JSON arguments into call
arguments, so the schema the model sees and the values the body gets never disagree.
Everything here is pure; validation (see `validation`) loads `jsonschema` lazily.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.errors import PydanticUndefinedAnnotation, PydanticUserError

from scope_temporal.errors import TOOL_SCHEMA_INVALID, DefinitionError
from scope_temporal.tools.docstrings import parameter_descriptions
from scope_temporal.tools.validation import check_schema, validate_arguments, validate_value

__all__ = [
    "arguments_model",
    "check_schema",
    "function_schema",
    "parameters_schema",
    "validate_arguments",
    "validate_value",
]

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = (
    "items",
    "additionalProperties",
    "not",
    "contains",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
)


def arguments_model(fn: Callable[..., Any]) -> type[BaseModel]:
    """A pydantic model with one field per parameter of `fn`.

    Field names are internal (`p0`, `p1`, ...); each field's alias is the parameter name,
    so any parameter name works (even `json` or `model_id`). Unknown arguments are
    forbidden (`additionalProperties: false` in the schema).

    Args:
        fn: A function or callable whose parameters are all named (no `/`, `*args`,
            `**kwargs`) and annotated.

    Returns:
        The model; validate with `model_validate(decoded_arguments)` (aliases apply).

    Raises:
        DefinitionError: a parameter is positional-only, variadic or unannotated, an
            annotation cannot be resolved, or pydantic cannot build a schema for it.
    """
    where = getattr(fn, "__qualname__", repr(fn))
    try:
        signature = inspect.signature(fn, eval_str=True)
    except (NameError, TypeError, ValueError) as exc:
        raise DefinitionError(f"tool function {where}: cannot read its signature: {exc}") from None
    descriptions = parameter_descriptions(inspect.getdoc(fn))
    fields: dict[str, Any] = {}
    for index, parameter in enumerate(signature.parameters.values()):
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise DefinitionError(
                f"tool function {where}: parameter {parameter.name!r} must be passable by "
                "keyword (no '/', '*args' or '**kwargs'): arguments arrive as a JSON object"
            )
        if parameter.annotation is parameter.empty:
            raise DefinitionError(
                f"tool function {where}: parameter {parameter.name!r} needs a type annotation "
                "(the JSON schema is generated from type hints)"
            )
        options: dict[str, Any] = {"alias": parameter.name}
        if parameter.name in descriptions:
            options["description"] = descriptions[parameter.name]
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[f"p{index}"] = (parameter.annotation, Field(default, **options))
    try:
        model: type[BaseModel] = create_model(
            "Arguments",
            __config__=ConfigDict(extra="forbid", protected_namespaces=()),
            __module__=getattr(fn, "__module__", None) or __name__,  # resolves forward refs
            **fields,
        )
        if not model.__pydantic_complete__:
            model.model_rebuild(raise_errors=True)
    except (PydanticUserError, PydanticUndefinedAnnotation, TypeError) as exc:
        raise DefinitionError(f"tool function {where}: {exc}", code=TOOL_SCHEMA_INVALID) from None
    return model


def parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The plain JSON object schema of an arguments model.

    Returns:
        A new dict with `type: object`, `properties` and `required` always present,
        defaults kept, `title` keywords removed and `$ref`s inlined (kept with `$defs` only
        when a model refers to itself).

    Raises:
        DefinitionError: (code `tool.schema_invalid`) pydantic cannot express a type.
    """
    try:
        raw = model.model_json_schema()
    except PydanticUserError as exc:
        raise DefinitionError(str(exc), code=TOOL_SCHEMA_INVALID) from None
    definitions = raw.pop("$defs", {})
    try:
        schema = _inline(raw, definitions, ())
    except _RecursiveReference:
        schema = dict(raw, **({"$defs": definitions} if definitions else {}))
    schema = _without_titles(schema)
    schema.setdefault("properties", {})
    schema.setdefault("required", [])
    return schema


def function_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """The parameter schema of `fn` (see `arguments_model` for the rules and errors)."""
    return parameters_schema(arguments_model(fn))


class _RecursiveReference(Exception):
    """A definition refers to itself, so it cannot be inlined."""


def _subschemas(schema: Mapping[str, Any]) -> Iterator[tuple[str, str | int | None, Any]]:
    """(keyword, key or index or None, subschema) for every direct subschema."""
    for keyword, value in schema.items():
        if keyword in _SCHEMA_MAPS and isinstance(value, Mapping):
            for key, sub in value.items():
                yield keyword, key, sub
        elif keyword in _SCHEMA_LISTS and isinstance(value, list):
            for position, sub in enumerate(value):
                yield keyword, position, sub
        elif keyword in _SCHEMA_VALUES and isinstance(value, Mapping):
            yield keyword, None, value


def _rebuild(schema: Mapping[str, Any], transform: Callable[[Any], Any]) -> dict[str, Any]:
    """A copy of `schema` with `transform` applied to each direct subschema."""
    result = {k: copy.deepcopy(v) for k, v in schema.items()}
    for keyword, key, sub in _subschemas(schema):
        if not isinstance(sub, Mapping):
            continue
        if key is None:
            result[keyword] = transform(sub)
        else:
            result[keyword][key] = transform(sub)
    return result


def _inline(
    schema: Mapping[str, Any], definitions: Mapping[str, Any], seen: tuple[str, ...]
) -> dict[str, Any]:
    """Replace `#/$defs/X` references by their definitions; _RecursiveReference on a cycle."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            raise _RecursiveReference(name)
        target = _inline(definitions[name], definitions, (*seen, name))
        siblings = {k: copy.deepcopy(v) for k, v in schema.items() if k != "$ref"}
        return {**target, **siblings}
    return _rebuild(schema, lambda sub: _inline(sub, definitions, seen))


def _without_titles(schema: Mapping[str, Any]) -> dict[str, Any]:
    stripped = _rebuild(schema, _without_titles)
    stripped.pop("title", None)
    return stripped

"""Check JSON values against JSON schemas, with short errors written for a model to act on.

`jsonschema` is imported lazily inside the functions: this module is also imported by
workflow-side code, which loads only pure, light modules at import time.
JSON text is decoded with the standard library, so integers of any size keep their
exact value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

import pydantic
from pydantic import BaseModel

from scope_temporal.errors import TOOL_SCHEMA_INVALID, DefinitionError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from jsonschema.exceptions import SchemaError, ValidationError
    from jsonschema.protocols import Validator

__all__ = [
    "InvalidArguments",
    "bind_arguments",
    "check_schema",
    "decode_arguments",
    "first_error",
    "validate_arguments",
    "validate_value",
]

_MAX_ERROR_CHARS = 300


class InvalidArguments(Exception):
    """A call's arguments do not fit the tool; the body must not run.

    Args:
        error: A short, model-readable reason (which field is wrong and why).
    """

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def decode_arguments(arguments_json: str) -> dict[str, Any]:
    """Decode a call's raw JSON arguments into a dict.

    Args:
        arguments_json: The text the model produced.

    Returns:
        The decoded object (integers keep full precision).

    Raises:
        InvalidArguments: the text is not valid JSON (NaN/Infinity included) or not an object.
    """
    try:
        value = json.loads(arguments_json, parse_constant=_reject_constant)
    except ValueError as exc:
        raise InvalidArguments(f"arguments are not valid JSON ({_shorten(str(exc))})") from None
    if not isinstance(value, dict):
        raise InvalidArguments(f"arguments must be a JSON object, not {_json_type(value)}")
    return value


M = TypeVar("M", bound=BaseModel)


def bind_arguments(model: type[M], arguments: dict[str, Any]) -> M:
    """Decoded arguments as the tool's parameter types (`model`).

    JSON Schema counts an integral number as an integer whatever its spelling, so an
    `int` parameter takes `3.0` and `9.3e18` as it takes `3` and `9300000000000000000`
    (pydantic alone refuses an integral float beyond 64 bits).

    Raises:
        InvalidArguments: `field: reason` for the first error (and how many more).
    """
    try:
        return model.model_validate(arguments)
    except pydantic.ValidationError as exc:
        widened = _integral_floats_as_ints(arguments, exc)
        if widened is None:
            raise InvalidArguments(first_error(exc)) from None
    try:
        return model.model_validate(widened)
    except pydantic.ValidationError as exc:
        raise InvalidArguments(first_error(exc)) from None


def _integral_floats_as_ints(arguments: dict[str, Any], exc: pydantic.ValidationError) -> Any:
    """`arguments` with each integral float pydantic found too big for an int made an
    int, or None when the errors hold none."""
    found = [
        e["loc"]
        for e in exc.errors(include_url=False)
        if e["type"] == "int_parsing_size"
        and isinstance(e["input"], float)
        and e["input"].is_integer()
    ]
    if not found:
        return None
    widened: Any = json.loads(json.dumps(arguments))
    for loc in found:
        holder = widened
        for part in loc[:-1]:
            holder = holder[part]
        holder[loc[-1]] = int(holder[loc[-1]])
    return widened


def first_error(exc: pydantic.ValidationError) -> str:
    """`field: reason` for the first pydantic error (plus how many more there are)."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    location = ".".join(str(part) for part in first["loc"])
    text = f"{location}: {first['msg']}" if location else first["msg"]
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more)"
    return text


def validate_arguments(schema: Mapping[str, Any], arguments_json: str) -> str | None:
    """Check a call's raw JSON arguments against a tool's parameter schema.

    Args:
        schema: The tool's JSON schema (an object schema).
        arguments_json: The raw JSON text the model produced.

    Returns:
        None when the arguments are valid; otherwise a short human-readable error naming
        the offending field and the reason. Invalid JSON and non-objects are errors too.

    Raises:
        DefinitionError: (code `tool.schema_invalid`) the schema itself is not a valid JSON
            schema; that is the tool author's fault, not the caller's.
    """
    try:
        arguments = decode_arguments(arguments_json)
    except InvalidArguments as exc:
        return exc.error
    return validate_value(schema, arguments)


def validate_value(schema: Mapping[str, Any], value: Any) -> str | None:
    """Check an already-decoded JSON value (e.g. a tool-input answer) against a schema.

    Args:
        schema: A JSON schema.
        value: The decoded value.

    Returns:
        None when valid; otherwise a short error naming where and why.

    Raises:
        DefinitionError: (code `tool.schema_invalid`) the schema is not a valid JSON schema.
    """
    from jsonschema.exceptions import best_match

    errors = list(_validator(schema).iter_errors(value))
    if not errors:
        return None
    message = _describe(best_match(errors))
    if len(errors) > 1:
        others = len(errors) - 1
        message += f" (and {others} more error{'s' if others > 1 else ''})"
    return message


def check_schema(schema: Mapping[str, Any]) -> None:
    """Check that a schema is a valid JSON schema (of the draft it declares; default 2020-12).

    Raises:
        DefinitionError: (code `tool.schema_invalid`) naming what is wrong.
    """
    _validator(schema)


def _validator(schema: Mapping[str, Any]) -> Validator:
    if not isinstance(schema, Mapping):
        raise DefinitionError(
            f"a JSON schema must be an object, not {type(schema).__name__}",
            code=TOOL_SCHEMA_INVALID,
        )
    # Checking a schema costs milliseconds; every call of a tool validates against the
    # same one, so the checked validator is kept by the schema's canonical JSON text.
    try:
        canonical = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise DefinitionError(
            f"a JSON schema must be plain JSON data ({exc})", code=TOOL_SCHEMA_INVALID
        ) from None
    return _checked_validator(canonical)


@lru_cache(maxsize=512)
def _checked_validator(canonical_schema: str) -> Validator:
    """A validator for a schema given as canonical JSON text (pure: safe to share)."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import Draft202012Validator, validator_for

    plain = json.loads(canonical_schema)
    cls = validator_for(plain, default=Draft202012Validator)
    try:
        cls.check_schema(plain)
    except SchemaError as exc:
        raise DefinitionError(
            f"invalid JSON schema: {_describe(exc)}", code=TOOL_SCHEMA_INVALID
        ) from None
    return cls(plain)


def _describe(error: ValidationError | SchemaError) -> str:
    path = _path(error.absolute_path)
    message = _shorten(str(error.message))
    return f"{path}: {message}" if path else message


def _path(parts: Iterable[str | int]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _shorten(text: str) -> str:
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 3] + "..."


def _json_type(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")

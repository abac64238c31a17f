"""The compact wire form of scope-temporal's own payloads (pure: no Temporal import).

What crosses Temporal is history, and history is what a cluster stores, replicates and
bills for. The payload of a tool call used to be mostly envelope: every field at its
default spelled out (`"first_outcome":null`, `"paused":false`, `"deferred_tools":[]`),
and identities written again that the call's position already names (a ToolCall's
`process_id`, `effect_id` and `ref` all follow from its parent and position). The bench's
cost ledger (`bench/ledger.py`) shows where each byte goes.

The rules, for scope-temporal's own models only (a user's model keeps pydantic's form):
 1. A field whose value equals its default is left out; reading it back gives the
    default, so the decoded value is equal to the one sent.
 2. A tag (a field typed as one `Literal` value, e.g. `kind`) is always written: unions
    are told apart by it.
 3. A model may name fields it derives from its other fields: a field equal to what its
    rule derives is left out (`WIRE_DERIVED`), or written as `true` where leaving it out
    already means something else in older payloads (`WIRE_MARKED`); reading puts the
    derived value back.
 4. A model may write a value it holds twice only once (`Shared`): `wire_share` puts in
    the second place where the first is (e.g. a settled round's result, which the
    conversation holds too), and the model's own reading puts the value back.
 5. Reading accepts the long form too, so every history written before stays readable,
    and a payload written by this form is read by no older worker: roll workers forward
    (docs/deploy.md).

Left out: the payload's metadata (`{"encoding": "json/plain"}`), Temporal's own, which
the hand-written workflows carry too.
"""

from __future__ import annotations

import contextlib
import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, model_validator

Derivation = Callable[[Mapping[str, Any]], Any]
"""Derives one field's JSON value from the other fields' (rule 3)."""


class Derived(BaseModel):
    """A model with fields derived from its others (rule 3): `WIRE_DERIVED` maps a field
    to its rule, for fields a payload leaves out when derived; `WIRE_MARKED` likewise, for
    fields a payload writes as `true` when derived."""

    WIRE_DERIVED: ClassVar[dict[str, Derivation]] = {}
    WIRE_MARKED: ClassVar[dict[str, Derivation]] = {}

    @model_validator(mode="before")
    @classmethod
    def _derive(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        todo = [n for n in cls.WIRE_DERIVED if n not in data]
        todo += [n for n in cls.WIRE_MARKED if data.get(n) is True]
        if todo:
            data = dict(data)
            for name in todo:
                rule = cls.WIRE_DERIVED.get(name) or cls.WIRE_MARKED[name]
                # what a rule needs may be missing too: validation then says so
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    data[name] = rule(data)
        return data


class Shared(BaseModel):
    """A model that writes values it holds twice once (rule 4). Its `wire_share` changes
    the compact form in place; the model reads it back by a validator of its own.
    `WIRE_OWN` names the fields `wire_share` writes itself (left out of the dump first,
    where the model is the value or a field of the value `compact` is given)."""

    WIRE_OWN: ClassVar[frozenset[str]] = frozenset()

    def wire_share(self, dumped: dict[str, Any]) -> None:
        """Replace, in `dumped` (this model's compact form), what is held twice."""


def compact(value: BaseModel) -> Any:
    """`value` as JSON-ready data in the compact form (rules 1-4)."""
    dumped = value.model_dump(mode="json", exclude_defaults=True, exclude=_own(value))
    _restore(value, dumped)
    return dumped


def _own(value: BaseModel) -> dict[str, Any] | None:
    """What `compact` leaves out of the dump for `Shared` models to write (`WIRE_OWN`)."""
    own: dict[str, Any] = {}
    if isinstance(value, Shared):
        own.update(dict.fromkeys(value.WIRE_OWN, True))
    for name in type(value).model_fields:
        field = getattr(value, name)
        if isinstance(field, Shared) and field.WIRE_OWN and name not in own:
            own[name] = dict.fromkeys(field.WIRE_OWN, True)
    return own or None


def _restore(value: Any, dumped: Any) -> None:
    """Put back the tags `exclude_defaults` dropped (rule 2) and drop derived fields
    (rule 3), walking only into fields whose type can hold a model."""
    if isinstance(value, BaseModel) and isinstance(dumped, dict):
        plan = _plan(type(value))
        for name, tag in plan.tags:
            dumped.setdefault(name, tag)
        for name in plan.nested:
            if name in dumped:
                _restore(getattr(value, name), dumped[name])
        if isinstance(value, Derived):
            for name, rule in value.WIRE_MARKED.items():
                if name in dumped and dumped[name] == rule(dumped):
                    dumped[name] = True
            for name, rule in value.WIRE_DERIVED.items():
                if name in dumped and dumped[name] == rule(dumped):
                    del dumped[name]
        if isinstance(value, Shared):
            value.wire_share(dumped)
    elif isinstance(value, list | tuple) and isinstance(dumped, list):
        for item, out in zip(value, dumped, strict=False):
            _restore(item, out)
    elif isinstance(value, dict) and isinstance(dumped, dict):
        for key, item in value.items():
            if isinstance(key, str) and key in dumped:
                _restore(item, dumped[key])


class _Plan(typing.NamedTuple):
    tags: tuple[tuple[str, Any], ...]
    nested: tuple[str, ...]


@functools.cache
def _plan(cls: type[BaseModel]) -> _Plan:
    tags: list[tuple[str, Any]] = []
    nested: list[str] = []
    for name, field in cls.model_fields.items():
        annotation = field.annotation
        if typing.get_origin(annotation) is Literal and len(typing.get_args(annotation)) == 1:
            tags.append((name, typing.get_args(annotation)[0]))
        elif _may_hold_model(annotation):
            nested.append(name)
    return _Plan(tuple(tags), tuple(nested))


def _may_hold_model(annotation: Any) -> bool:
    if annotation is Any or annotation is object:
        return False  # user data: serialized as pydantic does, never compacted
    if isinstance(annotation, type):
        return issubclass(annotation, BaseModel)
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _may_hold_model(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, tuple, dict, set, frozenset) or (
        origin is not None and getattr(origin, "__module__", "") == "collections.abc"
    ):
        return any(_may_hold_model(arg) for arg in typing.get_args(annotation))
    return False


__all__ = ["Derivation", "Derived", "Shared", "compact"]

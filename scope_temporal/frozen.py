"""Immutable declarations: objects whose attributes cannot change once built, and JSON
containers that refuse every change.

A Definition carries a digest of its whole declaration, recorded by each Interaction and
checked on replay; if anything it exposes could change after it was built, the digest
would go stale silently. `Frozen` refuses attribute assignment and deletion after
construction; `freeze_json` turns the JSON values a declaration holds (schemas, options)
into `FrozenDict` / `FrozenList`, which stay real `dict` / `list` instances, so
`jsonschema`, pydantic and `json` read them as before. Copies (`copy.copy`,
`copy.deepcopy`) are ordinary mutable containers: a copy is the caller's own.
Pure and workflow-safe.
"""

from __future__ import annotations

import copy
from dataclasses import FrozenInstanceError
from typing import Any, NoReturn

__all__ = ["Frozen", "FrozenDict", "FrozenList", "freeze_json", "thaw_json"]


def _refuse(container: object) -> NoReturn:
    raise TypeError(
        f"this {type(container).__name__} is part of a declaration and cannot change "
        "(its digest covers it); build a new declaration instead"
    )


class FrozenDict(dict[str, Any]):
    """A JSON object that refuses every change; still a `dict` for every reader."""

    def __setitem__(self, key: str, value: Any) -> NoReturn:
        _refuse(self)

    def __delitem__(self, key: str) -> NoReturn:
        _refuse(self)

    def __ior__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _refuse(self)

    def clear(self) -> NoReturn:
        _refuse(self)

    def pop(self, *args: Any) -> NoReturn:
        _refuse(self)

    def popitem(self) -> NoReturn:
        _refuse(self)

    def setdefault(self, *args: Any) -> NoReturn:
        _refuse(self)

    def update(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self)

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return thaw_json(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, Any]]]:
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A JSON array that refuses every change; still a `list` for every reader."""

    def __setitem__(self, index: Any, value: Any) -> NoReturn:
        _refuse(self)

    def __delitem__(self, index: Any) -> NoReturn:
        _refuse(self)

    def __iadd__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _refuse(self)

    def __imul__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _refuse(self)

    def append(self, value: Any) -> NoReturn:
        _refuse(self)

    def extend(self, values: Any) -> NoReturn:
        _refuse(self)

    def insert(self, index: Any, value: Any) -> NoReturn:
        _refuse(self)

    def pop(self, *args: Any) -> NoReturn:
        _refuse(self)

    def remove(self, value: Any) -> NoReturn:
        _refuse(self)

    def clear(self) -> NoReturn:
        _refuse(self)

    def sort(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self)

    def reverse(self) -> NoReturn:
        _refuse(self)

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return thaw_json(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> tuple[type[FrozenList], tuple[list[Any]]]:
        return (FrozenList, (list(self),))


def freeze_json(value: Any) -> Any:
    """`value` with every dict and list in it, at any depth, frozen (tuples kept as tuples).

    An already frozen container is returned as is, so a frozen constant keeps its identity.
    """
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, dict):
        return FrozenDict({key: freeze_json(item) for key, item in value.items()})
    if isinstance(value, list):
        return FrozenList(freeze_json(item) for item in value)
    if isinstance(value, tuple):
        return tuple(freeze_json(item) for item in value)
    return value


def thaw_json(value: Any) -> Any:
    """A mutable deep copy of a (possibly frozen) JSON value."""
    if isinstance(value, dict):
        return {key: thaw_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [thaw_json(item) for item in value]
    if isinstance(value, tuple):
        return tuple(thaw_json(item) for item in value)
    return copy.deepcopy(value)


class Frozen:
    """Base of declarations whose attributes are fixed once `__init__` calls `_freeze()`.

    Setting or deleting an attribute afterwards raises `dataclasses.FrozenInstanceError`
    (an `AttributeError`) naming the object and the attribute.
    """

    _frozen = False

    def _freeze(self) -> None:
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, name: str, value: object) -> None:
        if self._frozen:
            self._refuse(name, "set")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if self._frozen:
            self._refuse(name, "delete")
        object.__delattr__(self, name)

    def _refuse(self, name: str, verb: str) -> NoReturn:
        label = getattr(self, "name", None)
        what = f"{type(self).__name__} {label!r}" if isinstance(label, str) else repr(self)
        raise FrozenInstanceError(
            f"{what} is immutable (its digest covers every attribute): cannot {verb} "
            f"{name!r}. Build a new {type(self).__name__} instead."
        )

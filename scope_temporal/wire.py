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
 2. A tag (a field typed as one `Literal` value, e.g. `kind`) is written wherever a union
    may need it: at the top of a payload (unless its model is only ever read as itself,
    `WIRE_EXACT`) and inside any field but one typed as exactly that model
    (`request: ToolEffectRequest`), where the reader knows the model anyway.
 3. A model may name fields it derives from its other fields: a field equal to what its
    rule derives is left out (`WIRE_DERIVED`), or written as `true` where leaving it out
    already means something else in older payloads (`WIRE_MARKED`); reading puts the
    derived value back.
 4. A model may name fields holding a SHA-256 digest (`WIRE_DIGESTS`): a lowercase hex
    digest (64 characters) is written in base64url (43), and read back as hex.
 5. A payload may leave out what the workflow id it belongs to derives (`WIRE_CONTEXT`):
    a ToolCall child's id (`<parent>/tool/<seq>/<index>`) names its caller and the
    call's position, and an activity's payloads belong to the workflow that scheduled
    it. Temporal hands the converter that id (its serialization context) wherever such a
    payload is written or read: the parent writing a child's input and reading its
    result, the child reading its input and writing its result, a workflow and its
    activity's worker on either side of an activity. A value is left out only when it
    equals what the id derives, and put back only when missing, so a payload reads back
    equal wherever it was written with the same id.
 6. A model may name newer defaults for optional fields (`WIRE_DEFAULTS`, e.g. the usual
    heartbeat, or the caller as where events go), which a payload leaving such a field
    out means only when it carries the mark `"_":1`; a marked payload writes every other
    such field, even a null. Without the mark a missing field is its model default, as
    in every payload written before.
 7. A model may write a value it holds twice only once (`Shared`): `wire_share` puts in
    the second place where the first is (e.g. a settled round's result, which the
    conversation holds too), and the model's own reading puts the value back.
 8. Reading accepts the long form too, so every history written before stays readable,
    and a payload written by this form is read by no older worker: roll workers forward
    (docs/deploy.md). A value a rule puts back (rule 3's and rule 6's constants among
    them) never changes: payloads that leave the field out mean it.
 9. A model may hold small values (`Grouped`: a call's route, what an Interaction's run
    carries) whose fields are written flat among its own (`Flat`), as they were when they
    were loose fields: `WIRE_FLAT` lists the keys in the order they were written, so the
    bytes stay what they were, and the other rules see the flat keys (the holder's rules
    derive, mark and default a group's fields by their own names). Reading puts the keys
    back into their group; the model's own dumps (the long form, which size checks
    measure) are flat too.

Left out: the payload's metadata (`{"encoding": "json/plain"}`), Temporal's own, which
the hand-written workflows carry too.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import json
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer, model_validator

Derivation = Callable[[Mapping[str, Any]], Any]
"""Derives one field's JSON value from the other fields' (rule 3)."""

Path = tuple[str, ...]
"""A field inside a payload's JSON, by name at each level: `("request", "parent_id")`."""

ContextRule = Callable[[str], Mapping[Path, Any]]
"""The JSON values of the fields a workflow id derives (rule 5); {} when it derives none."""


class Derived(BaseModel):
    """A model with fields derived from its others (rule 3): `WIRE_DERIVED` maps a field
    to its rule, for fields a payload leaves out when derived; `WIRE_MARKED` likewise, for
    fields a payload writes as `true` when derived. `WIRE_DIGESTS` names its digest fields
    (rule 4); `WIRE_CONTEXT`, for a model sent as a whole payload, what the payload's
    workflow id derives (rule 5); `WIRE_DEFAULTS` its marked defaults (rule 6);
    `WIRE_EXACT`, that a payload of it is only ever read as it (rule 2). Reading also
    puts a `Flat` model's flat keys back into their groups (rule 9)."""

    WIRE_DERIVED: ClassVar[dict[str, Derivation]] = {}
    WIRE_MARKED: ClassVar[dict[str, Derivation]] = {}
    WIRE_DIGESTS: ClassVar[frozenset[str]] = frozenset()
    WIRE_CONTEXT: ClassVar[ContextRule | None] = None
    WIRE_DEFAULTS: ClassVar[dict[str, Derivation]] = {}
    WIRE_EXACT: ClassVar[bool] = False

    @model_validator(mode="before")
    @classmethod
    def _derive(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if cls.WIRE_DEFAULTS and data.get(MARK) == 1:
            data = {k: v for k, v in data.items() if k != MARK}
            for name, rule in cls.WIRE_DEFAULTS.items():
                if name not in data:
                    with contextlib.suppress(KeyError, TypeError, ValueError):
                        data[name] = rule(data)
        todo = [n for n in cls.WIRE_DERIVED if n not in data]
        todo += [n for n in cls.WIRE_MARKED if data.get(n) is True]
        short = [n for n in cls.WIRE_DIGESTS if _is_short_digest(data.get(n))]
        if todo or short:
            data = dict(data)
            for name in short:
                data[name] = _hex_digest(data[name])
            for name in todo:
                rule = cls.WIRE_DERIVED.get(name) or cls.WIRE_MARKED[name]
                # what a rule needs may be missing too: validation then says so
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    data[name] = rule(data)
        return _gathered(cls, data)


class Grouped(BaseModel):
    """A value whose fields a payload writes flat, among its holder's (rule 9)."""


class Flat(Derived):
    """A model holding `Grouped` values, written flat (rule 9). `WIRE_FLAT` lists the
    payload's keys in the order they are written: the model's own fields and its groups'
    fields, by their own names (keys it leaves unlisted follow, in field order)."""

    WIRE_FLAT: ClassVar[tuple[str, ...]] = ()
    WIRE_LATER: ClassVar[frozenset[str]] = frozenset()
    """Keys added after the bytes of its dumps were pinned (e.g. an Interaction's
    `mcp_sessions`): left out of every dump, the long form too, while empty (their
    default), so a payload without them dumps and measures as it did before."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        groups = _groups.__wrapped__(cls)  # not cached: the model may not be complete yet
        keys = [n for n in cls.model_fields if n not in groups]
        keys += [n for group in groups.values() for n in group.model_fields]
        unknown = set(cls.WIRE_FLAT) - set(keys)
        if unknown or len(keys) != len(set(keys)):
            raise TypeError(
                f"{cls.__name__}: WIRE_FLAT names no field {sorted(unknown)}, or "
                "a group's field has the name of another field"
            )

    @model_serializer(mode="wrap")
    def _write_flat(self, handler: SerializerFunctionWrapHandler) -> Any:
        dumped = handler(self)
        if not isinstance(dumped, dict):
            return dumped
        for name in _groups(type(self)):
            inner = dumped.pop(name, None)
            if isinstance(inner, dict):
                dumped.update(inner)
        for name in self.WIRE_LATER:
            if name in dumped and not dumped[name]:
                del dumped[name]
        order = self.WIRE_FLAT
        listed = {k: dumped[k] for k in order if k in dumped}
        return listed | {k: v for k, v in dumped.items() if k not in listed}


@functools.cache
def _groups(cls: type[BaseModel]) -> Mapping[str, type[BaseModel]]:
    """The fields of `cls` holding a `Grouped` value (rule 9), and its model."""
    found = {}
    for name, field in cls.model_fields.items():
        model = _one_model(field.annotation)
        if model is not None and issubclass(model, Grouped):
            found[name] = model
    return types.MappingProxyType(found)


def _gathered(cls: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    """Rule 9, reading: each group's flat keys back into it (unless it is given whole)."""
    groups = _groups(cls)
    if not groups:
        return data
    data = dict(data)
    for name, group in groups.items():
        if name not in data:
            found = {k: data.pop(k) for k in group.model_fields if k in data}
            if found:
                data[name] = found
    return data


class Shared(BaseModel):
    """A model that writes values it holds twice once (rule 7). Its `wire_share` changes
    the compact form in place; the model reads it back by a validator of its own.
    `WIRE_OWN` names the fields `wire_share` writes itself (left out of the dump first,
    where the model is the value or a field of the value `compact` is given)."""

    WIRE_OWN: ClassVar[frozenset[str]] = frozenset()

    def wire_share(self, dumped: dict[str, Any]) -> None:
        """Replace, in `dumped` (this model's compact form), what is held twice."""


def compact(value: BaseModel, workflow_id: str | None = None) -> Any:
    """`value` as JSON-ready data in the compact form (rules 1-7, 9); `workflow_id`: the
    workflow the payload belongs to (Temporal's serialization context), if known."""
    dumped = value.model_dump(mode="json", exclude_defaults=True, exclude=_own(value))
    _restore(value, dumped, tagged=not (isinstance(value, Derived) and value.WIRE_EXACT))
    rule = type(value).WIRE_CONTEXT if isinstance(value, Derived) else None
    if rule is not None and workflow_id is not None:
        for path, derived in rule(workflow_id).items():
            inner = _holder(dumped, path)
            if inner is not None and inner.get(path[-1], _NO_DEFAULT) == derived:
                del inner[path[-1]]
    return dumped


def expand(model: type[BaseModel], data: Any, workflow_id: str) -> Any:
    """Put back into a payload's JSON `data`, to be read as `model`, what its workflow id
    derives and the payload left out (rule 5)."""
    rule = model.WIRE_CONTEXT if issubclass(model, Derived) else None
    if rule is None or not isinstance(data, dict):
        return data
    for path, derived in rule(workflow_id).items():
        inner = _holder(data, path)
        if inner is not None:
            inner.setdefault(path[-1], derived)
    return data


def _holder(data: Any, path: Path) -> dict[str, Any] | None:
    """The dict inside `data` holding the field at `path` (None: there is none)."""
    for name in path[:-1]:
        data = data.get(name) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else None


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


def _restore(value: Any, dumped: Any, *, tagged: bool) -> None:
    """Put back the tags `exclude_defaults` dropped where a reader may need them (rule 2),
    drop derived fields (rule 3), shorten digests (rule 4) and write shared values once
    (rule 7), walking only into fields
    whose type can hold a model."""
    if isinstance(value, BaseModel) and isinstance(dumped, dict):
        plan = _plan(type(value))
        if tagged:
            for name, tag in plan.tags:
                dumped.setdefault(name, tag)
        for name in plan.nested:
            item = getattr(value, name)
            if isinstance(item, Grouped):  # written flat (rule 9): its keys are here
                _restore(item, dumped, tagged=False)
            elif name in dumped:
                _restore(item, dumped[name], tagged=plan.exact.get(name) is not type(item))
        if isinstance(value, Derived):
            for name, rule in value.WIRE_MARKED.items():
                if name in dumped and dumped[name] == rule(dumped):
                    dumped[name] = True
            for name, rule in value.WIRE_DERIVED.items():
                if name in dumped and dumped[name] == rule(dumped):
                    del dumped[name]
            for name in value.WIRE_DIGESTS:
                if _is_hex_digest(dumped.get(name)):
                    dumped[name] = _short_digest(dumped[name])
            if value.WIRE_DEFAULTS:
                _mark_defaults(value, dumped)
        if isinstance(value, Shared):
            value.wire_share(dumped)
    elif isinstance(value, list | tuple) and isinstance(dumped, list):
        for item, out in zip(value, dumped, strict=False):
            _restore(item, out, tagged=True)
    elif isinstance(value, dict) and isinstance(dumped, dict):
        for key, item in value.items():
            if isinstance(key, str) and key in dumped:
                _restore(item, dumped[key], tagged=True)


MARK = "_"
"""The key of rule 6's mark (no field's name: pydantic fields never start with `_`)."""

_NO_DEFAULT = object()


def _mark_defaults(value: Derived, dumped: dict[str, Any]) -> None:
    """Rule 6: when it is shorter, leave out the fields at their marked default, write
    the others (even null), and mark the payload."""
    include = set(value.WIRE_DEFAULTS) | set(_groups(type(value)))  # flat (rule 9)
    full = value.model_dump(mode="json", include=include)
    marked = dict(dumped)
    marked[MARK] = 1
    for name, rule in value.WIRE_DEFAULTS.items():
        usual: Any = _NO_DEFAULT
        with contextlib.suppress(KeyError, TypeError, ValueError):
            usual = rule(dumped)
        if full[name] == usual:
            marked.pop(name, None)
        else:
            marked.setdefault(name, full[name])
    if _size(marked, value.WIRE_DEFAULTS) < _size(dumped, value.WIRE_DEFAULTS):
        dumped.clear()
        dumped.update(marked)


def _size(data: dict[str, Any], names: Mapping[str, Any]) -> int:
    """The JSON size of what the two forms differ in: the mark and the defaulted fields."""
    return len(json.dumps({k: v for k, v in data.items() if k in names or k == MARK}))


_HEX = frozenset("0123456789abcdef")


def _is_hex_digest(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and _HEX.issuperset(value)


def _is_short_digest(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 43


def _short_digest(value: str) -> str:
    return base64.urlsafe_b64encode(bytes.fromhex(value)).rstrip(b"=").decode()


def _hex_digest(value: str) -> str:
    try:
        return base64.urlsafe_b64decode(value + "=").hex()
    except (binascii.Error, ValueError):
        return value  # not one of ours: validation sees it as it came


class _Plan(typing.NamedTuple):
    tags: tuple[tuple[str, Any], ...]
    nested: tuple[str, ...]
    exact: Mapping[str, type[BaseModel]]
    """Nested fields typed as exactly one model (or None), and that model: the tags of a
    value of exactly that model go unwritten."""


@functools.cache
def _plan(cls: type[BaseModel]) -> _Plan:
    tags: list[tuple[str, Any]] = []
    nested: list[str] = []
    exact: dict[str, type[BaseModel]] = {}
    for name, field in cls.model_fields.items():
        annotation = field.annotation
        if typing.get_origin(annotation) is Literal and len(typing.get_args(annotation)) == 1:
            tags.append((name, typing.get_args(annotation)[0]))
        elif _may_hold_model(annotation):
            nested.append(name)
            model = _one_model(annotation)
            if model is not None:
                exact[name] = model
    return _Plan(tuple(tags), tuple(nested), types.MappingProxyType(exact))


def _one_model(annotation: Any) -> type[BaseModel] | None:
    """The model class a field of this type holds, if exactly one (or None)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _one_model(args[0]) if len(args) == 1 else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


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


__all__ = [
    "MARK",
    "ContextRule",
    "Derivation",
    "Derived",
    "Flat",
    "Grouped",
    "Path",
    "Shared",
    "compact",
    "expand",
]

"""A stable fingerprint of a function's code: how a Definition's digest covers the pure
functions it holds (its completion validator), so a changed body is detected on replay
like any other change of the declaration.

What the fingerprint covers:
1. The function's **source text** (from `inspect.getsource`), without comments, blank
   lines or trailing spaces: the same text gives the same fingerprint on every Python
   version and in every process; moving the function within its file does not change it.
   Without source (a `.pyc`-only install, `exec`'d code, code compiled under the name of a
   file that is not its source) it falls back to the **compiled code** (bytecode,
   constants, names, recursively for nested code objects), marked with the Python minor
   version, because bytecode changes between minor versions.
2. The values the function holds beyond its text: argument defaults and the variables of
   its closure (e.g. `make_validator(min_words=5)` differs from `min_words=6`), as JSON;
   a value that is not plain data counts by its type only, functions by their own
   fingerprint.

Not covered: what the function reads or calls at run time (module constants, helpers in
its module). Change those with the function, or rename the Definition.

Never uses `id()`, memory addresses or `hash()` of strings, so it is stable across
processes (string hashing is randomised per process; sets are sorted here).

`state_fingerprint` covers what `code_fingerprint` counts by type only: the **state of the
objects** a callable is bound to (a callable object's attributes, a bound method's
`__self__`, objects among a partial's arguments or a function's defaults and closure),
read as data, recursively. It is None for a callable bound to no object, so a
declaration that adds it only when set keeps every such digest what it was.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import fractions
import functools
import hashlib
import inspect
import io
import json
import pathlib
import re
import sys
import textwrap
import tokenize
import types
import uuid
from collections.abc import Callable
from typing import Any


def code_fingerprint(fn: Callable[..., Any]) -> str:
    """`"source:<sha256>"`, or `"bytecode-3.X:<sha256>"` when the source is not available.

    Args:
        fn: a function, lambda, bound method, `functools.partial` or callable object.

    Deterministic: the same code and bound values give the same result in any process.
    """
    kind, payload = _describe(fn, set())
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return f"{kind}:{hashlib.sha256(text.encode()).hexdigest()}"


def _describe(fn: Any, seen: set[int]) -> tuple[str, Any]:
    """(kind, JSON-able description) of a callable; `seen` guards recursive closures."""
    if id(fn) in seen:
        return "source", "<recursive>"
    seen = seen | {id(fn)}
    if isinstance(fn, functools.partial):
        kind, inner = _describe(fn.func, seen)
        return kind, {
            "partial": inner,
            "args": [_value(a, seen) for a in fn.args],
            "keywords": {k: _value(v, seen) for k, v in fn.keywords.items()},
        }
    if isinstance(fn, types.MethodType):
        kind, inner = _describe(fn.__func__, seen)
        return kind, {"method": inner, "self": _type_name(fn.__self__)}
    if isinstance(fn, types.FunctionType):
        kind, code = _code(fn)
        closure = fn.__closure__ or ()
        return kind, {
            "name": f"{fn.__module__}.{fn.__qualname__}",
            "code": code,
            "defaults": [_value(v, seen) for v in fn.__defaults__ or ()],
            "kwdefaults": {k: _value(v, seen) for k, v in (fn.__kwdefaults__ or {}).items()},
            "closure": {
                name: _value(_cell_value(cell), seen)
                for name, cell in zip(fn.__code__.co_freevars, closure, strict=True)
            },
        }
    call = None if isinstance(fn, type) else inspect.getattr_static(type(fn), "__call__", None)
    if isinstance(call, types.FunctionType):  # a callable object: its class's __call__
        kind, inner = _describe(call, seen)
        return kind, {"callable": _type_name(fn), "call": inner}
    return "source", {"builtin": _type_name(fn), "name": getattr(fn, "__qualname__", "?")}


def _code(fn: types.FunctionType) -> tuple[str, Any]:
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError, tokenize.TokenError, SyntaxError):
        # no source, or a file that is not its source (code compiled under the name of
        # another file, e.g. exec'd documentation): the compiled code is the truth
        version = f"bytecode-{sys.version_info.major}.{sys.version_info.minor}"
        return version, _bytecode(fn.__code__)
    return "source", _without_comments(textwrap.dedent(source))


def _without_comments(source: str) -> str:
    """The source without comments, blank lines and trailing spaces; a fragment that does
    not tokenize (a lambda cut out of a longer expression) keeps its comments."""
    lines = source.splitlines()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        tokens = []
    for token in reversed(tokens):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            lines[row - 1] = lines[row - 1][:col]
    return "\n".join(line.rstrip() for line in lines if line.strip())


def _bytecode(code: types.CodeType) -> dict[str, Any]:
    """The compiled code, without line numbers or the file name."""
    return {
        "name": code.co_qualname,
        "code": code.co_code.hex(),
        "consts": [_constant(c) for c in code.co_consts],
        "names": list(code.co_names),
        "varnames": list(code.co_varnames),
        "freevars": list(code.co_freevars),
        "cellvars": list(code.co_cellvars),
        "args": [code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount],
        "flags": code.co_flags,
    }


def _constant(value: object) -> Any:
    if isinstance(value, types.CodeType):
        return _bytecode(value)
    if isinstance(value, frozenset):
        return {"frozenset": sorted(json.dumps(_constant(v), sort_keys=True) for v in value)}
    if isinstance(value, tuple):
        return {"tuple": [_constant(v) for v in value]}
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    if value is None or isinstance(value, bool | int | str):
        return value
    return {type(value).__name__: repr(value)}  # float, complex, Ellipsis: repr is stable


def _value(value: object, seen: set[int]) -> Any:
    """A bound value as JSON: plain data as is, a callable by its fingerprint, anything
    else by its type (its repr may hold a memory address)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return {"float": repr(value)}
    if isinstance(value, list | tuple):
        return [_value(v, seen) for v in value]
    if isinstance(value, dict):
        items = ([_value(k, seen), _value(v, seen)] for k, v in value.items())
        return {"dict": sorted(json.dumps(item, sort_keys=True) for item in items)}
    if isinstance(value, set | frozenset):
        return {"set": sorted(json.dumps(_value(v, seen), sort_keys=True) for v in value)}
    if isinstance(value, enum.Enum):
        return {"enum": _type_name(value), "value": _value(value.value, seen)}
    if callable(value) and not isinstance(value, type):
        return {"function": _describe(value, seen)}
    return {"type": _type_name(value)}


def _cell_value(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # a cell not filled yet
        return None


def _type_name(value: object) -> str:
    kind = value if isinstance(value, type) else type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


class Unfingerprintable(TypeError):
    """A callable is bound to an object whose state cannot be read as data (a lock, a
    client, a C object): two such callables could decide differently under one digest."""

    def __init__(self, path: str, value: object) -> None:
        super().__init__(f"{path} is a {_type_name(value)}, whose state cannot be read as data")
        self.path = path


_ATOMS = (
    bytes,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    datetime.timezone,
    decimal.Decimal,
    fractions.Fraction,
    uuid.UUID,
    pathlib.PurePath,
    re.Pattern,
    complex,
)
"""Immutable values whose repr is their whole state (and holds no memory address)."""
_BUILTINS = (
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    types.MethodWrapperType,
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
)


def state_fingerprint(fn: Callable[..., Any], name: str = "fn") -> str | None:
    """`"state:<sha256>"` of the objects `fn` is bound to, or None when it is bound to
    none (see the module docstring).

    Args:
        fn: a function, lambda, bound method, `functools.partial` or callable object.
        name: how errors name `fn` (the path of a value starts with it).

    Raises:
        Unfingerprintable: a bound object (at any depth) has no state readable as data;
            its `path` says where, e.g. `fn.__self__.client`.
    """
    walk = _StateWalk()
    described = walk.callable(fn, name)
    if not walk.objects:
        return None
    text = json.dumps(described, sort_keys=True, separators=(",", ":"))
    return f"state:{hashlib.sha256(text.encode()).hexdigest()}"


class _StateWalk:
    """One walk over what a callable is bound to; `objects` counts the objects met."""

    def __init__(self) -> None:
        self.objects = 0
        self._path: set[int] = set()  # the objects on the way down (cycles stop there)

    def callable(self, fn: Any, path: str) -> Any:
        if isinstance(fn, functools.partial):
            return {
                "partial": self.callable(fn.func, f"{path}.func"),
                "args": [self.value(a, f"{path}.args[{i}]") for i, a in enumerate(fn.args)],
                "keywords": {k: self.value(v, f"{path}.{k}") for k, v in fn.keywords.items()},
            }
        if isinstance(fn, types.MethodType):
            return {
                "self": self.value(fn.__self__, f"{path}.__self__"),
                "method": self.callable(fn.__func__, path),
            }
        if isinstance(fn, types.FunctionType):
            closure = zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True)
            return {
                "defaults": [self.value(v, f"{path}.<default>") for v in fn.__defaults__ or ()],
                "kwdefaults": {
                    k: self.value(v, f"{path}.{k}") for k, v in (fn.__kwdefaults__ or {}).items()
                },
                "closure": {n: self.value(_cell_value(c), f"{path}.{n}") for n, c in closure},
            }
        call = None if isinstance(fn, type) else inspect.getattr_static(type(fn), "__call__", None)
        if isinstance(call, types.FunctionType):  # a callable object: its class's __call__
            return {"object": self.state(fn, path), "call": self.callable(call, path)}
        if isinstance(fn, type):
            return {"class": _type_name(fn)}
        if not isinstance(fn, _BUILTINS):  # a callable C object (e.g. an attrgetter)
            return {"object": self.state(fn, path)}
        bound = getattr(fn, "__self__", None)  # a builtin method bound to a value
        if bound is None or isinstance(bound, types.ModuleType):
            return None
        return {"self": self.value(bound, f"{path}.__self__")}

    def value(self, value: Any, path: str) -> Any:
        if value is None or isinstance(value, bool | int | str):
            return value
        if isinstance(value, float):
            return {"float": repr(value)}
        if isinstance(value, enum.Enum):
            return {"enum": _type_name(value), "name": value.name}
        if isinstance(value, _ATOMS):
            return {_type_name(value): repr(value)}
        if isinstance(value, type):
            return {"class": _type_name(value)}
        if isinstance(value, types.ModuleType):
            return {"module": value.__name__}
        if isinstance(value, list | tuple):
            return [self.value(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            items = (
                [self.value(k, f"{path}.<key>"), self.value(v, f"{path}[{k!r}]")]
                for k, v in value.items()
            )
            return {"dict": sorted(json.dumps(item, sort_keys=True) for item in items)}
        if isinstance(value, set | frozenset):
            members = (self.value(v, f"{path}.<member>") for v in value)
            return {"set": sorted(json.dumps(m, sort_keys=True) for m in members)}
        if callable(value):
            return {"function": self.callable(value, path)}
        return {"object": self.state(value, path)}

    def state(self, value: Any, path: str) -> Any:
        """An object's attributes (its `__dict__`, `__slots__` or dataclass fields)."""
        self.objects += 1
        if id(value) in self._path:
            return "<recursive>"
        attributes = _attributes(value)
        if attributes is None:
            raise Unfingerprintable(path, value)
        self._path.add(id(value))
        try:
            return {
                "type": _type_name(value),
                "state": {k: self.value(v, f"{path}.{k}") for k, v in attributes.items()},
            }
        finally:
            self._path.discard(id(value))


def _attributes(value: object) -> dict[str, Any] | None:
    """The attributes that make up an object's state, or None when it keeps its state
    where Python code cannot read it (a C object: a lock, a socket, a client's pool)."""
    found: dict[str, Any] = {}
    readable = hasattr(value, "__dict__")
    if readable:
        found.update(vars(value))
    for kind in type(value).__mro__[:-1]:
        slots = kind.__dict__.get("__slots__")
        if slots is None:
            continue
        readable = True
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot.startswith("__") and slot.endswith("__"):
                continue  # __dict__, __weakref__, pydantic's bookkeeping
            attribute = f"_{kind.__name__.lstrip('_')}{slot}" if slot.startswith("__") else slot
            if hasattr(value, attribute):
                found.setdefault(slot, getattr(value, attribute))
    if dataclasses.is_dataclass(value):
        readable = True
        for field in dataclasses.fields(value):
            found.setdefault(field.name, getattr(value, field.name))
    return found if readable else None


__all__ = ["Unfingerprintable", "code_fingerprint", "state_fingerprint"]

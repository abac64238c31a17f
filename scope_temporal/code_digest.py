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
"""

from __future__ import annotations

import enum
import functools
import hashlib
import inspect
import io
import json
import sys
import textwrap
import tokenize
import types
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


__all__ = ["code_fingerprint"]

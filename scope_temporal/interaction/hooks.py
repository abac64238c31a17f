"""Calling a Definition's pure hooks (the completion validator, the approver) from the
loop: they run in workflow code, so a hook that raises, is async or returns the wrong
kind of value is a definite host failure naming it, never a workflow-task retry loop."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TypeVar

from scope_temporal import errors

A = TypeVar("A")
T = TypeVar("T")


def call_hook(
    hook: Callable[[A], object], argument: A, named: str, expected: type[T], returns: str
) -> T:
    """`hook(argument)`, which must be a `expected` value.

    Args:
        named: the hook for people, e.g. "The completion validator check of 'ops'".
        returns: how to return a right value, for the error (e.g. "X.accept() or ...").

    Raises:
        ScopeError: `interaction.host.failed` when the hook raises, is async, or returns
            anything but an `expected`.
    """
    article = "an" if expected.__name__[0] in "AEIOU" else "a"
    try:
        value: object = hook(argument)
    except Exception as exc:
        raise errors.ScopeError(f"{named} raised {exc!r}.", code=errors.HOST_FAILED) from exc
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # never run: nothing may be awaited in workflow code
        raise errors.ScopeError(
            f"{named} is async; it runs in workflow code, so it must be a plain (and pure) "
            f"function returning {article} {expected.__name__}.",
            code=errors.HOST_FAILED,
        )
    if not isinstance(value, expected):
        raise errors.ScopeError(
            f"{named} returned {value!r}, not {article} {expected.__name__}; return {returns}.",
            code=errors.HOST_FAILED,
        )
    return value


__all__ = ["call_hook"]

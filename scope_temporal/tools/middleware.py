"""Middleware: async wrappers around a tool call, composed in declared order.

A middleware is `async (invocation, call_next) -> result`: it may inspect or replace the
invocation passed on, short-circuit by returning a result (or raising) without calling
`call_next`, and transform the result. The result is what the body returned (str,
ToolOutput, any JSON value...), before conversion into an outcome. Exceptions are
classified exactly as if the body raised them.

Position relative to argument validation:
- outer (default): runs before the arguments are checked against the tool's schema, so
  it also sees calls that end up rejected as invalid;
- inner (`inner(mw)`): runs after validation, so it only sees valid arguments.

Order: worker-level middleware, then the tool's own; within each group, first declared =
outermost. Outer ones wrap validation, which wraps the inner ones, which wrap the body.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from scope_temporal.errors import DefinitionError
from scope_temporal.tools.context import ToolInvocation

__all__ = ["CallNext", "InnerMiddleware", "Middleware", "chain", "compose", "inner", "is_inner"]

CallNext = Callable[[ToolInvocation], Awaitable[object]]
"""Runs the rest of the chain (further middleware, validation, the body)."""

Middleware = Callable[[ToolInvocation, CallNext], Awaitable[object]]
"""`async (invocation, call_next) -> result` around one tool call."""


@dataclass(frozen=True)
class InnerMiddleware:
    """A middleware marked to run after argument validation (see `inner`)."""

    middleware: Middleware
    """The wrapped middleware."""

    async def __call__(self, invocation: ToolInvocation, call_next: CallNext) -> object:
        return await self.middleware(invocation, call_next)


def inner(middleware: Middleware) -> Middleware:
    """Mark a middleware as inner: it runs only after the arguments passed the schema.

    Args:
        middleware: The middleware to mark (marking twice is harmless).

    Returns:
        The marked middleware; it behaves exactly like the original.
    """
    return middleware if is_inner(middleware) else InnerMiddleware(middleware)


def is_inner(middleware: Middleware) -> bool:
    """True if `middleware` was marked with `inner`."""
    return isinstance(middleware, InnerMiddleware)


def chain(*middlewares: Middleware) -> Middleware:
    """Compose middleware into one, the first declared being the outermost.

    The result is inner when every part is inner, outer when none is.

    Raises:
        DefinitionError: inner and outer middleware are mixed (their split around
            validation could not be kept inside one chain); list them separately instead.
    """
    marks = {is_inner(m) for m in middlewares}
    if len(marks) > 1:
        raise DefinitionError(
            "chain() cannot mix inner and outer middleware: pass them as separate entries"
        )
    parts = tuple(middlewares)

    async def chained(invocation: ToolInvocation, call_next: CallNext) -> object:
        return await compose(parts, call_next)(invocation)

    return inner(chained) if marks == {True} else chained


def compose(middlewares: Sequence[Middleware], terminal: CallNext) -> CallNext:
    """A `CallNext` that runs `middlewares` (first = outermost) around `terminal`."""
    call_next = terminal
    for middleware in reversed(middlewares):
        call_next = _bind(middleware, call_next)
    return call_next


def _bind(middleware: Middleware, call_next: CallNext) -> CallNext:
    async def step(invocation: ToolInvocation) -> object:
        return await middleware(invocation, call_next)

    return step

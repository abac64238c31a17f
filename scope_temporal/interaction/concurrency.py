"""Per-invocation concurrency: a tool's classifier decides, at admission, how one call
may overlap the others of its round (conformance rule c51: docs/differences.md, the
`test_c51_*` tests).

A classifier receives the admitted invocation (arguments already valid) and returns
`(key, concurrent)`: calls with one key never overlap, `concurrent=False` runs the call
alone (scheduled as `exclusive`), `concurrent=True` lets it run beside others within
MaxConcurrentToolCalls. It runs in workflow code like every hook of a Definition; one
that raises, is async, or returns anything but `(str | None, bool)` is a definite host
failure naming it, raised here before any call of the round has started.
"""

from __future__ import annotations

from scope_temporal import errors
from scope_temporal.interaction.hooks import call_hook
from scope_temporal.tools.context import ToolInvocation
from scope_temporal.tools.spec import SchedulingClass, ToolSpec

_RETURNS = "a (key, concurrent) tuple: key a non-empty str or None, concurrent a bool"


def classify(spec: ToolSpec, invocation: ToolInvocation) -> tuple[SchedulingClass, str | None]:
    """The scheduling class and concurrency key of one admitted call of `spec`.

    Without a classifier: the tool's declared `execution` and `concurrency_key`.

    Raises:
        ScopeError: `interaction.host.failed`, naming the classifier and the call, when
            the classifier raises, is async or returns anything but `(str | None, bool)`.
    """
    classifier = spec.concurrency
    if classifier is None:
        return spec.scheduling_class, spec.concurrency_key
    named = (
        f"The concurrency classifier {getattr(classifier, '__qualname__', repr(classifier))} "
        f"of tool {spec.name!r} (call {invocation.call.id!r})"
    )
    value = call_hook(classifier, invocation, named, tuple, _RETURNS)
    key, concurrent = value if len(value) == 2 else (None, None)
    if (key is not None and not (isinstance(key, str) and key)) or not isinstance(concurrent, bool):
        raise errors.ScopeError(
            f"{named} returned {value!r}; return {_RETURNS}.", code=errors.HOST_FAILED
        )
    return ("parallel" if concurrent else "exclusive"), key


__all__ = ["classify"]

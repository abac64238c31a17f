"""`@tool`: turn a function into a `Tool` — its frozen `ToolSpec` plus the callable body.

Everything is checked when the decorator runs (at import time), so a bad declaration
fails the worker's start, never a model's call. The decorator itself is pure (no
`jsonschema` import): a module declaring tools stays cheap to import on the workflow side.

Sync bodies run in a worker thread (`asyncio.to_thread`) so a blocking tool never stalls
the event loop that heartbeats the activity; a timeout or cancellation stops waiting for
such a body but cannot stop the thread itself.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Generic, ParamSpec, TypedDict, TypeVar, Unpack, get_args, overload

from pydantic import BaseModel, ValidationError

from scope_temporal.errors import TOOL_SCHEMA_INVALID, DefinitionError
from scope_temporal.tools.docstrings import summary
from scope_temporal.tools.middleware import Middleware
from scope_temporal.tools.schema import arguments_model, parameters_schema
from scope_temporal.tools.spec import (
    PERMISSIONS,
    BackgroundSpec,
    ConcurrencyClassifier,
    Execution,
    Permission,
    ToolSpec,
    is_provider_tool_name,
)
from scope_temporal.tools.validation import bind_arguments, decode_arguments, first_error

__all__ = ["Tool", "implement", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

_EXECUTIONS: frozenset[str] = frozenset(get_args(Execution))


class Tool(Generic[P, R]):
    """A tool bound on a worker: its spec, its body and its own middleware.

    Calling a `Tool` calls the original function unchanged (handy in unit tests).
    Only `spec` goes into Definitions and payloads; the Tool itself stays on the worker.
    """

    def __init__(
        self,
        fn: Callable[P, R],
        spec: ToolSpec,
        middleware: tuple[Middleware, ...],
        arguments: type[BaseModel],
    ) -> None:
        self.fn: Callable[P, R] = fn
        """The decorated function."""
        self.spec: ToolSpec = spec
        """The frozen description the model and the scheduler see."""
        self.middleware: tuple[Middleware, ...] = middleware
        """The tool's own middleware, in declared order (after the worker's)."""
        self._call: Callable[..., Any] = fn
        self.arguments: type[BaseModel] = arguments
        """The pydantic model the call's JSON arguments are validated into."""
        self._parameters = {
            field: info.alias or field for field, info in arguments.model_fields.items()
        }
        self._is_async = inspect.iscoroutinefunction(fn)

    @property
    def name(self) -> str:
        """The name the model calls the tool by."""
        return self.spec.name

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, permission={self.spec.permission!r})"

    async def invoke(self, arguments_json: str) -> object:
        """Decode the call's JSON arguments into typed values and run the body once.

        Arguments the model omitted are not passed, so the function's own defaults apply.
        Pydantic-model parameters are constructed from their JSON objects.

        Args:
            arguments_json: The raw JSON arguments (already checked against the schema).

        Returns:
            What the body returned.

        Raises:
            InvalidArguments: the arguments cannot be turned into the parameter types
                (the body did not run).
            Exception: whatever the body raised.
        """
        bound = bind_arguments(self.arguments, decode_arguments(arguments_json))
        kwargs = {self._parameters[f]: getattr(bound, f) for f in bound.model_fields_set}
        if self._is_async:
            result: object = await self._call(**kwargs)
        else:
            result = await asyncio.to_thread(self._call, **kwargs)
            if inspect.isawaitable(result):  # e.g. an object with an async __call__
                result = await result
        return result


class SharedOptions(TypedDict, total=False):
    """The options `@tool` and `@background_tool` share (any left out takes its default)."""

    name: str | None
    """The model-facing name; defaults to the function's name. Letters, digits, `_` and
    `-`, at most 64 characters."""
    description: str | None
    """What the model is told; defaults to the docstring's first paragraph."""
    permission: Permission
    """`read`, `write` or `exec` (the default: the safest assumption). A Process must hold
    it for the body to run."""
    execution: Execution
    """`auto` (the default: read -> parallel, others sequential), `parallel`, `sequential`
    or `exclusive`. A sequential or exclusive call is a barrier: it waits for the earlier
    calls of its batch and holds back the later ones."""
    concurrency_key: str | None
    """Calls sharing a key never overlap."""
    deferred: bool
    """Hidden from the model until a running tool calls `advertise_tools`."""
    schema: Mapping[str, Any] | None
    """An explicit JSON object schema for the arguments instead of the generated one.
    Arguments must still convert into the parameter types; if they do not, the call is
    rejected as invalid."""
    middleware: Sequence[Middleware]
    """The tool's own middleware, run after the worker's (see `middleware`)."""


class ToolOptions(SharedOptions, total=False):
    """The options of `@tool(...)`: the shared ones and these."""

    timeout: timedelta | float | None
    """Limit for one run of the body (timedelta or seconds). Exceeding it makes the
    outcome unknown (`tool.timeout`), never a retry."""
    concurrency: ConcurrencyClassifier | None
    """A pure function deciding `(key, concurrent)` for each admitted invocation (e.g. a
    key per file written), instead of `execution` and `concurrency_key`; see
    `ConcurrencyClassifier`."""
    direct_result: bool
    """A batch of only such tools that all succeed completes the Interaction with their
    results, without another model call."""
    task_queue: str | None
    """Run the body only on workers of this task queue (e.g. a GPU pool: `scope-temporal
    worker --role activities --task-queue gpu`), never on the Interaction's own. If no
    worker picks an attempt up within `timeout` (or the Definition's tool timeout), the
    call is unknown and nothing runs elsewhere. Routing is not part of the Definition's
    digest: moving a tool to another pool applies to calls started afterwards and fails no
    running Interaction."""


_SPEC_OPTIONS = frozenset(ToolOptions.__optional_keys__) - {
    "name",
    "description",
    "schema",
    "middleware",
    "timeout",
}
"""The options a `ToolSpec` holds as given (the rest shape its name, text, schema and
timeout, or stay on the `Tool`)."""


def known_options(decorator: str, given: Mapping[str, object], known: frozenset[str]) -> None:
    """Raise TypeError, as for any unknown keyword, for an option `decorator` lacks."""
    unknown = sorted(set(given) - known)
    if unknown:
        raise TypeError(f"{decorator}() got an unexpected keyword argument {unknown[0]!r}")


@overload
def tool(fn: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(**options: Unpack[ToolOptions]) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None, /, **options: Unpack[ToolOptions]
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Declare a tool; usable bare (`@tool`) or with options (`@tool(permission="read")`).

    Args:
        fn: The function (sync or async) when used bare.
        **options: any of `ToolOptions` (each documented there): name, description,
            permission, execution, timeout, concurrency_key, concurrency, direct_result,
            deferred, schema, middleware, task_queue.

    Returns:
        The `Tool`, or a decorator producing it.

    Raises:
        DefinitionError: an invalid name, permission, execution, timeout, schema (code
            `tool.schema_invalid`), middleware, or a parameter the schema cannot express;
            `concurrency` that is not callable or comes with `execution` or
            `concurrency_key`.
        TypeError: an option `@tool` does not have.
    """
    known_options("tool", options, ToolOptions.__optional_keys__)

    def build(fn: Callable[P, R]) -> Tool[P, R]:
        if isinstance(fn, Tool) or not callable(fn):
            raise DefinitionError(f"@tool needs a plain function, got {fn!r}")
        name = options.get("name")
        name = getattr(fn, "__name__", "") if name is None else name
        arguments = arguments_model(fn)
        schema = options.get("schema")
        parameters = (
            parameters_schema(arguments) if schema is None else explicit_schema(str(name), schema)
        )
        spec = checked_spec(name, inspect.getdoc(fn), parameters, options)
        return Tool(fn, spec, tuple(options.get("middleware", ())), arguments)

    return build if fn is None else build(fn)


def implement(declaration: Tool[P, Any], body: Callable[P, R]) -> Tool[P, R]:
    """The declared tool, with `body` to run: the same spec, arguments and middleware.

    For tools declared apart from their bodies (the framework's task tools): the
    declaration is what a Definition binds, the body what a worker runs. The type checker
    holds `body` to the declaration's parameters.
    """
    return Tool(body, declaration.spec, declaration.middleware, declaration.arguments)


def checked_spec(
    name: object,
    doc: str | None,
    parameters: dict[str, Any],
    options: Mapping[str, Any],
    background: BackgroundSpec | None = None,
) -> ToolSpec:
    """The ToolSpec of a tool declaration (its `options`, of `ToolOptions`), after checking
    every option; `doc` is the docstring the description defaults to. The one place both
    decorators check their shared options; an option left out takes the ToolSpec's default.

    Raises:
        DefinitionError: an invalid name, permission, execution, timeout, task queue,
            concurrency or middleware.
    """
    if not isinstance(name, str) or not is_provider_tool_name(name):
        raise DefinitionError(f"invalid tool name {name!r}: use 1-64 letters, digits, '_' or '-'")
    permission = options.get("permission", "exec")
    if permission not in PERMISSIONS:
        raise DefinitionError(
            f"tool {name!r}: unknown permission {permission!r} (expected one of "
            f"{sorted(PERMISSIONS)})"
        )
    execution = options.get("execution", "auto")
    if execution not in _EXECUTIONS:
        raise DefinitionError(
            f"tool {name!r}: unknown execution {execution!r} (expected one of "
            f"{sorted(_EXECUTIONS)})"
        )
    if not all(callable(m) for m in options.get("middleware", ())):
        raise DefinitionError(f"tool {name!r}: every middleware must be an async callable")
    task_queue = options.get("task_queue")
    if task_queue is not None and (not isinstance(task_queue, str) or not task_queue.strip()):
        raise DefinitionError(
            f"tool {name!r}: task_queue must be the name of a task queue (or None to run "
            f"on the Interaction's own), got {task_queue!r}"
        )
    concurrency = options.get("concurrency")
    if concurrency is not None:
        if not callable(concurrency) or inspect.iscoroutinefunction(concurrency):
            raise DefinitionError(
                f"tool {name!r}: concurrency must be a plain function (invocation) -> "
                "(key, concurrent); it runs in workflow code"
            )
        if execution != "auto" or options.get("concurrency_key") is not None:
            raise DefinitionError(
                f"tool {name!r}: concurrency decides both the key and whether a call may "
                "overlap others; drop execution and concurrency_key"
            )
    description = options.get("description")
    held = {key: value for key, value in options.items() if key in _SPEC_OPTIONS}
    try:
        return ToolSpec(
            **held,
            name=name,
            description=summary(doc) if description is None else description,
            parameters=parameters,
            timeout=checked_timeout(name, "timeout", options.get("timeout")),
            background=background,
        )
    except ValidationError as exc:
        raise DefinitionError(f"tool {name!r}: {first_error(exc)}") from None


def explicit_schema(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A plain-JSON copy of an author-given schema after structural checks.

    The full meta-schema check needs `jsonschema`, which is not loaded here (this may run
    on the workflow side); a schema that passes these checks but is still invalid makes
    each call's outcome unknown with code `tool.schema_invalid`.
    """
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise DefinitionError(
            f'tool {name!r}: schema must be a JSON object schema with "type": "object"',
            code=TOOL_SCHEMA_INVALID,
        )
    if not isinstance(schema.get("properties", {}), Mapping):
        raise DefinitionError(
            f'tool {name!r}: schema "properties" must be an object', code=TOOL_SCHEMA_INVALID
        )
    try:
        plain: dict[str, Any] = json.loads(json.dumps(schema))
    except (TypeError, ValueError) as exc:
        raise DefinitionError(
            f"tool {name!r}: schema is not JSON: {exc}", code=TOOL_SCHEMA_INVALID
        ) from None
    return plain


def checked_timeout(name: str, option: str, value: object) -> timedelta | None:
    """`value` (a timedelta or seconds) as a positive timedelta; None stays None.

    Raises:
        DefinitionError: naming the tool and the option.
    """
    if value is None:
        return None
    try:
        if isinstance(value, timedelta):
            limit = value
        elif isinstance(value, int | float) and not isinstance(value, bool):
            limit = timedelta(seconds=value)
        else:
            raise TypeError
    except (TypeError, ValueError, OverflowError):
        raise DefinitionError(
            f"tool {name!r}: {option} must be a timedelta or seconds, got {value!r}"
        ) from None
    if limit <= timedelta(0):
        raise DefinitionError(f"tool {name!r}: {option} must be positive, got {value!r}")
    return limit

"""`@background_tool`: declare a long-running tool whose calls may move to the background.

The decorated class (or object) implements the capability layers of `protocols`; the
result is a `BackgroundTool`, registered on `ScopeWorker(tools=[...])` and bound in a
Definition like any tool. Its arguments are the pydantic model `start` annotates its
`arguments` with (or a JSON schema given as `schema=`, the tool then gets a dict); the
model additionally sees an optional `run_in_background` flag.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Unpack

from pydantic import BaseModel, ValidationError

from scope_temporal.background.deadlines import timeout_of
from scope_temporal.background.envelopes import Shown
from scope_temporal.background.foreground import run_foreground
from scope_temporal.background.presentation import described, rendered
from scope_temporal.background.protocols import Handoff, Recoverable, Resumable, RunHandle
from scope_temporal.errors import DefinitionError
from scope_temporal.interaction.snapshot import TaskSnapshot
from scope_temporal.tools.decorator import (
    SharedOptions,
    Tool,
    checked_spec,
    checked_timeout,
    explicit_schema,
    known_options,
)
from scope_temporal.tools.failures import ToolFailure
from scope_temporal.tools.middleware import Middleware
from scope_temporal.tools.registry import RetiredTool
from scope_temporal.tools.schema import parameters_schema
from scope_temporal.tools.spec import (
    RUN_IN_BACKGROUND,
    RUN_IN_BACKGROUND_SCHEMA,
    BackgroundSpec,
    ToolSpec,
)
from scope_temporal.tools.validation import InvalidArguments, bind_arguments, decode_arguments

DEFAULT_RECOVERY_ATTEMPTS = 5

AutoBackground = bool | Callable[[Any], bool]
"""Whether a call still running after the foreground timeout moves to the background: a
bool, or a pure function of the (prepared) arguments."""


class _NoArguments(BaseModel):
    pass


class BackgroundTool(Tool[..., Any]):
    """A tool whose calls run in the foreground first and may continue in the background.

    Built by `background_tool`; see the package docstring for the lifecycle. Only its
    `spec` (with `spec.background`) goes into Definitions and payloads.
    """

    starts_in_call = False
    """Its operation can start only in the call's own attempt, and its live run carries
    this implementation to the adopting attempt (an MCP call: `mcp.background`)."""

    def __init__(
        self,
        impl: Any,
        spec: ToolSpec,
        middleware: tuple[Middleware, ...],
        arguments_type: type[BaseModel] | None,
        auto_background: AutoBackground,
    ) -> None:
        super().__init__(impl.start, spec, middleware, _NoArguments)
        self.impl = impl
        """The object implementing the capability layers."""
        self.arguments_type = arguments_type
        self.auto_background = auto_background

    @property
    def settings(self) -> BackgroundSpec:
        assert self.spec.background is not None
        return self.spec.background

    def decode(self, arguments_json: str) -> tuple[Any, bool | None]:
        """The call's arguments for the tool, and its `run_in_background` flag (None: absent).

        Raises:
            InvalidArguments: they do not convert into the arguments type.
        """
        raw = decode_arguments(arguments_json)
        flag = raw.pop(RUN_IN_BACKGROUND, None)
        return self.parse(raw), flag

    def parse(self, raw: dict[str, Any]) -> Any:
        """Arguments stored as JSON (see `encode`) as the tool takes them."""
        if self.arguments_type is None:
            return raw
        return bind_arguments(self.arguments_type, raw)

    def encode(self, arguments: Any) -> str:
        if isinstance(arguments, BaseModel):
            return arguments.model_dump_json()
        return json.dumps(arguments, ensure_ascii=False)

    def prepare(self, arguments: Any) -> Any:
        """`prepare_input(arguments)` if the tool has it (runs before anything is stored)."""
        prepare = getattr(self.impl, "prepare_input", None)
        return arguments if prepare is None else prepare(arguments)

    def check(self, arguments: Any) -> None:
        """`validate_arguments(arguments)`, if the tool has it.

        Raises:
            InvalidArguments: it raised `ValueError` or `ToolFailure` (the call is rejected).
        """
        validate = getattr(self.impl, "validate_arguments", None)
        if validate is None:
            return
        try:
            validate(arguments)
        except ToolFailure as failure:
            raise InvalidArguments(failure.message) from None
        except ValueError as error:
            raise InvalidArguments(str(error)) from None

    def wants_background(self, arguments: Any) -> bool:
        policy = self.auto_background
        return policy(arguments) if callable(policy) else bool(policy)

    def operation_timeout(self, arguments: Any) -> timedelta | float | None:
        """The tool's optional, pure `operation_timeout(arguments)`: how long this call's
        operation may take in all (None: no limit beyond the attempts' own)."""
        return timeout_of(self.impl, arguments)

    def describe(self, arguments: Any) -> tuple[str | None, str | None]:
        """`description(arguments)` if the tool has it, and why it gave nothing if it failed."""
        return described(self.impl, arguments)

    def render(self, task: TaskSnapshot) -> Shown:
        """The fields `render_result(task)` adds to a completed result (see `presentation`)."""
        return rendered(self.impl, task)

    async def start(self, task_id: str, arguments: Any, attempt: int) -> RunHandle:
        handle: RunHandle = await self.impl.start(task_id, arguments, attempt)
        return handle

    async def recover(
        self, task_id: str, arguments: Any, attempt: int, checkpoint: Any
    ) -> RunHandle:
        handle: RunHandle = await self.impl.recover(task_id, arguments, attempt, checkpoint)
        return handle

    async def resume(
        self,
        task_id: str,
        arguments: Any,
        attempt: int,
        request_id: str,
        data: Any,
        checkpoint: Any,
    ) -> RunHandle:
        handle: RunHandle = await self.impl.resume(
            task_id, arguments, attempt, request_id, data, checkpoint
        )
        return handle

    async def adopt(self, task_id: str, arguments: Any, attempt: int, run: RunHandle) -> RunHandle:
        handle: RunHandle = await self.impl.adopt(task_id, arguments, attempt, run)
        return handle

    def retired(self) -> RetiredTool:
        """This implementation, registered only for the tasks launched under its capability
        class: `tools=[NewBuild, OldBuild.retired()]` after `build` changed class (see
        docs/background-tools.md, "Changing a tool's capability class"). It serves their
        attempts and nothing else: no model calls it, no Definition binds it."""
        return RetiredTool(self)

    async def invoke(self, arguments_json: str) -> object:
        """The foreground attempt (see `foreground.run_foreground`)."""
        return await run_foreground(self, arguments_json)

    def __repr__(self) -> str:
        return f"BackgroundTool(name={self.name!r}, permission={self.spec.permission!r})"


class BackgroundToolOptions(SharedOptions, total=False):
    """The options of `@background_tool(...)`: those it shares with `@tool` (`name`
    defaults to the class name in snake_case, `description` to the class docstring's first
    paragraph; `schema` declares the arguments when `start` does not annotate `arguments`
    with a pydantic model, and the tool then receives a dict) and these."""

    foreground_timeout: timedelta | float | None
    """How long a call runs in the foreground before it may move to the background
    (timedelta or seconds; default 120 s); None or <= 0: never on its own, only with an
    explicit `run_in_background=true`."""
    heartbeat_timeout: timedelta | float
    """How soon a lost worker is noticed in a background attempt (default 10 s)."""
    task_timeout: timedelta | float
    """The start-to-close limit of one background attempt (default 24 h)."""
    max_attempts: int | None
    """Background attempts for a recoverable tool (default 5); others get 1."""
    auto_background: AutoBackground
    """Whether a call still running at the foreground timeout moves to the background (a
    bool or a pure function of the arguments; default True). An explicit
    `run_in_background=false` keeps it in the foreground either way."""
    notify: bool
    """Whether its tasks tell their Interaction (a model-visible notification at the next
    turn) when they end or start waiting for input (default True)."""


_TIMEOUTS = ("foreground_timeout", "heartbeat_timeout", "task_timeout")
"""The options of a `BackgroundSpec` given in seconds or as a timedelta (the rest of it the
tool's layers decide); one left out takes the spec's default."""


def background_tool(**options: Unpack[BackgroundToolOptions]) -> Callable[[Any], BackgroundTool]:
    """Declare a background tool: `@background_tool(...)` on a class (instantiated without
    arguments), or `background_tool(...)(obj)` on an object implementing the layers.

    Args:
        **options: any of `BackgroundToolOptions` (each documented there): name,
            description, permission, execution, concurrency_key, deferred, middleware and
            schema as for `@tool`; foreground_timeout, heartbeat_timeout, task_timeout,
            max_attempts, auto_background, notify.

    Raises:
        DefinitionError: no `start`, undeclared arguments, an invalid option, or
            `max_attempts > 1` for a tool without `recover`.
        TypeError: an option `@background_tool` does not have.
    """
    known_options("background_tool", options, BackgroundToolOptions.__optional_keys__)

    def build(target: Any) -> BackgroundTool:
        obj = target() if inspect.isclass(target) else target
        if not callable(getattr(obj, "start", None)):
            raise DefinitionError(f"@background_tool: {target!r} has no start(...) method")
        name = options.get("name")
        tool_name = _snake(type(obj).__name__) if name is None else name
        recoverable = isinstance(obj, Recoverable)
        attempts = options.get("max_attempts")
        if attempts is None:
            attempts = DEFAULT_RECOVERY_ATTEMPTS if recoverable else 1
        if attempts < 1 or (attempts > 1 and not recoverable):
            raise DefinitionError(
                f"tool {tool_name!r}: max_attempts={attempts}; a background attempt may be "
                "repeated only by a recoverable tool (one with recover(...)), at least once"
            )
        arguments_type = _arguments_type(obj)
        schema = options.get("schema")
        if schema is not None:
            parameters = explicit_schema(str(tool_name), schema)
        elif arguments_type is not None:
            parameters = parameters_schema(arguments_type)
        else:
            raise DefinitionError(
                f"tool {tool_name!r}: declare its arguments: annotate start's `arguments` "
                "with a pydantic model, or pass schema={...}"
            )
        properties = dict(parameters.get("properties", {}))
        if RUN_IN_BACKGROUND in properties:
            raise DefinitionError(f"tool {tool_name!r}: {RUN_IN_BACKGROUND!r} is reserved")
        properties[RUN_IN_BACKGROUND] = RUN_IN_BACKGROUND_SCHEMA
        timeouts: dict[str, Any] = {k: v for k, v in options.items() if k in _TIMEOUTS}
        if "foreground_timeout" in timeouts:
            timeouts["foreground_timeout"] = _positive(timeouts["foreground_timeout"])
        try:
            settings = BackgroundSpec(
                **{
                    key: checked_timeout(str(tool_name), key, value)
                    for key, value in timeouts.items()
                },
                max_attempts=attempts,
                recoverable=recoverable,
                resumable=isinstance(obj, Resumable),
                handoff=isinstance(obj, Handoff),
                notify=options.get("notify", True),
            )
        except ValidationError as error:  # e.g. heartbeat_timeout=None
            raise DefinitionError(f"tool {tool_name!r}: {error.errors()[0]['msg']}") from None
        parameters = {**parameters, "properties": properties}
        spec = checked_spec(tool_name, inspect.getdoc(type(obj)), parameters, options, settings)
        middleware = tuple(options.get("middleware", ()))
        auto = options.get("auto_background", True)
        return BackgroundTool(obj, spec, middleware, arguments_type, auto)

    return build


def _positive(value: timedelta | float | None) -> timedelta | float | None:
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    return value if seconds > 0 else None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _arguments_type(obj: Any) -> type[BaseModel] | None:
    try:
        hints = typing.get_type_hints(type(obj).start)
    except Exception:  # an annotation that cannot be resolved: no model
        return None
    found = hints.get("arguments")
    if inspect.isclass(found) and issubclass(found, BaseModel):
        return found
    return None


__all__ = [
    "RUN_IN_BACKGROUND",
    "AutoBackground",
    "BackgroundTool",
    "BackgroundToolOptions",
    "background_tool",
]

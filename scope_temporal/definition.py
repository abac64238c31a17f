"""Definitions: the immutable, validated description of an Interaction.

A Definition holds only frozen specs, schemas and pure functions (the completion
validator); never a tool body or a model client. It is validated when built, so a bad
declaration fails at import time of the user's module, not mid-run, and it carries a
digest of its configuration that the workflow records and checks on replay. Definitions,
ToolSets and Delegates are immutable, down to the schemas they hold (`frozen.py`), so
the digest can never go stale. Each option of a Definition is declared once, as a field
with its docstring; the declaration and the digest are built from the fields by one rule.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import timedelta
from typing import Any, Generic, Literal, Protocol, TypeVar, cast, overload

from pydantic import BaseModel

from scope_temporal.approval import ApprovalPolicy, callable_name
from scope_temporal.chat import Options
from scope_temporal.code_digest import code_fingerprint
from scope_temporal.delegates import Delegate as Delegate  # re-exported: its old home
from scope_temporal.delegates import capabilities_of
from scope_temporal.errors import DefinitionError
from scope_temporal.frozen import Frozen, freeze_json
from scope_temporal.mcp.values import McpServer
from scope_temporal.models import retry
from scope_temporal.outputs import CompletionCandidate, CompletionDecision
from scope_temporal.tools.budget import ToolBudget
from scope_temporal.tools.spec import ToolSpec, is_provider_tool_name
from scope_temporal.tools.task_specs import TASK_TOOL_NAMES, TASK_TOOL_SPECS
from scope_temporal.tools.validation import check_schema

CompletionValidator = Callable[[CompletionCandidate], CompletionDecision]
"""Judges a completion candidate; runs in workflow code, so pure and plain (not async)."""

ToolCallWorkflows = Literal["on_demand", "always"]
"""How tool calls map onto Temporal; the guarantees are the same (the whole conformance
suite runs in both). `always` (the default, the design's mapping): every call is a
`scope.ToolCall` child workflow of its Interaction from the start, one workflow per call
in the UI. `on_demand` (opt-in, for throughput): a call first runs as a `scope.tool`
activity of the Interaction and becomes a `scope.ToolCall` child workflow only when it
needs a life of its own (an input wait, an unknown outcome); it costs the server about a
quarter of the work per call (see docs/performance.md)."""

In = TypeVar("In")
Out = TypeVar("Out")

DEFAULT_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
"""How soon a lost worker is noticed by default (model and tool calls)."""


class _HasSpec(Protocol):
    @property
    def spec(self) -> ToolSpec: ...


def _spec_of(item: ToolSpec | _HasSpec) -> ToolSpec:
    return item if isinstance(item, ToolSpec) else item.spec


class ToolSet(Frozen):
    """A named set of tools a Definition binds; `deferred` ones are hidden until advertised.

    Args:
        name: label of the set (shown in the UI and the digest).
        tools: the ordinary tools, advertised in this order.
        deferred: tools bound but not advertised until a running tool calls
            `advertise_tools(...)`. A tool declared `@tool(deferred=True)` may be listed in
            either argument; it is deferred either way.

    Raises:
        DefinitionError: on duplicate names.
    """

    def __init__(
        self,
        name: str,
        tools: Iterable[ToolSpec | _HasSpec] = (),
        *,
        deferred: Iterable[ToolSpec | _HasSpec] = (),
    ) -> None:
        self.name = name
        specs = [_spec_of(t) for t in tools]
        deferred_specs = [_spec_of(t).model_copy(update={"deferred": True}) for t in deferred]
        ordinary = [s for s in specs if not s.deferred]
        deferred_specs = [s for s in specs if s.deferred] + deferred_specs
        seen: set[str] = set()
        for spec in ordinary + deferred_specs:
            if spec.name in seen:
                raise DefinitionError(f"ToolSet {name!r} binds two tools named {spec.name!r}.")
            seen.add(spec.name)
        self.tools: tuple[ToolSpec, ...] = tuple(ordinary)
        self.deferred: tuple[ToolSpec, ...] = tuple(deferred_specs)
        self._freeze()

    def get(self, tool_name: str) -> ToolSpec | None:
        for spec in self.tools + self.deferred:
            if spec.name == tool_name:
                return spec
        return None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.tools + self.deferred)


def _with_task_tools(name: str, toolset: ToolSet, *, mcp_background: bool = False) -> ToolSet:
    """The set plus `task_status`, `task_output` and `task_cancel` when it binds a
    background tool, or an MCP server's calls may run in the background
    (`mcp_background`): the model follows its tasks with them.

    Raises:
        DefinitionError: the set also binds a tool under one of those names.
    """
    specs = toolset.tools + toolset.deferred
    if not mcp_background and not any(spec.background is not None for spec in specs):
        return toolset
    framework = TASK_TOOL_SPECS
    taken = sorted(s.name for s in specs if s.name in TASK_TOOL_NAMES and s not in framework)
    if taken:
        raise DefinitionError(
            f"Definition {name!r} binds background tools, so the names {taken} are reserved "
            "for the task tools the framework adds; rename those tools."
        )
    if all(spec in specs for spec in framework):  # a ToolSet taken from another Definition
        return toolset
    return ToolSet(toolset.name, [*toolset.tools, *framework], deferred=toolset.deferred)


def _check_schema(owner: str, schema: dict[str, Any]) -> None:
    try:
        check_schema(schema)
    except DefinitionError as error:
        raise DefinitionError(f"{owner}: invalid JSON schema: {error.message}") from None


def _frozen_options(options: Options) -> Options:
    """The options with the values of any extra (provider-specific) fields frozen."""
    extra = options.model_extra or {}
    return options.model_copy(update={k: freeze_json(v) for k, v in extra.items()})


def _checked_mcp_servers(name: str, servers: Sequence[McpServer]) -> tuple[McpServer, ...]:
    """The MCP servers a Definition uses (docs/mcp.md), each named once."""
    listed = tuple(servers)
    names = [s.name if isinstance(s, McpServer) else repr(s) for s in listed]
    if any(not isinstance(s, McpServer) for s in listed) or len(set(names)) < len(names):
        raise DefinitionError(
            f"Definition {name!r}: mcp_servers={names} must be McpServer values with "
            "distinct names."
        )
    return listed


class _Given(Generic[In, Out]):
    """A dataclass field given as `In` and kept as `Out` (e.g. tools given as a list, kept
    as a `ToolSet`): type checkers read the constructor's parameter from `__set__` and the
    attribute from `__get__`. The owner's `__post_init__` turns the given value into the
    kept one; the default is what the class attribute reads."""

    def __init__(self, default: In) -> None:
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> In: ...
    @overload
    def __get__(self, instance: object, owner: type) -> Out: ...
    def __get__(self, instance: object | None, owner: type) -> In | Out:
        if instance is None:
            return self.default
        return cast(Out, instance.__dict__[self.name])

    def __set__(self, instance: object, value: In) -> None:
        instance.__dict__[self.name] = value


_TIMEOUTS = ("model_timeout", "model_heartbeat_timeout", "tool_timeout", "tool_heartbeat_timeout")
_FIRST_DECLARATION = frozenset(
    {
        *("name", "description", "instructions", "model", "tools", "delegates", "options"),
        *("max_model_calls", "max_concurrent_tool_calls", "completion_validator"),
        *("capabilities", "context_reducer", "output_schema", "tool_call_workflows", *_TIMEOUTS),
    }
)
"""The options of the first Definition: always declared (the digests of Interactions
that ran then must not change), the timeouts as one list, the tools by set. Every option
added since is declared only when it differs from its default, so a new option changes no
existing digest."""


def _declared(value: Any) -> Any:
    """The canonical JSON form of an option's value, the one rule for every option."""
    if hasattr(value, "declaration"):  # Delegate, ApprovalPolicy, ModelRetry, ToolBudget, ...
        return value.declaration()
    if isinstance(value, BaseModel):  # Options
        return value.model_dump(mode="json")
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, tuple):
        return [_declared(item) for item in value]
    if isinstance(value, timedelta):
        return str(value)
    if callable(value):  # a pure function run in workflow code: its name and its code
        return {"name": callable_name(value), "code": code_fingerprint(value)}
    return value


@dataclass(eq=False, repr=False)
class Definition(Frozen):
    """The immutable description of an Interaction; every option is documented on its
    field below. Build a variant with `replace(**changes)`.

    The Definition is validated once, when built, and holds only frozen specs, schemas and
    pure functions (`completion_validator` runs in workflow code, on every replay: it must
    be pure). Its `digest` covers its whole declaration (`declaration()`): the workflow
    records it and checks it on replay. A new Definition is bounded: `max_model_calls`
    defaults to 20 (`max_model_calls=None` is unlimited; see the field).

    Raises:
        DefinitionError: `max_model_calls=0`, a negative concurrency, a delegate named like
            a tool or two delegates with one name, an invalid name, capabilities that are
            not read/write/exec, a delegate granted more than this Definition holds, an
            approval policy naming a tool this Definition does not bind, a fallback model
            named twice or like `model`, `max_total_tokens` below 1, or
            `max_response_bytes` below 1 (a worker refuses one over its payload limit).
    """

    name: str
    """The Definition's name (non-empty, without `/`): workers serve it by this name."""
    _: KW_ONLY
    description: str = ""
    """What the Definition is for (shown to people, and to a model delegating to it)."""
    instructions: str | None = None
    """The system instructions of every model call."""
    model: str = "default"
    """The model every call goes to, by the name a worker registered it under."""
    tools: _Given[ToolSet | Sequence[ToolSpec | _HasSpec] | None, ToolSet] = _Given(None)
    """The tools the model may call: a `ToolSet`, or a list of tools (kept as a set named
    `<name>-tools`). A set binding a background tool also binds the task tools
    (`task_status`, `task_output`, `task_cancel`)."""
    delegates: _Given[Sequence[Delegate], tuple[Delegate, ...]] = _Given(())
    """Other Definitions the model may hand a task to, each as a child Interaction."""
    max_model_calls: int | None = 20
    """The model calls one Interaction may make: `None` is unlimited (the Scope design's
    zero value), `0` is refused. The default is 20, not unlimited: on Temporal a runaway
    loop is not only cost but history and workers kept busy until someone notices, so a
    new Definition is bounded unless it says otherwise (docs/differences.md)."""
    max_concurrent_tool_calls: int = 1
    """How many tool calls of one round run at once (0 behaves as 1)."""
    completion_validator: CompletionValidator | None = None
    """Judges every completion candidate. It runs in workflow code, on every replay: it
    must be pure (a deterministic function of the candidate: no clock, randomness, I/O or
    global state) and a plain function returning a `CompletionDecision` (accept, or reject
    with feedback for the model). One that raises, is async or returns anything else fails
    the Interaction as a host failure (`interaction.host.failed`) naming it. Its code (its
    source text, default values and closure: `code_digest.code_fingerprint`), not only its
    name, is part of the digest."""
    capabilities: _Given[Iterable[str], frozenset[str]] = _Given(("read", "write", "exec"))
    """What the Interaction's tools may do: `read`, `write`, `exec`; a tool needing more is
    refused, and a delegate may only narrow them."""
    context_reducer: str | None = None
    """The name of the reducer that shrinks the context before a model call."""
    options: _Given[Options | None, Options] = _Given(None)
    """The model call options (temperature, provider-specific fields, ...), frozen."""
    output_schema: dict[str, Any] | None = None
    """The JSON schema the final output must match (the Definition keeps a frozen copy)."""
    model_timeout: timedelta = timedelta(minutes=5)
    """How long one model call's outcome may stay unproven before it becomes an unknown
    Effect (never retried)."""
    model_heartbeat_timeout: timedelta | None = DEFAULT_HEARTBEAT_TIMEOUT
    """How soon a lost worker is noticed during a model call: about that long plus a second
    after it died (the activity heartbeats while the call runs). None turns heartbeats off,
    and a lost worker is then noticed only at `model_timeout`."""
    tool_timeout: timedelta = timedelta(minutes=10)
    """As `model_timeout`, for one tool call (a tool's own `timeout` wins)."""
    tool_heartbeat_timeout: timedelta | None = DEFAULT_HEARTBEAT_TIMEOUT
    """As `model_heartbeat_timeout`, for a tool call."""
    tool_call_workflows: ToolCallWorkflows = "always"
    """How tool calls map onto Temporal (`ToolCallWorkflows`): `always` or `on_demand`."""
    approval: ApprovalPolicy | None = None
    """Which calls wait for an approval before their body runs (an `ApprovalPolicy`, e.g.
    `ApprovalPolicy.deny_writes()`); its approver hook runs in workflow code like the
    completion validator, and is digested the same way."""
    model_retry: retry.ModelRetry = retry.DEFAULT_MODEL_RETRY
    """How model calls that provably did not run are retried (docs/models.md)."""
    fallback_models: _Given[Sequence[str], tuple[str, ...]] = _Given(())
    """The models tried in turn once `model`'s retries are exhausted."""
    max_total_tokens: int | None = None
    """A bound on the tokens of the whole tree of Interactions; None: no bound."""
    tool_budget: ToolBudget | None = None
    """Allocated to each ordinary Tool child: a call asking for input beyond it settles as
    a model-visible `tool.budget.exhausted` failure."""
    max_response_bytes: int | None = None
    """Bounds each model response and tool outcome of this Definition's calls below the
    worker's payload limit: one over it is an unknown Effect held with its request for the
    host (`interaction.payload.too_large`), as over the payload limit. None: the worker's
    payload limit."""
    mcp_servers: _Given[Sequence[McpServer], tuple[McpServer, ...]] = _Given(())
    """MCP servers whose tools the model may call, by the names a worker reaches them
    under (docs/mcp.md)."""
    digest: str = field(init=False)
    """The sha256 of `declaration()`: recorded by each Interaction, checked on replay."""

    def __post_init__(self) -> None:
        name = self.name
        if not name or "/" in name:
            raise DefinitionError(f"Definition name {name!r} must be non-empty without '/'.")
        retry.check_model_options(
            name, self.model, self.model_retry, self.fallback_models, self.max_total_tokens
        )
        if self.max_model_calls is not None and self.max_model_calls < 1:
            raise DefinitionError(
                f"Definition {name!r}: max_model_calls={self.max_model_calls} would never call "
                "the model; use a positive number, or None for unlimited."
            )
        limit = self.max_response_bytes
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise DefinitionError(
                f"Definition {name!r}: max_response_bytes={limit!r} must be a "
                "positive number of bytes, or None for the worker's payload limit."
            )
        if self.tool_call_workflows not in ("always", "on_demand"):
            raise DefinitionError(
                f"Definition {name!r}: tool_call_workflows must be 'always' or 'on_demand', "
                f"not {self.tool_call_workflows!r}."
            )
        if self.max_concurrent_tool_calls < 0:
            raise DefinitionError(
                f"Definition {name!r}: max_concurrent_tool_calls must be >= 0 (0 behaves as 1)."
            )
        given: Any = self.__dict__["tools"]
        toolset = given if isinstance(given, ToolSet) else ToolSet(f"{name}-tools", given or ())
        self.mcp_servers = _checked_mcp_servers(name, self.mcp_servers)
        moves = any(server.background for server in self.mcp_servers)
        toolset = _with_task_tools(name, toolset, mcp_background=moves)
        for spec in toolset.tools + toolset.deferred:
            if not is_provider_tool_name(spec.name):
                raise DefinitionError(f"Definition {name!r}: invalid tool name {spec.name!r}.")
            _check_schema(f"Definition {name!r}, tool {spec.name!r}", spec.parameters)
        delegates = tuple(self.delegates)
        for delegate in delegates:
            _check_schema(f"Definition {name!r}, delegate {delegate.name!r}", delegate.input_schema)
        if self.output_schema is not None:
            _check_schema(f"Definition {name!r}, output_schema", self.output_schema)
        capabilities = capabilities_of(self.capabilities, name)
        _check_delegates(name, delegates, toolset, capabilities)
        if self.approval is not None:
            self.approval.check_bound(name, toolset.names)
        self.tools = toolset
        self.delegates = delegates
        self.capabilities = capabilities
        self.max_concurrent_tool_calls = max(1, self.max_concurrent_tool_calls)
        self.options = _frozen_options(self.__dict__["options"] or Options())
        self.output_schema = freeze_json(self.output_schema)
        self.fallback_models = tuple(self.fallback_models)
        self.digest = hashlib.sha256(
            json.dumps(self.declaration(), sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
        self._freeze()

    def replace(self, **changes: Any) -> Definition:
        """A new Definition: this one with `changes` (any options), validated and digested
        anew. A list of tools given to the original is kept as its set (`<name>-tools`)."""
        return dataclasses.replace(self, **changes)

    @property
    def binds_background_tools(self) -> bool:
        """True when a bound tool is a background tool, or an MCP server's calls may run
        in the background (the task tools are bound too)."""
        tools = self.tools.tools + self.tools.deferred
        moves = any(server.background for server in self.mcp_servers)
        return moves or any(s.background is not None for s in tools)

    def delegate(self, delegate_name: str) -> Delegate | None:
        for delegate in self.delegates:
            if delegate.name == delegate_name:
                return delegate
        return None

    @property
    def models(self) -> tuple[str, ...]:
        """Every model the Interaction may call: `model`, then `fallback_models`."""
        return (self.model, *self.fallback_models)

    def declaration(self) -> dict[str, Any]:
        """The canonical configuration the digest covers (changes iff the declaration does):
        every option by one rule (`_declared`), an option added after the first Definition
        only when it differs from its default (`_FIRST_DECLARATION`)."""
        toolset = self.tools
        declared: dict[str, Any] = {
            "toolset": toolset.name,
            "tools": _declared(toolset.tools),
            "deferred": _declared(toolset.deferred),
            "timeouts": [str(getattr(self, name)) for name in _TIMEOUTS],
        }
        for option in dataclasses.fields(self):
            if option.name in ("tools", "digest", *_TIMEOUTS):
                continue
            value = getattr(self, option.name)
            if option.name in _FIRST_DECLARATION or value != option.default:
                declared[option.name] = _declared(value)
        return declared

    def __repr__(self) -> str:
        return f"Definition({self.name!r}, digest={self.digest[:12]})"


def _check_delegates(
    name: str, delegates: Sequence[Delegate], toolset: ToolSet, capabilities: frozenset[str]
) -> None:
    """Raise DefinitionError for two delegates with one name, one named like a tool, or one
    granted more than the Definition holds."""
    delegate_names: set[str] = set()
    for delegate in delegates:
        if delegate.name in delegate_names:
            raise DefinitionError(
                f"Definition {name!r}: two delegates are named {delegate.name!r}."
            )
        if toolset.get(delegate.name) is not None:
            raise DefinitionError(
                f"Definition {name!r}: delegate {delegate.name!r} collides with a tool name."
            )
        if delegate.capabilities is not None and not delegate.capabilities <= capabilities:
            extra = sorted(delegate.capabilities - capabilities)
            raise DefinitionError(
                f"Definition {name!r}: delegate {delegate.name!r} would hold {extra}, "
                "which this Definition is not granted. A delegate may only narrow."
            )
        delegate_names.add(delegate.name)

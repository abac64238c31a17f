"""Definitions: the immutable, validated description of an Interaction.

A Definition holds only frozen specs, schemas and pure functions (the completion
validator); never a tool body or a model client. It is validated when built, so a bad
declaration fails at import time of the user's module, not mid-run, and it carries a
digest of its configuration that the workflow records and checks on replay. Definitions,
ToolSets and Delegates are immutable, down to the schemas they hold (`frozen.py`), so
the digest can never go stale.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any, Literal, Protocol

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
quarter of the work per call (see the README's Performance section)."""

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


def _with_task_tools(name: str, toolset: ToolSet) -> ToolSet:
    """The set plus `task_status`, `task_output` and `task_cancel` when it binds a
    background tool (the model follows its tasks with them).

    Raises:
        DefinitionError: the set also binds a tool under one of those names.
    """
    specs = toolset.tools + toolset.deferred
    if not any(spec.background is not None for spec in specs):
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


class Definition(Frozen):
    """The immutable description of an Interaction. See API.md for every argument.

    `max_model_calls` bounds the model calls of one Interaction: `max_model_calls=None`
    is unlimited (the Scope design's zero value), `0` is refused. The default is 20, not
    unlimited: on Temporal a runaway loop is not only cost but history and workers kept
    busy until someone notices, so a new Definition is bounded unless it says otherwise
    (docs/differences.md).

    `completion_validator` runs in workflow code, on every replay: it must be pure (a
    deterministic function of the candidate: no clock, randomness, I/O or global state)
    and a plain function returning a `CompletionDecision` (accept, or reject with
    feedback for the model). One that raises, is async or returns anything else fails
    the Interaction as a host failure (`interaction.host.failed`) naming it.

    Timeouts bound how long an outcome may stay unproven before it becomes an unknown
    Effect (never retried): `model_timeout` / `tool_timeout` (a tool's own `timeout`
    wins) limit one call; `model_heartbeat_timeout` / `tool_heartbeat_timeout` (default
    10 s; the activities heartbeat while the call runs) are how soon a lost worker is
    noticed: about that long plus a second after it died. None turns heartbeats off, and
    a lost worker is then noticed only at the call's timeout. Every timeout is part of
    the digest, and so is the completion validator's code (its source text, default
    values and closure: `code_digest.code_fingerprint`), not only its name.

    `approval` (an `ApprovalPolicy`, e.g. `ApprovalPolicy.deny_writes()`) makes calls of
    the tools it covers wait for an approval before their body runs; its approver hook
    runs in workflow code like the completion validator, and is digested the same way.
    Model calls that provably did not run are retried by `model_retry`, then on each of
    `fallback_models`; `max_total_tokens` bounds the tree's tokens (docs/models.md).

    `tool_budget` (a `ToolBudget`) is allocated to each ordinary Tool child: a call
    asking for input beyond it settles as a model-visible `tool.budget.exhausted` failure.
    `max_response_bytes` bounds each model response and tool outcome of this Definition's
    calls below the worker's payload limit: one over it is an unknown Effect held with its
    request for the host (`interaction.payload.too_large`), as over the payload limit.

    Raises:
        DefinitionError: `max_model_calls=0`, a negative concurrency, a delegate named like
            a tool or two delegates with one name, an invalid name, capabilities that are
            not read/write/exec, a delegate granted more than this Definition holds, an
            approval policy naming a tool this Definition does not bind, a fallback model
            named twice or like `model`, `max_total_tokens` below 1, or
            `max_response_bytes` below 1 (a worker refuses one over its payload limit).
    """

    def __init__(
        self,
        name: str,
        *,
        description: str = "",
        instructions: str | None = None,
        model: str = "default",
        tools: ToolSet | Sequence[ToolSpec | _HasSpec] | None = None,
        delegates: Sequence[Delegate] = (),
        max_model_calls: int | None = 20,
        max_concurrent_tool_calls: int = 1,
        completion_validator: CompletionValidator | None = None,
        capabilities: Iterable[str] = ("read", "write", "exec"),
        context_reducer: str | None = None,
        options: Options | None = None,
        output_schema: dict[str, Any] | None = None,
        model_timeout: timedelta = timedelta(minutes=5),
        model_heartbeat_timeout: timedelta | None = DEFAULT_HEARTBEAT_TIMEOUT,
        tool_timeout: timedelta = timedelta(minutes=10),
        tool_heartbeat_timeout: timedelta | None = DEFAULT_HEARTBEAT_TIMEOUT,
        tool_call_workflows: ToolCallWorkflows = "always",
        approval: ApprovalPolicy | None = None,
        model_retry: retry.ModelRetry = retry.DEFAULT_MODEL_RETRY,
        fallback_models: Sequence[str] = (),
        max_total_tokens: int | None = None,
        tool_budget: ToolBudget | None = None,
        max_response_bytes: int | None = None,
        mcp_servers: Sequence[McpServer] = (),
    ) -> None:
        if not name or "/" in name:
            raise DefinitionError(f"Definition name {name!r} must be non-empty without '/'.")
        retry.check_model_options(name, model, model_retry, fallback_models, max_total_tokens)
        if max_model_calls is not None and max_model_calls < 1:
            raise DefinitionError(
                f"Definition {name!r}: max_model_calls={max_model_calls} would never call the "
                "model; use a positive number, or None for unlimited."
            )
        if max_response_bytes is not None and (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes < 1
        ):
            raise DefinitionError(
                f"Definition {name!r}: max_response_bytes={max_response_bytes!r} must be a "
                "positive number of bytes, or None for the worker's payload limit."
            )
        if tool_call_workflows not in ("always", "on_demand"):
            raise DefinitionError(
                f"Definition {name!r}: tool_call_workflows must be 'always' or 'on_demand', "
                f"not {tool_call_workflows!r}."
            )
        if max_concurrent_tool_calls < 0:
            raise DefinitionError(
                f"Definition {name!r}: max_concurrent_tool_calls must be >= 0 (0 behaves as 1)."
            )
        toolset = tools if isinstance(tools, ToolSet) else ToolSet(f"{name}-tools", tools or ())
        toolset = _with_task_tools(name, toolset)
        for spec in toolset.tools + toolset.deferred:
            if not is_provider_tool_name(spec.name):
                raise DefinitionError(f"Definition {name!r}: invalid tool name {spec.name!r}.")
            _check_schema(f"Definition {name!r}, tool {spec.name!r}", spec.parameters)
        for delegate in delegates:
            _check_schema(f"Definition {name!r}, delegate {delegate.name!r}", delegate.input_schema)
        if output_schema is not None:
            _check_schema(f"Definition {name!r}, output_schema", output_schema)
        self.capabilities = capabilities_of(capabilities, name)
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
            if delegate.capabilities is not None and not delegate.capabilities <= self.capabilities:
                extra = sorted(delegate.capabilities - self.capabilities)
                raise DefinitionError(
                    f"Definition {name!r}: delegate {delegate.name!r} would hold {extra}, "
                    "which this Definition is not granted. A delegate may only narrow."
                )
            delegate_names.add(delegate.name)
        if approval is not None:
            approval.check_bound(name, toolset.names)
        self.name = name
        self.description = description
        self.instructions = instructions
        self.model = model
        self.tools = toolset
        self.delegates: tuple[Delegate, ...] = tuple(delegates)
        self.max_model_calls = max_model_calls
        self.max_concurrent_tool_calls = max(1, max_concurrent_tool_calls)
        self.completion_validator = completion_validator
        self.context_reducer = context_reducer
        self.options = _frozen_options(options or Options())
        self.output_schema: dict[str, Any] | None = freeze_json(output_schema)
        self.model_timeout = model_timeout
        self.model_heartbeat_timeout = model_heartbeat_timeout
        self.tool_timeout = tool_timeout
        self.tool_heartbeat_timeout = tool_heartbeat_timeout
        self.tool_call_workflows: ToolCallWorkflows = tool_call_workflows
        self.approval = approval
        self.model_retry = model_retry
        self.fallback_models: tuple[str, ...] = tuple(fallback_models)
        self.max_total_tokens = max_total_tokens
        self.tool_budget = tool_budget
        self.max_response_bytes = max_response_bytes
        self.mcp_servers: tuple[McpServer, ...] = _checked_mcp_servers(name, mcp_servers)
        self.digest = hashlib.sha256(
            json.dumps(self.declaration(), sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
        self._freeze()

    @property
    def binds_background_tools(self) -> bool:
        """True when a bound tool is a background tool (the task tools are bound too)."""
        return any(s.background is not None for s in self.tools.tools + self.tools.deferred)

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
        """The canonical configuration the digest covers (changes iff the declaration does)."""
        validator = self.completion_validator
        declared: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "instructions": self.instructions,
            "model": self.model,
            "toolset": self.tools.name,
            "tools": [s.declaration() for s in self.tools.tools],
            "deferred": [s.declaration() for s in self.tools.deferred],
            "delegates": [d.declaration() for d in self.delegates],
            "max_model_calls": self.max_model_calls,
            "max_concurrent_tool_calls": self.max_concurrent_tool_calls,
            "capabilities": sorted(self.capabilities),
            "context_reducer": self.context_reducer,
            "options": self.options.model_dump(mode="json"),
            "output_schema": self.output_schema,
            "completion_validator": (
                None
                if validator is None
                else {"name": callable_name(validator), "code": code_fingerprint(validator)}
            ),
            "tool_call_workflows": self.tool_call_workflows,
            "timeouts": [
                str(t)
                for t in (
                    self.model_timeout,
                    self.model_heartbeat_timeout,
                    self.tool_timeout,
                    self.tool_heartbeat_timeout,
                )
            ],
        }
        if self.approval is not None:  # only when set: other digests stay what they were
            declared["approval"] = self.approval.declaration()
        declared |= retry.model_options_declaration(
            self.model_retry, self.fallback_models, self.max_total_tokens
        )
        if self.tool_budget is not None:  # likewise
            declared["tool_budget"] = self.tool_budget.declaration()
        if self.max_response_bytes is not None:  # likewise
            declared["max_response_bytes"] = self.max_response_bytes
        if self.mcp_servers:  # likewise
            declared["mcp_servers"] = [server.declaration() for server in self.mcp_servers]
        return declared

    def __repr__(self) -> str:
        return f"Definition({self.name!r}, digest={self.digest[:12]})"

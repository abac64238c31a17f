"""What a tool *is*, as data: its spec, permission, execution mode and scheduling class.

Everything here is pure and workflow-safe: Definitions carry ToolSpecs (never the
executable function), and the scheduler reads them to decide what may overlap.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from scope_temporal.code_digest import code_fingerprint
from scope_temporal.frozen import freeze_json
from scope_temporal.tools.context import ToolInvocation

Permission = Literal["read", "write", "exec"]
"""What a tool may do. `exec` is the default because it is the safest to assume."""

Execution = Literal["auto", "parallel", "sequential", "exclusive"]
"""How a call may overlap others: `auto` means read -> parallel, write/exec -> sequential.
Sequential and exclusive calls are barriers: nothing else of their batch runs beside them."""

SchedulingClass = Literal["parallel", "sequential", "exclusive"]

ConcurrencyClassifier = Callable[[ToolInvocation], tuple[str | None, bool]]
"""Per-invocation scheduling (`@tool(concurrency=...)`): receives each admitted
invocation (its `call.arguments` already passed the schema) and returns `(key,
concurrent)`. Calls with one key never overlap (None: no key); `concurrent=False` runs
the call alone, like `exclusive`. It runs in workflow code at admission, so it must be
pure and plain (not async); one that raises or returns anything else fails the
Interaction with `interaction.host.failed` naming it, before any call of the round runs."""

PERMISSIONS: frozenset[str] = frozenset({"read", "write", "exec"})

_PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def is_provider_tool_name(name: str) -> bool:
    """True for names every major provider accepts (letters, digits, `_`, `-`, <= 64)."""
    return bool(_PROVIDER_NAME.match(name))


RUN_IN_BACKGROUND = "run_in_background"
"""The argument the framework adds to every background tool's schema."""
RUN_IN_BACKGROUND_SCHEMA: dict[str, Any] = {
    "type": "boolean",
    "description": (
        "true: start it in the background at once and get a task id; false: wait for it "
        "here. Omit it to wait for a while and let a long run move to the background."
    ),
}
"""Its schema, as the model sees it."""

CapabilityClass = Literal["plain", "recoverable"]
"""What a background tool's tasks survive: `recoverable` ones (with `recover`) the loss
of a worker, `plain` ones nothing. A task runs every attempt on an implementation of the
class it was launched under (`ToolRegistry.implementation`)."""


class BackgroundSpec(BaseModel):
    """How a background tool's calls move to, and run in, the background (see
    `scope_temporal.background`). Part of its ToolSpec, so of the Definition's digest."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    foreground_timeout: timedelta | None = timedelta(seconds=120)
    """How long a call runs in the foreground before it may move to the background;
    None: it never moves on its own (only an explicit `run_in_background=true` does)."""
    heartbeat_timeout: timedelta = timedelta(seconds=10)
    """How soon a lost worker is noticed in a background attempt."""
    task_timeout: timedelta = timedelta(hours=24)
    """Start-to-close limit of one background attempt."""
    max_attempts: int = 1
    """Background attempts Temporal may make (more than 1 only for recoverable tools)."""
    recoverable: bool = False
    """The tool can rebuild a run from its checkpoint (`recover`); `start` is idempotent."""
    resumable: bool = False
    """The tool can continue a run waiting for input (`resume`)."""
    handoff: bool = False
    """The tool can take a live foreground run into the background (`adopt`)."""
    notify: bool = True
    """Its tasks tell their Interaction when they end or wait for input (a steer)."""

    @property
    def capability(self) -> CapabilityClass:
        """The tool's capability class (see `CapabilityClass`)."""
        return "recoverable" if self.recoverable else "plain"


class ToolSpec(BaseModel):
    """The frozen, serialisable description of one tool (its schema is frozen too)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """The name the model calls it by."""
    description: str = ""
    """What the model is told the tool does."""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """JSON schema of the arguments object; validated before the body runs."""
    permission: Permission = "exec"
    """The capability a Process must hold for the body to run."""
    execution: Execution = "auto"
    """Scheduling policy; see `scheduling_class`."""
    timeout: timedelta | None = None
    """Start-to-close limit of one attempt; exceeding it makes the outcome unknown."""
    concurrency_key: str | None = None
    """Calls sharing a key never overlap."""
    direct_result: bool = False
    """A batch of only such tools that all succeed completes the Interaction directly."""
    deferred: bool = False
    """Not advertised to the model until a running tool calls `advertise_tools`."""
    background: BackgroundSpec | None = None
    """Set for a background tool (`@background_tool`): how its calls run in the background."""
    task_queue: str | None = None
    """The task queue whose workers run the body (None: the Interaction's own). Where a
    tool runs is not what it does: not part of a Definition's digest."""
    concurrency: ConcurrencyClassifier | None = Field(default=None, exclude=True)
    """Decides `(key, concurrent)` per invocation instead of `execution` and
    `concurrency_key` (see `ConcurrencyClassifier`); its code is in the digest."""

    @field_validator("parameters", mode="after")
    @classmethod
    def _frozen_parameters(cls, parameters: dict[str, Any]) -> dict[str, Any]:
        # the spec is frozen, and so is its schema: a Definition's digest covers it
        frozen: dict[str, Any] = freeze_json(parameters)
        return frozen

    def declaration(self) -> dict[str, Any]:
        """The spec as JSON for a Definition's digest (`background` and `concurrency` only
        when set, so the digests of Definitions without them stay what they were; never
        `task_queue`: routing a tool to another pool changes no running Interaction)."""
        data = self.model_dump(mode="json", exclude={"task_queue"})
        if self.background is None:
            del data["background"]
        elif self.background.notify:  # the default: earlier digests stay what they were
            del data["background"]["notify"]
        if self.concurrency is not None:
            data["concurrency"] = {
                "name": getattr(self.concurrency, "__qualname__", repr(self.concurrency)),
                "code": code_fingerprint(self.concurrency),
            }
        return data

    @property
    def scheduling_class(self) -> SchedulingClass:
        """The resolved policy: parallel, or a barrier (sequential / exclusive)."""
        return scheduling_class(self.permission, self.execution)


def scheduling_class(permission: Permission, execution: Execution) -> SchedulingClass:
    """Resolve `auto`: read tools are parallel, write and exec tools sequential."""
    if execution == "auto":
        return "parallel" if permission == "read" else "sequential"
    return execution

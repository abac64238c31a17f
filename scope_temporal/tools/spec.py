"""What a tool *is*, as data: its spec, permission, execution mode and scheduling class.

Everything here is pure and workflow-safe: Definitions carry ToolSpecs (never the
executable function), and the scheduler reads them to decide what may overlap.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from scope_temporal.frozen import freeze_json

Permission = Literal["read", "write", "exec"]
"""What a tool may do. `exec` is the default because it is the safest to assume."""

Execution = Literal["auto", "parallel", "sequential", "exclusive"]
"""How a call may overlap others: `auto` means read -> parallel, write/exec -> sequential.
Sequential and exclusive calls are barriers: nothing else of their batch runs beside them."""

SchedulingClass = Literal["parallel", "sequential", "exclusive"]

PERMISSIONS: frozenset[str] = frozenset({"read", "write", "exec"})

_PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def is_provider_tool_name(name: str) -> bool:
    """True for names every major provider accepts (letters, digits, `_`, `-`, <= 64)."""
    return bool(_PROVIDER_NAME.match(name))


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

    @field_validator("parameters", mode="after")
    @classmethod
    def _frozen_parameters(cls, parameters: dict[str, Any]) -> dict[str, Any]:
        # the spec is frozen, and so is its schema: a Definition's digest covers it
        frozen: dict[str, Any] = freeze_json(parameters)
        return frozen

    @property
    def scheduling_class(self) -> SchedulingClass:
        """The resolved policy: parallel, or a barrier (sequential / exclusive)."""
        return scheduling_class(self.permission, self.execution)


def scheduling_class(permission: Permission, execution: Execution) -> SchedulingClass:
    """Resolve `auto`: read tools are parallel, write and exec tools sequential."""
    if execution == "auto":
        return "parallel" if permission == "read" else "sequential"
    return execution

"""`ToolBudget`: the quotas a Definition allocates to each of its ordinary Tool children.

The design gives every Tool child a budget taken from its parent, and its quotas bound
the child's input continuations too. Here the quota is `max_input_continuations`: how
often one call may be re-entered after `require_tool_input` (approval waits do not
count: they are the host's, not the tool's). A call asking for more settles at once as
a definite, model-visible failure (`tool.budget.exhausted`, kind `quota`): never an
unknown, never retried, and the call is not entered again.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from scope_temporal.chat import ToolCall, ToolResult
from scope_temporal.errors import TOOL_BUDGET_EXHAUSTED, DefinitionError
from scope_temporal.tools.outcome import Failed

__all__ = ["ToolBudget", "exhausted"]


class ToolBudget(BaseModel):
    """What each ordinary Tool child of a Definition may use (`Definition(tool_budget=)`).

    Raises:
        DefinitionError: a quota below 1 (a budget of zero would refuse every call that
            asks for input; leave the quota None for no bound).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_input_continuations: int | None = None
    """How often one call may be re-entered after asking for input; None: no bound."""

    def __init__(self, *, max_input_continuations: int | None = None) -> None:
        if max_input_continuations is not None and (
            isinstance(max_input_continuations, bool) or max_input_continuations < 1
        ):
            raise DefinitionError(
                f"ToolBudget: max_input_continuations={max_input_continuations!r}; use 1 or "
                "more, or None for no bound."
            )
        super().__init__(max_input_continuations=max_input_continuations)

    def declaration(self) -> dict[str, Any]:
        """The budget as JSON for a Definition's digest."""
        return self.model_dump(mode="json")

    def allows_continuation(self, entries: int) -> bool:
        """True when a call entered `entries` times may be re-entered once more."""
        limit = self.max_input_continuations
        return limit is None or entries <= limit


def exhausted(call: ToolCall, budget: ToolBudget) -> Failed:
    """The settlement of a call that asked for input beyond its budget."""
    return Failed(
        result=ToolResult(
            call_id=call.id,
            name=call.name,
            content=(
                f"Tool {call.name!r} was stopped: it asked for input more often than its "
                f"budget allows ({budget.max_input_continuations} continuation(s)). "
                "It will not be run again for this call."
            ),
            is_error=True,
        ),
        code=TOOL_BUDGET_EXHAUSTED,
    )

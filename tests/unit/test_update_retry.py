"""An update a workflow refused as sent in a busy workflow task is sent again; any other
refusal reaches the caller at once (`scope_temporal/update_retry.py`)."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from scope_temporal import names
from scope_temporal.update_retry import execute_update


def refused(kind: str) -> WorkflowUpdateFailedError:
    return WorkflowUpdateFailedError(ApplicationError("refused", type=kind))


class Handle:
    """Stands in for a WorkflowHandle: refuses the first `refusals` tries with `kind`."""

    def __init__(self, refusals: int, kind: str = names.UPDATE_AFTER_COMMANDS) -> None:
        self.refusals, self.kind, self.tries = refusals, kind, 0

    async def execute_update(self, update: str, *args: Any, **kw: Any) -> str:
        self.tries += 1
        if self.tries <= self.refusals:
            raise refused(self.kind)
        return f"{update} applied"


async def test_an_update_refused_as_too_soon_is_sent_again_until_taken() -> None:
    handle = Handle(refusals=3)
    assert await execute_update(handle, "scope.resolve", {}) == "scope.resolve applied"  # type: ignore[arg-type]
    assert handle.tries == 4


async def test_any_other_refusal_reaches_the_caller_after_one_try() -> None:
    handle = Handle(refusals=1, kind="interaction.wait.none")
    with pytest.raises(WorkflowUpdateFailedError):
        await execute_update(handle, "scope.tool_input", {})  # type: ignore[arg-type]
    assert handle.tries == 1

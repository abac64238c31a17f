"""An update a workflow refused as sent in a busy workflow task, or the server aborted with
the workflow task that took it, is sent again; any other refusal reaches the caller at
once (`scope_temporal/update_retry.py`)."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.any_pb2 import Any as Any_
from google.rpc.status_pb2 import Status
from temporalio.api.errordetails.v1 import MultiOperationExecutionFailure
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from scope_temporal import names
from scope_temporal.update_retry import aborted_with_its_task, execute_update


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


def rpc_error(detail_type: str) -> RPCError:
    """An RPCError as the server sends it, with one detail of `detail_type`."""
    status = Status(code=9, message="update aborted")
    status.details.append(Any_(type_url=f"type.googleapis.com/{detail_type}"))
    return RPCError("update aborted", RPCStatusCode.FAILED_PRECONDITION, status.SerializeToString())


class AbortingHandle:
    """Stands in for a WorkflowHandle whose first `aborts` tries the server aborts."""

    def __init__(self, aborts: int, detail: str) -> None:
        self.aborts, self.detail, self.tries = aborts, detail, 0

    async def execute_update(self, update: str, *args: Any, **kw: Any) -> str:
        self.tries += 1
        if self.tries <= self.aborts:
            raise rpc_error(self.detail)
        return f"{update} applied"


async def test_an_update_aborted_with_its_failed_workflow_task_is_sent_again() -> None:
    # the server aborts an update whose workflow task failed (e.g. a completion that met
    # a signal just in): nothing was applied, so it is sent again
    aborted = "temporal.api.errordetails.v1.WorkflowNotReadyFailure"
    assert aborted_with_its_task(rpc_error(aborted))
    handle = AbortingHandle(aborts=2, detail=aborted)
    assert await execute_update(handle, "scope.session.end", {}) == "scope.session.end applied"  # type: ignore[arg-type]
    assert handle.tries == 3


async def test_any_other_rpc_error_reaches_the_caller_after_one_try() -> None:
    other = "temporal.api.errordetails.v1.NotFoundFailure"
    assert not aborted_with_its_task(rpc_error(other))
    handle = AbortingHandle(aborts=1, detail=other)
    with pytest.raises(RPCError):
        await execute_update(handle, "scope.session.end", {})  # type: ignore[arg-type]
    assert handle.tries == 1


def test_an_update_with_start_aborted_with_its_task_is_recognised() -> None:
    # update-with-start: the server wraps each operation's status in one failure
    not_ready = "type.googleapis.com/temporal.api.errordetails.v1.WorkflowNotReadyFailure"
    both = MultiOperationExecutionFailure()
    both.statuses.add(code=10, message="Operation was aborted.")
    both.statuses.add(code=9, message="unexpected workflow task failure").details.add(
        type_url=not_ready
    )
    outer = Status(code=9, message="Update-with-Start could not be executed.")
    outer.details.add().Pack(both)
    error = RPCError("aborted", RPCStatusCode.FAILED_PRECONDITION, outer.SerializeToString())
    assert aborted_with_its_task(error)

"""Both engines report a child that failed alike: LocalRunner's in-process child
(`testing.engine.child_result`) and Temporal's child workflow (`workflows.ended.child_end`,
reading the error `failure_error` failed it with) give the same `Ended`."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ChildWorkflowError

from scope_temporal import errors
from scope_temporal.chat import Usage
from scope_temporal.driver.transport import Ended
from scope_temporal.outputs import Failure, TokenUsage
from scope_temporal.testing.engine import child_result
from scope_temporal.workflows.ended import child_end
from scope_temporal.workflows.outcomes import failure_error

USED = TokenUsage(models={"default": Usage(input_tokens=7, output_tokens=3)})


def _temporal(failure: Failure) -> Ended:
    error = ChildWorkflowError(
        "child failed",
        namespace="default",
        workflow_id="child",
        run_id="run",
        workflow_type="scope.Interaction",
        initiated_event_id=1,
        started_event_id=2,
        retry_state=None,
    )
    error.__cause__ = failure_error(failure)
    return child_end(error)


@pytest.mark.parametrize(
    "failure",
    [
        Failure.of(errors.LIMIT_MODEL_CALLS, "too many model calls"),
        Failure.of(errors.LIMIT_MODEL_CALLS, "too many model calls").model_copy(
            update={"usage": USED}
        ),
    ],
)
def test_a_failed_child_ends_alike_on_both_engines(failure: Failure) -> None:
    local = child_result(failure)
    assert local == _temporal(failure) == Ended(failure.message, failure.code, failure.usage)


def test_a_child_result_passes_through_in_process() -> None:
    assert child_result("done") == "done"

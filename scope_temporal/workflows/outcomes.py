"""How a workflow reports a refusal or a classified failure (runs inside the workflow)."""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from scope_temporal.errors import ScopeError
from scope_temporal.outputs import Failure


def update_rejection(error: ScopeError) -> ApplicationError:
    """What an update validator raises: the caller gets the typed code; no history is kept."""
    return ApplicationError(error.message, type=error.code, non_retryable=True)


def failure_error(failure: Failure) -> ApplicationError:
    """The non-retryable error that fails a workflow with a classified failure's code."""
    return ApplicationError(
        failure.message, failure.model_dump(mode="json"), type=failure.code, non_retryable=True
    )

"""Classify what Temporal reports about activities and children (runs inside the workflow).

An activity that did not return data (timeout, cancellation, lost worker, or an exception
that escaped) gives an *ambiguous* outcome: we describe it for the host and never retry.
"""

from __future__ import annotations

from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    TimeoutError,
)

from scope_temporal import errors
from scope_temporal.errors import ScopeError
from scope_temporal.outputs import Failure


def describe_activity_error(error: ActivityError) -> str:
    """A one-line diagnostic of why an activity's outcome is unknown."""
    cause = error.cause
    if isinstance(cause, TimeoutError):
        kind = cause.type.name if cause.type is not None else "TIMEOUT"
        hint = (
            " (no heartbeat: the worker was probably lost)"
            if kind == "HEARTBEAT"
            else " (the call hung or ran past its start-to-close timeout)"
            if kind == "START_TO_CLOSE"
            else ""
        )
        return f"activity timed out: {kind}{hint}"
    if isinstance(cause, CancelledError):
        return f"activity cancelled mid-flight: {cause.message}"
    if isinstance(cause, ApplicationError):
        return f"activity raised {cause.type or 'an error'}: {cause.message}"
    return f"activity failed: {cause or error}"


def child_failure(error: ChildWorkflowError, default_code: str) -> Failure:
    """The classified Failure behind a child workflow's end."""
    cause = error.cause
    if isinstance(cause, CancelledError):
        return Failure.of(errors.CANCELED, "the child was cancelled")
    if isinstance(cause, ApplicationError):
        code = cause.type if cause.type in errors.CODE_KINDS else default_code
        return Failure.of(code, cause.message)
    if isinstance(cause, TimeoutError):
        return Failure.of(default_code, f"the child timed out: {cause.message}")
    return Failure.of(default_code, str(cause or error))


def update_rejection(error: ScopeError) -> ApplicationError:
    """What an update validator raises: the caller gets the typed code; no history is kept."""
    return ApplicationError(error.message, type=error.code, non_retryable=True)


def failure_error(failure: Failure) -> ApplicationError:
    """The non-retryable error that fails a workflow with a classified failure's code."""
    return ApplicationError(
        failure.message, failure.model_dump(mode="json"), type=failure.code, non_retryable=True
    )

"""What Temporal reports when an activity or a child workflow gave no result, as data
(`Lost`, `Ended`): the drivers decide what it means. Runs inside the workflow."""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    TimeoutError,
)

from scope_temporal import errors
from scope_temporal.driver.transport import Ended, Lost
from scope_temporal.outputs import Failure, TokenUsage


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
            else " (no worker of its task queue picked it up in time: it never started and "
            "was not run elsewhere; start that pool, then settle the call)"
            if kind == "SCHEDULE_TO_START"
            else ""
        )
        return f"activity timed out: {kind}{hint}"
    if isinstance(cause, CancelledError):
        return f"activity cancelled mid-flight: {cause.message}"
    if isinstance(cause, ApplicationError):
        return f"activity raised {cause.type or 'an error'}: {cause.message}"
    return f"activity failed: {cause or error}"


def child_end(error: ChildWorkflowError) -> Ended:
    """How a child workflow ended without its result."""
    cause = error.cause
    if isinstance(cause, CancelledError):
        return Ended("the child was cancelled", errors.CANCELED)
    if isinstance(cause, ApplicationError):
        code = cause.type if cause.type in errors.CODE_KINDS else None
        return Ended(cause.message, code, _failure_usage(cause))
    if isinstance(cause, TimeoutError):
        return Ended(f"the child timed out: {cause.message}")
    return Ended(str(cause or error))


def _failure_usage(error: ApplicationError) -> TokenUsage | None:
    """The tokens a failed child Interaction reported with its failure (None if none: it
    is no Interaction of ours, or it failed before this was reported)."""
    try:
        details = error.details
        return Failure.model_validate(details[0]).usage if details else None
    except Exception:  # details of another shape: nothing to add
        return None


def lost(error: ActivityError) -> Lost:
    """An activity without data; if the workflow itself is being cancelled, raise."""
    reason = workflow.cancellation_reason()
    if reason is not None:
        raise asyncio.CancelledError(reason) from error
    cause = error.cause
    not_started = (
        isinstance(cause, TimeoutError)
        and cause.type is not None
        and (cause.type.name == "SCHEDULE_TO_START")
    )
    return Lost(describe_activity_error(error), not_started=not_started)


__all__ = ["child_end", "describe_activity_error", "lost"]

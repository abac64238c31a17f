"""How a workflow reports a refusal or a classified failure (runs inside the workflow)."""

from __future__ import annotations

from types import TracebackType

from temporalio.exceptions import ApplicationError

from scope_temporal.errors import ScopeError
from scope_temporal.outputs import Failure


def update_rejection(error: ScopeError) -> ApplicationError:
    """What an update validator raises: the caller gets the typed code; no history is kept."""
    return ApplicationError(error.message, type=error.code, non_retryable=True)


class refused_as_update:
    """Raises a ScopeError from its block as the update's typed refusal (`update_rejection`).

    A class whose exit returns None, so a type checker knows it never swallows."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if isinstance(error, ScopeError):
            raise update_rejection(error) from None


def failure_error(failure: Failure) -> ApplicationError:
    """The non-retryable error that fails a workflow with a classified failure's code."""
    return ApplicationError(
        failure.message, failure.model_dump(mode="json"), type=failure.code, non_retryable=True
    )

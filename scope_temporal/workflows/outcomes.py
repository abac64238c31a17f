"""How a workflow reports a refusal or a classified failure (runs inside the workflow)."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TypeVar

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from scope_temporal.errors import ScopeError
from scope_temporal.outputs import Failure

W = TypeVar("W", bound=type)


def scope_workflow(name: str) -> Callable[[W], W]:
    """`workflow.defn` as each of our workflows is defined.

    ScopeError is a workflow failure type: a deterministic framework error (e.g. the
    Definition changed under a running Interaction) must fail the workflow with its code,
    never loop as a workflow-task failure.

    Not sandboxed, on purpose. Everything our workflows run is passed through the sandbox
    anyway (our modules, and the registered Definitions with their validators, which must
    be the very objects the worker registered), and the sandbox does not restrict
    passed-through code: measured, a completion validator reading the wall clock, a random
    number and the current date ran unhindered inside it. All it added was CPU (about a
    quarter of the worker's busy time on bench workload W). Determinism is kept by
    construction: the loop is pure (tests/unit/test_core_hygiene.py) and these modules use
    workflow.* APIs only.
    """
    return workflow.defn(name=name, failure_exception_types=[ScopeError], sandboxed=False)


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

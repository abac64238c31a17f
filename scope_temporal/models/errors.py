"""Errors a model adapter raises instead of returning a Response.

Two families, told apart by what the adapter can prove:

- **Not called** (`ModelNotCalled`: raise `ModelRejected`, `ModelContextOverflow` or
  `ModelUnavailable`): the request provably never reached the model, or the provider
  refused it before generating anything. Nothing ran, so the outcome is definite: a
  permanent refusal, or a retryable one. An adapter raises these only for what it can
  prove (the table in docs/models.md, "Model errors an adapter may report"); when in doubt it
  raises anything else.
- **Anything else** (`InvalidModelResponse`, a transport error, a timeout...): the model
  may have run. The outcome is ambiguous; the Effect becomes unknown and waits for the
  host, and the call is never re-run by itself.

`classify_model_error` (in `scope_temporal.models.not_called`) is the one place that
decides which family an exception belongs to, and checks the fields of a not-called one.
"""

from __future__ import annotations

from datetime import timedelta
from typing import ClassVar

from scope_temporal.errors import (
    MODEL_CONTEXT_OVERFLOW,
    MODEL_REJECTED,
    MODEL_UNAVAILABLE,
    ScopeError,
)

__all__ = [
    "InvalidModelResponse",
    "ModelContextOverflow",
    "ModelNotCalled",
    "ModelRejected",
    "ModelUnavailable",
    "ScriptExhausted",
]


class InvalidModelResponse(Exception):
    """The provider answered, but the answer is not a structurally valid response.

    Raised for a body that is not JSON, lacks `choices` or a message, carries a tool call
    without an id or name, or a stream that ends without a finish reason. The adapter
    never invents a Response from such an answer. The outcome is unknown: the model may
    have run.
    """


class ScriptExhausted(RuntimeError):
    """A `ScriptedModel` was called more times than its script has steps."""


class ModelNotCalled(ScopeError):
    """The model provably did not run this request (base class; never raised itself).

    Raise one of its subclasses from `Model.complete`, and only when it is provable: the
    connection was never made, or the provider answered with a refusal before generating
    anything. Its fields travel into workflow history, so `message` must hold no secret
    (`OpenAIChatModel` masks its API key).

    Attributes:
        code: the stable code of the subclass (`interaction.model.*`).
        retryable: whether sending the same request again later may succeed.
        message: what the provider said, for people (quoted in the Interaction's failure).
        status: the HTTP status of the refusal, None when there was no HTTP answer.
        retry_after: how long the provider asked to wait before trying again, or None.
    """

    retryable: ClassVar[bool]

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: timedelta | None = None
    ) -> None:
        if type(self) is ModelNotCalled:
            raise TypeError("raise ModelRejected, ModelContextOverflow or ModelUnavailable")
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class ModelRejected(ModelNotCalled):
    """The provider refused the request before generating anything; the same request
    would be refused again (a bad request, a bad key, no such model, a body too large).

    Code `interaction.model.rejected`.
    """

    default_code = MODEL_REJECTED
    retryable = False

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message, status=status)


class ModelContextOverflow(ModelRejected):
    """The provider refused the request because the conversation exceeds the model's
    context window; a context reducer on the Definition is the fix.

    Code `interaction.model.context_overflow`.
    """

    default_code = MODEL_CONTEXT_OVERFLOW


class ModelUnavailable(ModelNotCalled):
    """The request never reached the model (no connection) or was refused for now (rate
    limit, overload, a conflict); the same request may succeed later.

    Code `interaction.model.unavailable`. `retry_after` carries the provider's
    `Retry-After`, when it sent one.
    """

    default_code = MODEL_UNAVAILABLE
    retryable = True

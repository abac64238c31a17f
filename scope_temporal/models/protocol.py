"""The model contract: what the framework sends to a model and what it expects back.

Imported on both sides of Temporal (the pure state machine builds `ModelRequest`s, the
`scope.model` activity hands them to a `Model`), so this module depends only on the
standard library, pydantic, `scope_temporal.chat` and `scope_temporal.ids`.

Contract of `Model.complete`:

- It is called at most once per model Effect. The framework never retries it, so an
  adapter must not retry internally either (a retried call may bill and act twice).
- A returned `Response` is a *definite* settlement and must be exactly what the provider
  produced; the framework then checks it against the Interaction's rules.
- A `ModelNotCalled` subclass (`ModelRejected`, `ModelContextOverflow`,
  `ModelUnavailable`) says the model provably did not run the request: the connection
  was never made, or the provider refused it before generating anything. An adapter
  raises one only when that is provable (the table "Model errors an adapter may report"
  in docs/models.md); `classify_model_error` checks its fields.
- Any other exception (transport error, other HTTP error, timeout, structurally invalid
  answer) makes the outcome *unknown*: the Effect waits for the host, which may settle it
  by hand.

Streaming is an adapter concern: an adapter may stream from its provider (for example
`OpenAIChatModel(stream=True)`), but `complete` still returns one complete Response. The
framework settles only complete responses; a stream cut short is an exception. While it
streams, an adapter reports text as it arrives with `stream_delta(text)`, which hosts see
live (`scope_temporal.models.streaming`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from scope_temporal.chat import Message, Options, Response
from scope_temporal.ids import Attributed

__all__ = ["Model", "ModelRequest", "ToolDefinition"]


class ToolDefinition(BaseModel):
    """One tool as advertised to the model (a tool, a delegate or an advertised deferred tool)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """The name the model calls it by."""
    description: str = ""
    """What the model is told the tool does."""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """JSON schema of the arguments object."""


class ModelRequest(Attributed, BaseModel):
    """Everything one model call needs; retained verbatim while its Effect is unknown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: tuple[Message, ...]
    """The exact messages sent, in order (after any context reducer ran)."""
    tools: tuple[ToolDefinition, ...] = ()
    """The advertised tool manifest, in advertisement order; empty means no tools."""
    options: Options = Options()
    """Sampling options, passed to the provider unchanged."""
    model_call_seq: int = Field(default=1, ge=1)
    """1-based sequence number of this call within its Interaction."""
    process_id: str = ""
    """The Interaction making the call (empty in a request built by hand)."""
    attempt: int = Field(default=1, ge=1)
    """Which Effect of this model call this is (see `Attribution.attempt`)."""
    incarnation: int = Field(default=1, ge=1)
    """The run of the Interaction (1, then one more per continue-as-new)."""


@runtime_checkable
class Model(Protocol):
    """Anything that turns a `ModelRequest` into one `Response`.

    Implementations live on the worker only (they hold clients and secrets) and run in
    the `scope.model` activity, never inside a workflow.
    """

    async def complete(self, request: ModelRequest) -> Response:
        """Call the model once.

        Args:
            request: the messages, tools and options to send.

        Returns:
            The provider's complete response, unaltered in substance.

        Raises:
            ModelNotCalled: (a subclass) the model provably did not run this request.
            Exception: any other failure; the call's outcome is unknown, and the
                framework never re-runs it by itself.
        """
        ...

"""Errors a model adapter raises instead of returning a Response.

Both are ordinary exceptions on purpose: the framework treats any exception from
`Model.complete` as an *ambiguous* outcome (the Effect becomes unknown and waits for the
host), never as a definite result, and never retries the call.
"""

from __future__ import annotations

__all__ = ["InvalidModelResponse", "ScriptExhausted"]


class InvalidModelResponse(Exception):
    """The provider answered, but the answer is not a structurally valid response.

    Raised for a body that is not JSON, lacks `choices` or a message, carries a tool call
    without an id or name, or a stream that ends without a finish reason. The adapter
    never invents a Response from such an answer.
    """


class ScriptExhausted(RuntimeError):
    """A `ScriptedModel` was called more times than its script has steps."""

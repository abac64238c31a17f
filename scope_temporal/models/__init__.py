"""Models: the `Model` protocol, the OpenAI-compatible adapter and the scripted test double.

`OpenAIChatModel` is loaded on first access, so importing this package (as workflow-side
code does for `ModelRequest` and `ToolDefinition`) never imports `openai`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scope_temporal.models import reply
from scope_temporal.models.errors import (
    InvalidModelResponse,
    ModelContextOverflow,
    ModelNotCalled,
    ModelRejected,
    ModelUnavailable,
    ScriptExhausted,
)
from scope_temporal.models.not_called import (
    NotCalled,
    NotProven,
    classify_model_error,
    retry_after_from_headers,
)
from scope_temporal.models.protocol import Model, ModelRequest, ToolDefinition
from scope_temporal.models.retry import ModelRetry
from scope_temporal.models.scripted import ScriptedModel

if TYPE_CHECKING:
    from scope_temporal.models.openai import OpenAIChatModel

__all__ = [
    "InvalidModelResponse",
    "Model",
    "ModelContextOverflow",
    "ModelNotCalled",
    "ModelRejected",
    "ModelRequest",
    "ModelRetry",
    "ModelUnavailable",
    "NotCalled",
    "NotProven",
    "OpenAIChatModel",
    "ScriptExhausted",
    "ScriptedModel",
    "ToolDefinition",
    "classify_model_error",
    "reply",
    "retry_after_from_headers",
]


def __getattr__(name: str) -> object:
    # Lazy so that workflow-side code, which imports this package, never loads openai.
    if name == "OpenAIChatModel":
        from scope_temporal.models.openai import OpenAIChatModel

        return OpenAIChatModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

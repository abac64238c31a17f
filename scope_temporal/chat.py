"""Chat values: the messages, tool calls, results and responses every layer exchanges.

All values are frozen pydantic models that reject unknown fields, so they round-trip
through JSON exactly (Python ints keep arbitrary precision both ways) and a malformed
payload names the offending field. They are safe to import inside a workflow.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FinishReason",
    "Message",
    "Options",
    "Part",
    "Response",
    "Role",
    "TextPart",
    "ToolCall",
    "ToolCallPart",
    "ToolResult",
    "ToolResultPart",
    "Usage",
    "options_problem",
]


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


Role = Literal["system", "user", "assistant", "tool"]


class FinishReason(StrEnum):
    """Why the model stopped producing output."""

    stop = "stop"
    tool_calls = "tool_calls"
    length = "length"
    content_filter = "content_filter"
    refusal = "refusal"
    other = "other"


class ToolCall(_Value):
    """One tool call the model asked for."""

    id: str
    """Provider-assigned call id; unique within one response."""
    name: str
    """Name of the tool or delegate the model addressed."""
    arguments: str = "{}"
    """The raw JSON text the model produced, kept verbatim (never re-encoded)."""


class ToolResult(_Value):
    """The model-visible result of one tool call."""

    call_id: str
    """Id of the ToolCall this answers."""
    name: str
    """Name of the tool the call addressed."""
    content: str
    """Exactly the text the model sees."""
    is_error: bool = False
    """True when the call failed, was rejected or was not executed."""


class TextPart(_Value):
    """Plain text inside a message."""

    kind: Literal["text"] = "text"
    text: str


class ToolCallPart(_Value):
    """A tool call inside an assistant message."""

    kind: Literal["tool_call"] = "tool_call"
    call: ToolCall


class ToolResultPart(_Value):
    """A tool result inside a tool message."""

    kind: Literal["tool_result"] = "tool_result"
    result: ToolResult


Part = Annotated[TextPart | ToolCallPart | ToolResultPart, Field(discriminator="kind")]


class Message(_Value):
    """One chat message: a role and an ordered list of parts."""

    role: Role
    parts: tuple[Part, ...] = ()

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", parts=(TextPart(text=text),))

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", parts=(TextPart(text=text),))

    @classmethod
    def assistant(
        cls, text: str | None = None, tool_calls: list[ToolCall] | tuple[ToolCall, ...] = ()
    ) -> Message:
        parts: list[Part] = [TextPart(text=text)] if text else []
        parts.extend(ToolCallPart(call=call) for call in tool_calls)
        return cls(role="assistant", parts=tuple(parts))

    @classmethod
    def tool(cls, results: list[ToolResult] | tuple[ToolResult, ...]) -> Message:
        return cls(role="tool", parts=tuple(ToolResultPart(result=r) for r in results))

    @property
    def text(self) -> str:
        """The concatenated text parts ("" when there are none)."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [p.call for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResult]:
        return [p.result for p in self.parts if isinstance(p, ToolResultPart)]


class Usage(_Value):
    """Token accounting reported by the provider."""

    input_tokens: int = 0
    output_tokens: int = 0


class Response(_Value):
    """One model response."""

    message: Message
    """The assistant message (text and/or tool calls)."""
    finish_reason: FinishReason
    usage: Usage | None = None
    model: str | None = None
    """The provider's model name, when it reported one."""


class Options(_Value):
    """Sampling options passed to the model unchanged."""

    model_config = ConfigDict(frozen=True, extra="allow")

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    seed: int | None = None


_RANGES: dict[str, tuple[float, float, bool]] = {
    # field: (low, high, low end included)
    "temperature": (0.0, 2.0, True),
    "top_p": (0.0, 1.0, False),
    "max_tokens": (1, 2**31 - 1, True),
}


def options_problem(options: Options) -> str | None:
    """Why a model cannot take `options`, or None: a value out of the range every
    OpenAI-compatible endpoint accepts (temperature 0-2, top_p in (0, 1], max_tokens
    >= 1), or a provider-specific value that is not JSON."""
    for name, (low, high, closed) in _RANGES.items():
        value = getattr(options, name)
        if value is None:
            continue
        if isinstance(value, bool) or not (low <= value <= high) or (not closed and value == low):
            bracket = "[" if closed else "("
            return f"{name}={value!r} is outside {bracket}{low}, {high}]"
    for name, value in (options.model_extra or {}).items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            return f"{name}={value!r} is not a JSON value"
    return None

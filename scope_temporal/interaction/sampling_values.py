"""The values of MCP sampling under the Interaction's budget (see `sampling`): what a
tool call's requests may use (`SamplingAllowance`), what they used (`Sampled`), and the
sampling wait's state and answer schema. Pure."""

from __future__ import annotations

from datetime import timedelta  # a value type, no clock
from typing import Any

from pydantic import BaseModel, ConfigDict

from scope_temporal.chat import Options
from scope_temporal.outputs import TokenUsage

SAMPLING_STATE = {"mcp": "sampling"}
"""The continuation state of a tool attempt's input wait that is a sampling request."""

ANSWER_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"result": {"type": "object"}},
            "required": ["result"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"error": {"type": "string"}},
            "required": ["error"],
            "additionalProperties": False,
        },
    ]
}
"""What a sampling wait takes: MCP's `CreateMessageResult`, or the error the server gets."""


class SamplingAllowance(BaseModel):
    """What one tool call's sampling requests may use of its Interaction's budget."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    calls: int
    """Model calls it may make (0: every request is refused as over the budget)."""
    model: str
    """The Interaction's model (the name the worker resolves)."""
    options: Options = Options()
    """The Interaction's options; `max_tokens` caps what a request asks for."""
    max_tokens: int | None = None
    """The server's cap (`McpSampling.max_tokens`), over `options.max_tokens`."""
    tokens_left: int | None = None
    """What `max_total_tokens` left when the call started (None: no token budget); a
    request once the call's own calls reported that many is refused."""
    why: str = ""
    """Why `calls` is below the server's `max_requests` (shown to the server)."""
    timeout: timedelta = timedelta(minutes=5)
    """The Definition's `model_timeout`: start-to-close of each call."""
    heartbeat: timedelta | None = None
    """The Definition's `model_heartbeat_timeout`."""

    def cap(self, asked: int) -> int:
        """The `max_tokens` a request asking `asked` is sent with."""
        caps = [c for c in (self.max_tokens, self.options.max_tokens) if c is not None]
        return min([asked, *caps])


class Sampled(BaseModel):
    """What a tool call's sampling requests used (reported with its settlement)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    calls: int = 0
    """Model calls made (an unknown outcome counts: it may have run)."""
    usage: TokenUsage = TokenUsage()
    """Tokens they reported."""


__all__ = ["ANSWER_SCHEMA", "SAMPLING_STATE", "Sampled", "SamplingAllowance"]

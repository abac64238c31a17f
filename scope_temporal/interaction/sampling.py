"""MCP sampling under the Interaction's budget (pure: no Temporal, no I/O, no clock).

A server declared `McpServer(sampling=...)` may ask the client's model mid-call
(`sampling/createMessage`). Each such request is a model call of the Interaction, made
by the Tool call Process that holds the call (activity `scope.mcp.sample`), so it must
fit the Interaction's budget although the Interaction itself is waiting for its round:

1. When the Interaction starts a call of such a server, it grants the call an
   *allowance* (`SamplingAllowance`): at most the server's `max_requests`, and never
   more model calls than `max_model_calls` leaves after the calls started so far, those
   reserved by running siblings, and one kept for the Interaction's own next call (so the
   round's results can always be read). The reservation is held until the call settles.
2. The call reports what it used (`Sampled`: calls made, tokens reported) with its
   settlement; the Interaction counts those calls as model calls (`model_calls`, and
   against `max_model_calls` for every later call) and adds the tokens to its usage
   (against `max_total_tokens`), then releases the reservation.
3. The allowance also carries the Interaction's model and options (the server asks for
   text; which model answers, and how, is the Definition's), and the `max_tokens` cap.
"""

from __future__ import annotations

from datetime import timedelta  # a value type, no clock
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from scope_temporal.chat import Options
from scope_temporal.mcp.values import McpToolRecord
from scope_temporal.outputs import TokenUsage

if TYPE_CHECKING:  # the effects import the values here; the state imports the effects
    from scope_temporal.definition import Definition
    from scope_temporal.interaction.state import InteractionState

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


def allowance(
    definition: Definition, s: InteractionState, record: McpToolRecord | None, effect_id: str
) -> SamplingAllowance | None:
    """The allowance of a call about to start (reserved in `s`), or None when its
    server may not sample (it is refused on the worker, as before sampling existed)."""
    if record is None:
        return None
    server = next((m for m in definition.mcp_servers if m.name == record.server), None)
    policy = server.sampling_policy if server is not None else None
    if policy is None:
        return None
    calls, why = policy.max_requests, ""
    if s.max_model_calls is not None:
        started = s.next_model_call_seq - 1 + s.sampled_calls
        room = s.max_model_calls - started - sum(s.sampling_reserved.values()) - 1
        if room < calls:
            calls = max(room, 0)
            why = (
                f"the Interaction's max_model_calls={s.max_model_calls} leaves {calls} "
                "model call(s) for this tool call (one is kept for the Interaction's next "
                "call, and running calls reserve theirs)"
            )
    tokens_left = None
    if definition.max_total_tokens is not None:
        tokens_left = max(definition.max_total_tokens - s.usage.total_tokens, 0)
    s.sampling_reserved[effect_id] = calls
    return SamplingAllowance(
        calls=calls,
        model=definition.model,
        options=s.options if s.options is not None else definition.options,
        max_tokens=policy.max_tokens,
        tokens_left=tokens_left,
        why=why,
        timeout=definition.model_timeout,
        heartbeat=definition.model_heartbeat_timeout,
    )


def settle(s: InteractionState, effect_id: str, sampled: Sampled | None) -> None:
    """A call settled: release its reservation and count what it used."""
    s.sampling_reserved.pop(effect_id, None)
    if sampled is not None and sampled.calls:
        s.sampled_calls += sampled.calls
        s.model_calls += sampled.calls
        s.usage = s.usage.plus(sampled.usage)


__all__ = ["ANSWER_SCHEMA", "SAMPLING_STATE", "Sampled", "SamplingAllowance", "allowance", "settle"]

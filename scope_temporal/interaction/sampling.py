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

from scope_temporal.definition import Definition
from scope_temporal.interaction.sampling_values import Sampled, SamplingAllowance
from scope_temporal.interaction.state import InteractionState
from scope_temporal.mcp.values import McpToolRecord


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


__all__ = ["allowance", "settle"]

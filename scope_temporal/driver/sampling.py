"""An MCP server's sampling request, answered by the Interaction's model, on any engine.

The worker holding the `tools/call` ends the attempt with an input wait whose state is
`SAMPLING_STATE` (as for an elicitation, the call stays open on it); the Tool call
Process that holds the wait answers it itself, never a person: one model call
[activity `scope.mcp.sample`, never retried] with the server's messages, under the
allowance its Interaction granted (`interaction.sampling`). The answer goes back on the
ordinary answer path (the next attempt takes the held call back), as MCP's
`CreateMessageResult` or as an error the server receives:

- over the allowance (the server's `max_requests`, the Interaction's `max_model_calls`
  or `max_total_tokens`): an error saying so, and no model call;
- the model call's outcome is unknown (timeout, lost worker, invalid response): an error
  saying so. It is never sent again; it counts as a model call (it may have run); the
  server's tool decides what to do, and the tool call's own outcome settles the Effect;
- the model was provably not called, or the worker could not call it: an error.
"""

from __future__ import annotations

from typing import Any

from scope_temporal.chat import FinishReason, Message
from scope_temporal.driver.transport import Lost, ToolCallTransport
from scope_temporal.interaction.effects import (
    ModelEffectRequest,
    ModelHostFailed,
    ModelNotRun,
    ModelResponded,
    ModelUnknown,
    ToolEffectRequest,
)
from scope_temporal.interaction.sampling_values import Sampled, SamplingAllowance

_STOP = {FinishReason.stop: "endTurn", FinishReason.length: "maxTokens"}


def sample_summary(request: ToolEffectRequest, number: int, model: str) -> str:
    """What the UI shows: `sampling #1 for faulty_sample: default`."""
    return f"sampling #{number} for {request.call.name}: {model}"


def sample_request(
    request: ToolEffectRequest, asked: dict[str, Any], allowance: SamplingAllowance, number: int
) -> ModelEffectRequest:
    """The model call a server's request (`asked`, as the worker put it in the wait's
    prompt) becomes: its system prompt and text messages, no tools, the Interaction's
    model and options, `max_tokens` capped."""
    messages: list[Message] = []
    if asked.get("system_prompt"):
        messages.append(Message.system(str(asked["system_prompt"])))
    for message in asked.get("messages", ()):
        text = str(message.get("text", ""))
        if message.get("role") == "assistant":
            messages.append(Message.assistant(text))
        else:
            messages.append(Message.user(text))
    max_tokens = allowance.cap(int(asked.get("max_tokens") or 1))
    return ModelEffectRequest(
        definition=request.definition,
        digest=request.digest,
        process_id=request.process_id,
        effect_id=f"{request.effect_id}/sample/{number}",
        model_call_seq=request.model_call_seq,
        model=allowance.model,
        messages=tuple(messages),
        tools=(),
        options=allowance.options.model_copy(update={"max_tokens": max_tokens}),
        incarnation=request.incarnation,
    )


def refusal(allowance: SamplingAllowance | None, used: Sampled, server: str) -> str | None:
    """Why the next request may not run (None: it may)."""
    if allowance is None:
        return f"sampling is not allowed for MCP server {server!r} in this Interaction"
    if used.calls >= allowance.calls:
        if allowance.calls == 0:
            return f"sampling refused: no model call is left in the budget ({allowance.why})"
        return (
            f"sampling refused: this tool call used its {allowance.calls} model call(s) "
            f"for sampling{f' ({allowance.why})' if allowance.why else ''}"
        )
    left = allowance.tokens_left
    if left is not None and used.usage.total_tokens >= left:
        return (
            f"sampling refused: the Interaction's max_total_tokens budget is spent "
            f"({left:,} tokens were left when the call started)"
        )
    return None


async def answer(
    transport: ToolCallTransport,
    request: ToolEffectRequest,
    prompt: Any,
    allowance: SamplingAllowance | None,
    used: Sampled,
    number: int,
) -> tuple[dict[str, Any], Sampled]:
    """The answer to the wait (`{"result": CreateMessageResult}` or `{"error": why}`)
    and what the call's sampling used after it."""
    asked = prompt.get("mcp_sampling") if isinstance(prompt, dict) else None
    server = request.mcp.server if request.mcp is not None else "?"
    refused = refusal(allowance, used, server)
    if refused is not None or allowance is None or not isinstance(asked, dict):
        return {"error": refused or "sampling refused: the request is not readable"}, used
    model_request = sample_request(request, asked, allowance, number)
    outcome = await transport.run_sample(
        model_request,
        timeout=allowance.timeout,
        heartbeat=allowance.heartbeat,
        summary=sample_summary(request, number, allowance.model),
    )
    match outcome:
        case ModelResponded(response=response):
            usage = used.usage.add(allowance.model, response.usage)
            used = Sampled(calls=used.calls + 1, usage=usage)
            text = response.message.text
            if not text:
                return {"error": "sampling failed: the model answered with no text"}, used
            stop = _STOP.get(response.finish_reason, response.finish_reason.value)
            result = {
                "role": "assistant",
                "content": {"type": "text", "text": text},
                "model": response.model or allowance.model,
                "stopReason": stop,
            }
            return {"result": result}, used
        case ModelUnknown() | Lost():
            why = outcome.diagnostic
            used = Sampled(calls=used.calls + 1, usage=used.usage)
            return {
                "error": f"sampling failed: the model call's outcome is unknown ({why}); "
                "it is not sent again"
            }, used
        case ModelNotRun(reason=reason):
            return {"error": f"sampling failed: the model was not called ({reason.message})"}, used
        case ModelHostFailed(message=message):
            return {"error": f"sampling failed: {message}"}, used


__all__ = ["answer", "refusal", "sample_request", "sample_summary"]

"""Build a host's settlement of an unknown Effect from its retained request.

These functions never call a tool or a model: they only package what the host has
established by investigating, and refuse anything that cannot belong to that request.
"""

from __future__ import annotations

from collections.abc import Sequence

from scope_temporal.chat import Message, Response, ToolResult
from scope_temporal.errors import SettlementMismatch
from scope_temporal.interaction.effects import (
    ModelEffectRequest,
    ModelResend,
    ModelSettlement,
    ToolEffectRequest,
    ToolSettlement,
)
from scope_temporal.tools.outcome import Disposition, Failed, Rejected, Succeeded


def settle_model_result(
    request: ModelEffectRequest, response: Response, messages_sent: Sequence[Message]
) -> ModelSettlement:
    """Settle an unknown model call with the response the host established.

    Args:
        request: `unknown.request` from the snapshot, unchanged.
        response: the model's response (e.g. recovered from the provider's logs).
        messages_sent: the messages that call actually sent; they become the working
            context (so a host-side reduction replaces it).

    Raises:
        SettlementMismatch: the request is not a model request, or no messages were given.
    """
    if not isinstance(request, ModelEffectRequest):
        raise SettlementMismatch(
            "settle_model_result needs the request of an unknown *model* effect."
        )
    if not messages_sent:
        raise SettlementMismatch("messages_sent must list the messages the model call sent.")
    return ModelSettlement(request=request, response=response, messages_sent=tuple(messages_sent))


def resend_model_call(request: ModelEffectRequest | ToolEffectRequest) -> ModelResend:
    """The host's choice to send an unknown model call's retained request again (what
    `InteractionHandle.retry_model_call` sends).

    Raises:
        SettlementMismatch: a tool call's request: it is never sent again, since its tool
            may have acted.
    """
    if not isinstance(request, ModelEffectRequest):
        raise SettlementMismatch(
            f"{request.effect_id!r} is a tool call: it is never sent again, since its tool "
            "may have acted. Investigate and settle it with settle_tool_result."
        )
    return ModelResend(request=request)


def settle_tool_result(
    request: ToolEffectRequest,
    result: ToolResult,
    disposition: Disposition,
    advertised: Sequence[str] = (),
) -> ToolSettlement:
    """Settle an unknown tool call with the result the host established.

    Args:
        request: `unknown.request` from the snapshot, unchanged.
        result: the model-visible result; `call_id` and `name` must be the call's.
        disposition: `succeeded` (is_error False), or `failed` / `rejected` (is_error True).
        advertised: deferred tools the call advertised; only on `succeeded`.

    Raises:
        SettlementMismatch: with a message saying which part does not match.
    """
    if not isinstance(request, ToolEffectRequest):
        raise SettlementMismatch(
            "settle_tool_result needs the request of an unknown *tool* effect."
        )
    if result.call_id != request.call.id or result.name != request.call.name:
        raise SettlementMismatch(
            f"The result answers call {result.call_id!r} ({result.name}), but the unknown effect "
            f"is call {request.call.id!r} ({request.call.name})."
        )
    if (disposition == "succeeded") == result.is_error:
        raise SettlementMismatch(
            f"Disposition {disposition!r} disagrees with is_error={result.is_error}: succeeded "
            "results have is_error=False, failed/rejected ones is_error=True."
        )
    if advertised and disposition != "succeeded":
        raise SettlementMismatch("Only a succeeded call can advertise deferred tools.")
    unknown = sorted(set(advertised) - set(request.deferred_tools))
    if unknown:
        raise SettlementMismatch(f"{unknown} are not deferred tools of {request.definition!r}.")
    if disposition == "succeeded":
        outcome: Succeeded | Failed | Rejected = Succeeded(
            result=result, advertised=tuple(advertised)
        )
    elif disposition == "failed":
        outcome = Failed(result=result)
    elif disposition == "rejected":
        outcome = Rejected(result=result, code="tool.input_invalid")
    else:
        raise SettlementMismatch(f"Unknown disposition {disposition!r}.")
    return ToolSettlement(request=request, outcome=outcome)

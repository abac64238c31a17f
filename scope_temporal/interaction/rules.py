"""Pure rule helpers of the loop: response admission, the manifest, completion judging.

Each function reads the Definition and (part of) the state and changes nothing;
`machine.py` decides when they apply.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from scope_temporal import errors
from scope_temporal.chat import Message, ToolCall, ToolResult
from scope_temporal.context_refs import prefix_digest
from scope_temporal.definition import Definition
from scope_temporal.errors import SettlementMismatch
from scope_temporal.ids import tool_call_ref
from scope_temporal.interaction.effects import ModelEffectRequest, ModelSettlement
from scope_temporal.interaction.snapshot import ResultEntry
from scope_temporal.interaction.state import CallSlot, InteractionState
from scope_temporal.models.protocol import ToolDefinition
from scope_temporal.outputs import CompletionCandidate, CompletionDecision
from scope_temporal.tools.spec import ToolSpec
from scope_temporal.tools.validation import validate_value


def check_resolution(s: InteractionState, settlement: ModelSettlement) -> None:
    """Raise SettlementMismatch unless `settlement` settles the held unknown model Effect."""
    if s.model is None or not s.model.unknown:
        raise SettlementMismatch(
            f"Interaction {s.process_id!r} holds no unknown model effect to settle."
        )
    if settlement.request != s.model.request:
        raise SettlementMismatch(
            f"The settlement was built from another request (effect "
            f"{settlement.request.effect_id!r}, definition {settlement.request.definition!r}); "
            f"the unknown effect is {s.model.request.effect_id!r}. Build it with "
            "settle_model_result(unknown.request, ...)."
        )
    # what settle_model_result guarantees, checked again: a raw signal skips it
    if not settlement.messages_sent:
        raise SettlementMismatch("messages_sent must list the messages the model call sent.")
    problem = response_problem(settlement.response.message)
    if problem is not None:
        raise SettlementMismatch(
            f"The settlement's response cannot be admitted: {problem} Settle with the "
            "response the model gave, or cancel the Interaction."
        )


def replacement(
    request: ModelEffectRequest, messages_sent: tuple[Message, ...]
) -> tuple[Message, ...] | None:
    """The context a host's settlement puts in place: `messages_sent`, or None when they
    are exactly a turn's base (by its digest) then the request's own messages, i.e. the
    call sent the context unreduced and the base stays a reference."""
    base = request.base
    if base is None or len(messages_sent) != base.count + len(request.messages):
        return messages_sent
    if messages_sent[base.count :] != request.messages:
        return messages_sent
    if prefix_digest(messages_sent[: base.count]) != base.digest:
        return messages_sent
    return None


def response_problem(message: Message) -> str | None:
    """Why a structurally valid response breaks the loop's rules, or None."""
    if message.role != "assistant":
        return f"The model answered with a {message.role!r} message, not an assistant message."
    calls = message.tool_calls
    if not calls and not message.text:
        return "The model's final reply has no message (no text and no tool calls)."
    ids = [c.id for c in calls]
    if any(not i for i in ids):
        return "A tool call in the response has an empty id."
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        return f"The response repeats tool-call ids {duplicates}; ids must be unique."
    return None


def bound_tool(definition: Definition, advertised: list[str], name: str) -> ToolSpec | None:
    """The spec the model may call under `name`: ordinary, or deferred once advertised."""
    for spec in definition.tools.tools:
        if spec.name == name:
            return spec
    if name in advertised:
        for spec in definition.tools.deferred:
            if spec.name == name:
                return spec
    return None


def manifest(definition: Definition, advertised: list[str]) -> tuple[ToolDefinition, ...] | str:
    """Ordinary tools, then delegates, then advertised deferred tools in advertisement order.

    Returns a problem description instead when an advertised tool is not bound.
    """
    entries = [
        ToolDefinition(name=t.name, description=t.description, parameters=t.parameters)
        for t in definition.tools.tools
    ]
    entries += [
        ToolDefinition(name=d.name, description=d.description, parameters=d.input_schema)
        for d in definition.delegates
    ]
    deferred = {t.name: t for t in definition.tools.deferred}
    for name in advertised:
        spec = deferred.get(name)
        if spec is None:
            return f"Advertised tool {name!r} is not bound by Definition {definition.name!r}."
        entries.append(
            ToolDefinition(name=spec.name, description=spec.description, parameters=spec.parameters)
        )
    return tuple(entries)


def rejected_slot(index: int, call: ToolCall, effect_id: str, result: ToolResult) -> CallSlot:
    """A call settled at admission: model-visible rejected result, no child, no body run."""
    return CallSlot(
        index=index,
        call=call,
        effect_id=effect_id,
        target="none",
        status="settled",
        result=result,
        disposition="rejected",
    )


def result_entry(process_id: str, seq: int, slot: CallSlot) -> ResultEntry:
    assert slot.result is not None and slot.disposition is not None
    return ResultEntry(
        call_index=slot.index,
        call=slot.call,
        result=slot.result,
        disposition=slot.disposition,
        for_user=slot.for_user,
        ref=slot.output_ref,
        metadata=slot.metadata,
        call_ref=tool_call_ref(process_id, seq, slot.index),
        task_id=slot.task_id,
    )


def judge(definition: Definition, candidate: CompletionCandidate) -> tuple[str | None, Any]:
    """Run the output schema and the completion validator on a candidate.

    Returns:
        `(feedback, data)`: feedback for the model when rejected (None when accepted), and
        the output parsed against the Definition's output schema (None without one).

    Raises:
        ScopeError: `interaction.host.failed`, naming the validator, when it raises, is
            async, or returns anything but a `CompletionDecision`.
    """
    data: Any = None
    if definition.output_schema is not None:
        try:
            data = json.loads(candidate.output_text)
        except ValueError:
            return (
                "Your final answer must be a JSON value matching the output schema "
                f"{json.dumps(definition.output_schema)}; it was not valid JSON.",
                None,
            )
        problem = validate_value(definition.output_schema, data)
        if problem is not None:
            return f"Your final answer does not match the output schema: {problem}", None
    validator = definition.completion_validator
    if validator is None:
        return None, data
    named = f"The completion validator {_name_of(validator)} of {definition.name!r}"
    try:
        decision: object = validator(candidate)
    except Exception as exc:
        raise errors.ScopeError(f"{named} raised {exc!r}.", code=errors.HOST_FAILED) from exc
    if inspect.isawaitable(decision):
        if inspect.iscoroutine(decision):
            decision.close()  # never run: nothing may be awaited in workflow code
        raise errors.ScopeError(
            f"{named} is async; it runs in workflow code, so it must be a plain (and pure) "
            "function returning a CompletionDecision.",
            code=errors.HOST_FAILED,
        )
    if not isinstance(decision, CompletionDecision):
        raise errors.ScopeError(
            f"{named} returned {decision!r}, not a CompletionDecision; return "
            "CompletionDecision.accept() or CompletionDecision.reject(feedback).",
            code=errors.HOST_FAILED,
        )
    return (None, data) if decision.accepted else (decision.feedback or "Rejected.", None)


def _name_of(function: object) -> str:
    return str(getattr(function, "__qualname__", None) or repr(function))

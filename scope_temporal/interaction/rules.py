"""Pure rule helpers of the loop: response admission, the manifest, completion judging.

Each function reads the Definition and (part of) the state and changes nothing;
`machine.py` decides when they apply.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scope_temporal.approval import ApprovalRecord
from scope_temporal.chat import Message, Options, ToolCall, ToolResult, options_problem
from scope_temporal.context_refs import BaseRef, prefix_digest
from scope_temporal.definition import Definition
from scope_temporal.errors import InvalidOptions, InvalidSignal, SettlementMismatch
from scope_temporal.ids import tool_call_ref
from scope_temporal.interaction.effects import (
    ModelEffectRequest,
    ModelResend,
    ModelSettlement,
    ToolEffectRequest,
    same_request,
)
from scope_temporal.interaction.hooks import call_hook
from scope_temporal.interaction.snapshot import ResultEntry
from scope_temporal.interaction.state import CallSlot, InteractionState
from scope_temporal.models.protocol import ToolDefinition
from scope_temporal.outputs import CompletionCandidate, CompletionDecision
from scope_temporal.run_context import check_run_context
from scope_temporal.tools.outcome import DefiniteOutcome, Succeeded
from scope_temporal.tools.spec import ToolSpec
from scope_temporal.tools.validation import validate_value


def initial_state(
    definition: Definition,
    process_id: str,
    messages: list[Message] | tuple[Message, ...],
    max_model_calls: int | None,
    capabilities: tuple[str, ...] | None,
    approved_tools: tuple[str, ...] = (),
    *,
    run_context: Mapping[str, Any] | None = None,
    base: BaseRef | None = None,
    instructions_first: bool | None = None,
) -> InteractionState:
    """A new Interaction's state; a parent's delegate budget and grant only tighten the
    Definition's own; `approved_tools` the Definition does not bind are ignored.
    `run_context` is what its tools read. `base` makes it a session's turn: its context
    is that transcript (by reference), then `messages`. A turn with `instructions_first`
    sends the Definition's instructions before the base on every model call and never
    holds them in its context; False: the base opens with them already; None (a turn of
    an older session): instructions open only a turn whose base is empty.

    Raises:
        InvalidSignal: no messages.
        InvalidRunContext: `run_context` is not a JSON object within its size limit.
    """
    if not messages:
        raise InvalidSignal("An Interaction needs at least one message to start.")
    limit = definition.max_model_calls
    if max_model_calls is not None:
        limit = max_model_calls if limit is None else min(limit, max_model_calls)
    granted = definition.capabilities
    if capabilities is not None:
        granted = granted & frozenset(capabilities)
    ahead = base is not None and instructions_first is True
    opens = base is None or (instructions_first is None and base.count == 0)
    instructions = definition.instructions if opens else None
    context = [Message.system(instructions)] if instructions else []
    return InteractionState(
        process_id=process_id,
        definition=definition.name,
        digest=definition.digest,
        context=[*context, *messages],
        max_model_calls=limit,
        granted=tuple(sorted(granted)),
        run_context=check_run_context(run_context) if run_context is not None else {},
        base=base,
        turn_of=base.workflow_id if base is not None else None,
        instructions=definition.instructions or None if ahead else None,
        approved_tools=sorted(set(approved_tools) & set(definition.tools.names)),
    )


def options_for(definition: Definition, options: Options | None) -> Options | None:
    """The sampling options of one Interaction: the fields `options` sets to a value (not
    None) over the Definition's own (None: the Definition's, as before options existed).

    Raises:
        InvalidOptions: a value the model cannot take (`chat.options_problem`).
    """
    if options is None:
        return None
    problem = options_problem(options)
    if problem is not None:
        raise InvalidOptions(
            f"Options for this Interaction of {definition.name!r}: {problem}. Nothing was "
            "started; pass values the model accepts."
        )
    return definition.options.model_copy(update=options.model_dump(exclude_none=True))


def check_resolution(s: InteractionState, settlement: ModelSettlement | ModelResend) -> None:
    """Raise SettlementMismatch unless `settlement` settles the held unknown model Effect
    (a re-send: only its request must match)."""
    if s.model is None or not s.model.unknown:
        raise SettlementMismatch(
            f"Interaction {s.process_id!r} holds no unknown model effect to settle."
        )
    if not same_request(settlement.request, s.model.request):
        raise SettlementMismatch(
            f"The settlement was built from another request (effect "
            f"{settlement.request.effect_id!r}, definition {settlement.request.definition!r}); "
            f"the unknown effect is {s.model.request.effect_id!r}. Build it with "
            "settle_model_result(unknown.request, ...)."
        )
    if isinstance(settlement, ModelResend):
        return
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
    are exactly a turn's instructions (if it sends them), its base (by its digest) then
    the request's own messages, i.e. the call sent the context unreduced and the base
    stays a reference."""
    base = request.base
    if base is None:
        return messages_sent
    first = (Message.system(request.instructions),) if request.instructions else ()
    sent = messages_sent[len(first) :]
    if messages_sent[: len(first)] != first or len(sent) != base.count + len(request.messages):
        return messages_sent
    if sent[base.count :] != request.messages:
        return messages_sent
    if prefix_digest(sent[: base.count]) != base.digest:
        return messages_sent
    return None


def outcome_problem(request: ToolEffectRequest, outcome: DefiniteOutcome) -> str | None:
    """Why `outcome` cannot settle the call `request` describes, or None.

    The checks `settle_tool_result` makes, repeated where a raw signal cannot skip them:
    a result for another call would otherwise reach the parent's round and fail it.
    """
    call, result = request.call, outcome.result
    if result.call_id != call.id or result.name != call.name:
        return (
            f"The result answers call {result.call_id!r} ({result.name}), but the unknown "
            f"effect is call {call.id!r} ({call.name})."
        )
    if isinstance(outcome, Succeeded) == result.is_error:
        return (
            f"Disposition {outcome.kind!r} disagrees with is_error={result.is_error}: "
            "succeeded results have is_error=False, failed/rejected ones is_error=True."
        )
    if isinstance(outcome, Succeeded):
        unknown = sorted(set(outcome.advertised) - set(request.deferred_tools))
        if unknown:
            return f"{unknown} are not deferred tools of {request.definition!r}."
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


def rejected_slot(
    index: int,
    call: ToolCall,
    effect_id: str,
    result: ToolResult,
    *,
    approval: ApprovalRecord | None = None,
) -> CallSlot:
    """A call settled at admission: model-visible rejected result, no child, no body run."""
    return CallSlot(
        approval=approval,
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
        approval=slot.approval if slot.approval != "ask" else None,
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
    decision = call_hook(
        validator,
        candidate,
        named,
        CompletionDecision,
        "CompletionDecision.accept() or CompletionDecision.reject(feedback)",
    )
    return (None, data) if decision.accepted else (decision.feedback or "Rejected.", None)


def _name_of(function: object) -> str:
    return str(getattr(function, "__qualname__", None) or repr(function))

"""One round: a model response's batch of tool and delegate calls, from admission to commit.

Admission (`admission.py`, the judgement `scope.tool`'s guard repeats) settles unknown
tools, unauthorised tools and invalid arguments at once (no child, no body run), and
judges each call its Definition's approval policy covers (`approvals.py`): denied at
once, approved, or started behind an approval wait. Calls start as the scheduler allows
(`scheduling.py`: parallel tools within the window, barriers alone, delegates unless a
barrier holds them back). Each running call settles exactly once; the round commits,
results in call order, when every call is definite. Functions over the round, run inside
the machine's fail-closed transitions; the phase is the machine's alone: they return what
happened.
"""

from __future__ import annotations

import json
from typing import assert_never

from scope_temporal import errors
from scope_temporal.approval import ApprovalRecord
from scope_temporal.chat import Message, ToolCall, ToolResult
from scope_temporal.definition import Definition
from scope_temporal.delegates import DEFAULT_DELEGATE_INPUT_SCHEMA
from scope_temporal.errors import ProtocolError, ScopeError
from scope_temporal.ids import (
    call_effect_id,
    delegate_process_id,
    tool_call_process_id,
    tool_call_ref,
)
from scope_temporal.interaction import approvals, rules, sampling
from scope_temporal.interaction.admission import Refusal, admission
from scope_temporal.interaction.concurrency import classify
from scope_temporal.interaction.effects import (
    CallOutcome,
    CallSettled,
    DelegateSettled,
    Effect,
    StartDelegate,
    StartToolCall,
    ToolEffectRequest,
)
from scope_temporal.interaction.scheduling import startable
from scope_temporal.interaction.snapshot import RoundResults
from scope_temporal.interaction.state import CallSlot, InteractionState, OpenRound
from scope_temporal.mcp.binding import mcp_record
from scope_temporal.outputs import Artifact, Failure
from scope_temporal.tools import rejections
from scope_temporal.tools.context import ToolInvocation
from scope_temporal.tools.outcome import Failed, Succeeded
from scope_temporal.tools.spec import ToolSpec
from scope_temporal.tools.validation import validate_arguments


def admit(
    definition: Definition, s: InteractionState, seq: int, calls: list[ToolCall]
) -> OpenRound | Failure:
    """The round of a response's calls, each admitted or settled as rejected; or the
    failure when a call cannot even be checked (its tool's own schema is broken)."""
    slots: list[CallSlot] = []
    for index, call in enumerate(calls):
        try:
            slots.append(_admit_call(definition, s, seq, index, call))
        except ScopeError as error:  # a definite failure, before anything runs
            return Failure.of(
                error.code, f"Call {call.name!r} could not be checked: {error.message}"
            )
    return OpenRound(model_call_seq=seq, slots=slots)


def _admit_call(
    definition: Definition, s: InteractionState, seq: int, index: int, call: ToolCall
) -> CallSlot:
    effect_id = call_effect_id(s.process_id, seq, index)
    delegate = definition.delegate(call.name)
    if delegate is not None:
        error = validate_arguments(delegate.input_schema, call.arguments)
        if error is not None:
            return rules.rejected_slot(
                index, call, effect_id, rejections.invalid_arguments(call, error)
            )
        return CallSlot(
            index=index,
            call=call,
            effect_id=effect_id,
            target="delegate",
            process_id=delegate_process_id(s.process_id, seq, index),
        )
    ref = tool_call_ref(s.process_id, seq, index)

    def decide(spec: ToolSpec) -> ApprovalRecord | approvals.Ask:
        assert definition.approval is not None  # asked only for a call the policy covers
        return approvals.judge(
            definition.name, definition.approval, spec, call, ref, s.approved_tools
        )

    verdict = admission(definition, call, granted=s.granted, advertised=s.advertised, decide=decide)
    if isinstance(verdict, Refusal):
        return rules.rejected_slot(
            index, call, effect_id, verdict.result, approval=verdict.approval
        )
    spec = verdict.spec
    process_id = tool_call_process_id(s.process_id, seq, index)
    scheduling, key = classify(
        spec,
        ToolInvocation(
            process_id=process_id,
            ref=ref,
            model_call_seq=seq,
            call_index=index,
            call=call,
            effect_id=effect_id,
            incarnation=s.incarnation,
            deferred_tools=tuple(t.name for t in definition.tools.deferred),
        ),
    )
    return CallSlot(
        index=index,
        call=call,
        effect_id=effect_id,
        target="tool",
        scheduling=scheduling,
        concurrency_key=key,
        direct_result=spec.direct_result,
        process_id=process_id,
        approval=verdict.approval,
    )


def start_calls(definition: Definition, s: InteractionState, round_: OpenRound) -> list[Effect]:
    """Start the calls the scheduler allows now (see `scheduling.py`)."""
    effects: list[Effect] = []
    for index in startable(round_.slots, definition.max_concurrent_tool_calls):
        slot = round_.slots[index]
        slot.status = "running"
        if slot.target == "delegate":
            effects.append(_delegate_effect(definition, s, round_.model_call_seq, slot))
        else:
            effects.append(_tool_effect(definition, s, round_.model_call_seq, slot))
    return effects


def _tool_effect(
    definition: Definition, s: InteractionState, seq: int, slot: CallSlot
) -> StartToolCall:
    if slot.approval == "ask" and slot.call.name in s.approved_tools:
        # a sibling's answer remembered the tool meanwhile
        slot.approval = ApprovalRecord(decision="approve", by="remembered")
    request = tool_request(definition, s, seq, slot)
    grant = sampling.allowance(definition, s, request.mcp, request.effect_id)
    if slot.approval == "ask":
        spec = definition.tools.get(slot.call.name)
        assert spec is not None  # admission only lets bound tools through
        gate = approvals.gate(definition.approval, spec)
        return StartToolCall(approval=gate, request=request, sampling=grant)
    return StartToolCall(decision=slot.approval, request=request, sampling=grant)


def tool_request(
    definition: Definition, s: InteractionState, seq: int, slot: CallSlot
) -> ToolEffectRequest:
    """The request a tool call's `StartToolCall` carries (the same for a running slot)."""
    return ToolEffectRequest(
        definition=s.definition,
        digest=s.digest,
        process_id=slot.process_id or "",
        parent_id=s.process_id,
        effect_id=slot.effect_id,
        ref=tool_call_ref(s.process_id, seq, slot.index),
        model_call_seq=seq,
        call_index=slot.index,
        call=slot.call,
        granted=s.granted,
        deferred_tools=tuple(t.name for t in definition.tools.deferred),
        context=s.run_context,
        budget=definition.tool_budget,
        incarnation=s.incarnation,
        mcp=mcp_record(definition, slot.call.name),
    )


def _delegate_effect(
    definition: Definition, s: InteractionState, seq: int, slot: CallSlot
) -> StartDelegate:
    delegate = definition.delegate(slot.call.name)
    assert delegate is not None  # admission only lets bound delegates through
    arguments = json.loads(slot.call.arguments or "{}")
    if delegate.input_schema is DEFAULT_DELEGATE_INPUT_SCHEMA:
        text = str(arguments["task"])
    else:
        text = json.dumps(arguments, ensure_ascii=False)
    granted = frozenset(s.granted)
    if delegate.capabilities is not None:
        granted &= delegate.capabilities
    return StartDelegate(
        effect_id=slot.effect_id,
        process_id=slot.process_id or "",
        ref=tool_call_ref(s.process_id, seq, slot.index),
        model_call_seq=seq,
        call_index=slot.index,
        delegate=delegate.name,
        definition=delegate.definition,
        messages=(Message.user(text),),
        max_model_calls=_allocated(delegate.max_model_calls, s),
        capabilities=tuple(sorted(granted)),
        run_context=s.run_context,
    )


def _allocated(budget: int | None, s: InteractionState) -> int | None:
    """A delegate's model-call budget, taken from what its parent has left: never more
    than the parent could still make itself (0 when it has none left: the child then
    fails `interaction.limit.model_calls`, a model-visible delegate failure)."""
    if s.max_model_calls is None:
        return budget
    left = max(0, s.max_model_calls - s.model_calls)
    return left if budget is None else min(budget, left)


def settle(definition: Definition, s: InteractionState, outcome: CallOutcome) -> None:
    """Settle the running call `outcome` is for (refused unless exactly one runs)."""
    round_ = s.round
    slot = None
    if round_ is not None:
        slot = next((x for x in round_.slots if x.effect_id == outcome.effect_id), None)
    if round_ is None or slot is None or slot.status != "running":
        raise ProtocolError(
            f"No running call has effect id {outcome.effect_id!r}; refusing the settlement "
            "(a duplicate, or for a call that was never started)."
        )
    match outcome:
        case CallSettled():
            if slot.target != "tool":
                raise ProtocolError(f"Effect {outcome.effect_id!r} is a delegate, not a tool call.")
            _settle_tool_slot(definition, s, slot, outcome)
        case DelegateSettled():
            if slot.target != "delegate":
                raise ProtocolError(f"Effect {outcome.effect_id!r} is a tool call, not a delegate.")
            _settle_delegate_slot(s, round_.model_call_seq, slot, outcome)
        case _:
            assert_never(outcome)
    slot.status = "settled"


def _settle_tool_slot(
    definition: Definition, s: InteractionState, slot: CallSlot, settled: CallSettled
) -> None:
    outcome = settled.outcome
    sampling.settle(s, settled.effect_id, settled.sampled)
    if slot.approval == "ask" and settled.approval is not None:  # a gated call's answer
        slot.approval = settled.approval
        if settled.approval.remember and slot.call.name not in s.approved_tools:
            s.approved_tools.append(slot.call.name)
    if outcome.result.call_id != slot.call.id:
        raise ProtocolError(
            f"Result for call id {outcome.result.call_id!r} settles call {slot.call.id!r}."
        )
    if isinstance(outcome, Succeeded):
        invalid = [
            n
            for n in outcome.advertised
            if n not in definition.tools.names
            or definition.tools.get(n) not in definition.tools.deferred
        ]
        if invalid:
            outcome = Failed(
                result=ToolResult(
                    call_id=slot.call.id,
                    name=slot.call.name,
                    content=f"Cannot advertise {invalid}: not deferred tools of this agent.",
                    is_error=True,
                ),
                code=errors.TOOL_EXECUTION_FAILED,
            )
    slot.result = outcome.result
    slot.disposition = outcome.kind
    if isinstance(outcome, Succeeded):
        slot.for_user = outcome.for_user
        slot.output_ref = outcome.ref
        slot.metadata = outcome.metadata
        slot.advertised = outcome.advertised
        slot.task_id = outcome.task_id


def _settle_delegate_slot(
    s: InteractionState, seq: int, slot: CallSlot, settled: DelegateSettled
) -> None:
    call = slot.call
    ended = settled.output or settled.failure
    s.usage = s.usage.plus(ended.usage if ended is not None else None)
    if settled.output is not None:
        text = settled.output.text
        slot.result = ToolResult(call_id=call.id, name=call.name, content=text)
        slot.disposition = "succeeded"
        slot.artifact = Artifact(
            delegate=call.name,
            ref=tool_call_ref(s.process_id, seq, slot.index),
            process_id=slot.process_id or "",
            text=text,
            data=settled.output.data,
        )
    else:
        failure = settled.failure or Failure.of(errors.HOST_FAILED, "no output")
        slot.result = ToolResult(
            call_id=call.id,
            name=call.name,
            content=f"Delegate {call.name!r} failed ({failure.code}): {failure.message}",
            is_error=True,
        )
        slot.disposition = "rejected" if failure.code == errors.DELEGATE_REJECTED else "failed"


def complete(round_: OpenRound) -> bool:
    """Every call of the round is definite."""
    return all(slot.status == "settled" for slot in round_.slots)


def commit(s: InteractionState, round_: OpenRound) -> tuple[ToolResult, ...] | None:
    """Commit a complete round: its results enter the context in call order, with the
    successful calls' advertisements and artifacts. Returns the results when the round
    completes the Interaction (every call a successful direct-result tool), else None."""
    results = [slot.result for slot in round_.slots if slot.result is not None]
    s.context.append(Message.tool(results))
    for slot in round_.slots:
        if slot.disposition == "succeeded":
            s.advertised.extend(n for n in slot.advertised if n not in s.advertised)
            if slot.artifact is not None:
                s.artifacts.append(slot.artifact)
    s.rounds.append(
        RoundResults(
            process_id=s.process_id,
            model_call_seq=round_.model_call_seq,
            entries=tuple(
                rules.result_entry(s.process_id, round_.model_call_seq, x) for x in round_.slots
            ),
        )
    )
    s.round = None
    direct = all(
        x.target == "tool" and x.direct_result and x.disposition == "succeeded"
        for x in round_.slots
    )
    return tuple(results) if direct else None

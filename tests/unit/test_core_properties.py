"""Properties of the pure InteractionMachine under random inputs, valid and invalid.

Checked after every input of a random sequence:
 - the machine only ever raises `ScopeError` subclasses;
 - an input that raised left `machine.state` exactly as before;
 - a machine restored from the JSON of the state at *any* earlier step behaves identically
   for the rest of the sequence (same return values, same errors, same state, same
   snapshot) - what continue-as-new and replay rely on;
 - snapshot -> restore -> snapshot is byte-identical JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scope_temporal.chat import FinishReason, Message, Response, ToolCall, ToolResult
from scope_temporal.definition import Definition, Delegate, ToolSet
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.effects import (
    CallModel,
    CallSettled,
    DelegateSettled,
    ModelEffectRequest,
    ModelHostFailed,
    ModelResponded,
    ModelUnknown,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.state import InteractionState
from scope_temporal.models import reply
from scope_temporal.outputs import CompletionCandidate, CompletionDecision, Failure, Output
from scope_temporal.settle import settle_model_result
from scope_temporal.tools import Failed, Rejected, Succeeded, tool


@tool(permission="read")
def lookup(query: str) -> str:
    """Look up."""
    return query


@tool(permission="write", direct_result=True)
def direct(x: str) -> str:
    """Direct result."""
    return x


@tool(permission="exec", concurrency_key="box")
def boxed() -> str:
    """Keyed."""
    return "boxed"


@tool(permission="read", deferred=True)
def hidden() -> str:
    """Deferred."""
    return "hidden"


def picky(candidate: CompletionCandidate) -> CompletionDecision:
    if candidate.output_text == "reject me":
        return CompletionDecision.reject("Try again.")
    return CompletionDecision.accept()


DEFINITION = Definition(
    "prop",
    instructions="Be brief.",
    tools=ToolSet("prop-tools", [lookup, direct, boxed], deferred=[hidden]),
    delegates=[Delegate("helper", "Helps", definition="child", max_model_calls=2)],
    max_model_calls=6,
    max_concurrent_tool_calls=2,
    completion_validator=picky,
    capabilities={"read", "write"},
)

CALLS: list[tuple[str, Any]] = [
    ("lookup", {"query": "q"}),
    ("lookup", {"query": 5}),  # invalid arguments
    ("lookup", "not json"),
    ("direct", {"x": "d"}),
    ("boxed", {}),  # not authorized (exec)
    ("hidden", {}),  # not bound until advertised
    ("nope", {}),  # not available
    ("helper", {"task": "t"}),
    ("helper", {"oops": 1}),
]

STEERS: list[tuple[Message, ...]] = [
    (Message.user("steer a"),),
    (Message.user("steer b"),),
    (Message.system("not allowed"),),
    (),
]


# --- abstract inputs, made concrete against the current state ---------------------------


@dataclass(frozen=True)
class Op:
    kind: str
    args: tuple[Any, ...] = ()


responses = st.sampled_from(
    ["text", "reject", "calls", "length_calls", "stop_calls", "duplicate", "empty", "length_text"]
)
call_lists = st.lists(st.integers(0, len(CALLS) - 1), min_size=1, max_size=4)

ops = st.one_of(
    st.just(Op("next")),
    st.builds(
        lambda r, c, ok: Op("respond", (r, tuple(c), ok)), responses, call_lists, st.booleans()
    ),
    st.builds(lambda ok: Op("unknown", (ok,)), st.booleans()),
    st.builds(lambda ok: Op("host_failed", (ok,)), st.booleans()),
    st.builds(
        lambda pick, kind, right_id, right_call, adv: Op(
            "call", (pick, kind, right_id, right_call, adv)
        ),
        st.integers(0, 3),
        st.sampled_from(["succeeded", "failed", "rejected", "delegate_ok", "delegate_fail"]),
        st.booleans(),
        st.booleans(),
        st.sampled_from([(), ("hidden",), ("lookup",)]),
    ),
    st.builds(
        lambda sid, content: Op("steer", (sid, content)),
        st.sampled_from(["s1", "s2", "s3", ""]),
        st.integers(0, len(STEERS) - 1),
    ),
    st.builds(
        lambda match, r, c: Op("resolve", (match, r, tuple(c))),
        st.booleans(),
        responses,
        call_lists,
    ),
    st.builds(lambda ok: Op("unknown", (ok,)), st.booleans()),
)


def build_response(kind: str, calls: tuple[int, ...]) -> Response:
    specs = [CALLS[i] for i in calls]
    if kind == "text":
        return reply.text("final answer")
    if kind == "reject":
        return reply.text("reject me")
    if kind == "length_text":
        return reply.length(text="cut")
    if kind == "calls":
        return reply.tool_calls(*specs)
    if kind == "length_calls":
        return reply.length(tool_calls=specs)
    if kind == "stop_calls":
        return reply.response(tool_calls=specs, finish_reason=FinishReason.stop)
    if kind == "duplicate":
        same = [ToolCall(id="same", name=n, arguments="{}") for n, _ in specs] * 2
        return Response(
            message=Message.assistant(None, same), finish_reason=FinishReason.tool_calls
        )
    return Response(message=Message.assistant(), finish_reason=FinishReason.stop)


@dataclass
class Concrete:
    """One input with everything it needs, applicable to any machine."""

    kind: str
    value: Any = None
    extra: Any = None


def concretise(op: Op, state: InteractionState, seen: list[ModelEffectRequest]) -> Concrete:
    pid = state.process_id
    in_flight = state.model.request.effect_id if state.model is not None else None
    if op.kind in ("unknown", "host_failed", "respond"):
        right = op.args[-1]
        effect_id = (in_flight or f"{pid}/model/{state.next_model_call_seq}") if right else "bogus"
        if op.kind == "unknown":
            return Concrete("on_model", ModelUnknown(effect_id=effect_id, diagnostic="lost"))
        if op.kind == "host_failed":
            return Concrete("on_model", ModelHostFailed(effect_id=effect_id, message="reducer"))
        response = build_response(op.args[0], op.args[1])
        return Concrete("on_model", ModelResponded(effect_id=effect_id, response=response))
    if op.kind == "call":
        pick, kind, right_id, right_call, advertised = op.args
        running = [x for x in (state.round.slots if state.round else []) if x.status == "running"]
        slot = running[pick % len(running)] if running else None
        effect_id = slot.effect_id if (slot is not None and right_id) else f"{pid}/call/99/0"
        call = slot.call if slot is not None else ToolCall(id="x", name="lookup")
        call_id = call.id if right_call else "wrong-id"
        if kind.startswith("auto"):  # the settlement that fits the slot's target
            delegate = slot is not None and slot.target == "delegate"
            if kind == "auto_ok":
                kind = "delegate_ok" if delegate else "succeeded"
            else:
                kind = "delegate_fail" if delegate else "failed"
        result = ToolResult(
            call_id=call_id, name=call.name, content="r", is_error=kind != "succeeded"
        )
        if kind == "succeeded":
            outcome: Any = CallSettled(
                effect_id=effect_id,
                outcome=Succeeded(result=result, advertised=advertised, for_user={"n": 2**70}),
            )
        elif kind == "failed":
            outcome = CallSettled(effect_id=effect_id, outcome=Failed(result=result))
        elif kind == "rejected":
            outcome = CallSettled(
                effect_id=effect_id, outcome=Rejected(result=result, code="tool.input_invalid")
            )
        elif kind == "delegate_ok":
            child = Output(
                source="model_response", model_response=reply.text("child"), model_calls=1
            )
            outcome = DelegateSettled(effect_id=effect_id, output=child)
        else:
            failure = Failure.of("interaction.limit.model_calls", "child out of budget")
            outcome = DelegateSettled(effect_id=effect_id, failure=failure)
        return Concrete("on_call", outcome)
    if op.kind == "steer":
        return Concrete("steer", op.args[0], STEERS[op.args[1]])
    if op.kind == "resolve":
        match, kind, calls = op.args
        request = state.model.request if state.model is not None else (seen[-1] if seen else None)
        if request is None:
            return Concrete("next")
        if not match:
            request = request.model_copy(update={"effect_id": request.effect_id + "-other"})
        settlement = settle_model_result(request, build_response(kind, calls), request.messages)
        return Concrete("resolve", settlement)
    return Concrete(op.kind)


def apply(machine: InteractionMachine, step: Concrete) -> Any:
    """Run one input; returns a comparable record of what happened."""
    try:
        if step.kind == "next":
            return ("ok", [e.model_dump_json() for e in machine.next_effects()])
        if step.kind == "on_model":
            machine.on_model(step.value)
        elif step.kind == "on_call":
            machine.on_call(step.value)
        elif step.kind == "steer":
            return ("ok", machine.steer(step.value, step.extra))
        elif step.kind == "resolve":
            machine.resolve(step.value)
        elif step.kind == "pause":
            machine.pause()
        elif step.kind == "resume":
            machine.resume()
        elif step.kind == "cancel":
            machine.cancel()
        else:  # pragma: no cover
            raise AssertionError(step.kind)
    except ScopeError as error:
        return ("error", type(error).__name__, error.code)
    return ("ok", None)


def state_json(machine: InteractionMachine) -> str:
    """The state as JSON, read without the deep copy `machine.state` makes (speed only)."""
    return machine._state.model_dump_json()


def restore(machine: InteractionMachine) -> InteractionMachine:
    return InteractionMachine(DEFINITION, InteractionState.model_validate_json(state_json(machine)))


# Bias towards progress: well-formed settlements and "next" are most of the inputs; a
# cancel is rare so that most sequences get deep into rounds, unknowns and completions.
good_respond = st.builds(
    lambda r, c: Op("respond", (r, tuple(c), True)),
    st.sampled_from(["text", "calls", "calls", "calls", "reject", "length_calls"]),
    call_lists,
)
good_call = st.builds(
    lambda pick, kind, adv: Op("call", (pick, kind, True, True, adv)),
    st.integers(0, 3),
    st.sampled_from(["auto_ok", "auto_ok", "auto_fail"]),
    st.sampled_from([(), (), ("hidden",)]),
)
good_resolve = st.builds(
    lambda r, c: Op("resolve", (True, r, tuple(c))), st.sampled_from(["text", "calls"]), call_lists
)
WEIGHTED: dict[str, tuple[int, st.SearchStrategy[Op]]] = {
    "next": (6, st.just(Op("next"))),
    "good_respond": (3, good_respond),
    "good_call": (5, good_call),
    "good_resolve": (1, good_resolve),
    "anything": (4, ops),
    "pause": (1, st.just(Op("pause"))),
    "resume": (2, st.just(Op("resume"))),
    "rarely_cancel": (1, st.integers(0, 9).map(lambda i: Op("cancel") if i == 0 else Op("next"))),
}
CATEGORIES = [name for name, (weight, _) in WEIGHTED.items() for _ in range(weight)]
sequences = st.lists(
    st.sampled_from(CATEGORIES).flatmap(lambda name: WEIGHTED[name][1]),
    min_size=8,
    max_size=32,
)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(sequences)
def test_core_machine_properties_hold_for_random_input_sequences(sequence: list[Op]) -> None:
    machine = InteractionMachine.start(DEFINITION, "root", [Message.user("go")])
    clones: list[InteractionMachine] = []
    seen: list[ModelEffectRequest] = []
    for op in sequence:
        clones.append(restore(machine))  # a restore point at every step
        step = concretise(op, machine.state, seen)
        before = machine.state
        try:
            record = apply(machine, step)
        except Exception as error:  # anything but a ScopeError escaping is a bug
            raise AssertionError(f"{op} raised a non-ScopeError {error!r}") from error
        if record[0] == "error":
            assert machine.state == before, f"{op} raised {record} but changed the state"
        if step.kind == "next":
            for effect_json in record[1]:
                if '"call_model"' in effect_json:
                    seen.append(CallModel.model_validate_json(effect_json).request)
        after = state_json(machine)
        snapshot = machine.snapshot().model_dump_json()
        for clone in clones:
            assert apply(clone, step) == record, op
            assert state_json(clone) == after, op
            assert clone.snapshot().model_dump_json() == snapshot, op
        again = restore(machine)
        assert again.snapshot().model_dump_json() == snapshot
        assert state_json(again) == after
        assert (again.done, again.status) == (machine.done, machine.status)


def test_core_machine_properties_smoke_a_full_valid_run() -> None:
    """The generator can reach completion: a fixed sequence through two rounds and a steer."""
    machine = InteractionMachine.start(DEFINITION, "root", [Message.user("go")])
    seen: list[ModelEffectRequest] = []
    script = [
        Op("next"),
        Op("respond", ("calls", (0, 7, 3), True)),
        Op("next"),
        Op("call", (0, "succeeded", True, True, ("hidden",))),
        Op("steer", ("s1", 0)),
        Op("next"),
        Op("call", (0, "delegate_ok", True, True, ())),
        Op("next"),
        Op("call", (0, "succeeded", True, True, ())),
        Op("next"),
        Op("respond", ("text", (), True)),
    ]
    for op in script:
        record = apply(machine, concretise(op, machine.state, seen))
        assert record[0] == "ok", (op, record)
    assert machine.output is not None and machine.output.text == "final answer"
    assert machine.snapshot().advertised_tools == ("hidden",)
    assert machine.snapshot().applied_signals == ("s1",)
    assert [a.text for a in machine.output.artifacts] == ["child"]

"""The event projection (`interaction/news.py`), pure: machines driven by hand, no driver,
no engine. Each fact is reported once, in the order it happened; a cursor built from a
carried state reports nothing that happened before."""

from __future__ import annotations

from typing import Any

from scope_temporal.chat import Message, ToolResult
from scope_temporal.definition import Definition, Delegate
from scope_temporal.interaction.effects import (
    CallModel,
    CallSettled,
    DelegateSettled,
    ModelHostFailed,
    ModelResponded,
    ModelSettlement,
    ModelUnknown,
    StartDelegate,
    StartToolCall,
    ToolSettlement,
)
from scope_temporal.interaction.events import (
    Event,
    FeedbackEvent,
    ModelSettledEvent,
    TaskProgressEvent,
    ToolSettledEvent,
    ToolStartedEvent,
    UnknownOpenedEvent,
    WaitOpenedEvent,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.news import MAX_TASK_DATA_BYTES, TaskNews, ToolCallNews
from scope_temporal.interaction.snapshot import TaskSnapshot
from scope_temporal.interaction.tool_call import ToolCallMachine
from scope_temporal.models import reply
from scope_temporal.outputs import CompletionCandidate, CompletionDecision, Output
from scope_temporal.tools import InputRequired, Succeeded, Unknown, tool
from scope_temporal.tools.outcome import ProgressSummary


@tool(permission="read")
def look(what: str) -> str:
    """Look."""
    return what


def strict(candidate: CompletionCandidate) -> CompletionDecision:
    if "Root cause:" in candidate.output_text:
        return CompletionDecision.accept()
    return CompletionDecision.reject("Say 'Root cause:'.")


DEFINITION = Definition(
    "news",
    tools=[look],
    delegates=[Delegate("ask", "Ask a helper", definition="helper")],
    max_concurrent_tool_calls=4,
    completion_validator=strict,
)


def kinds(events: list[Event]) -> list[str]:
    return [e.kind for e in events]


def responded(call: CallModel, response: Any) -> ModelResponded:
    return ModelResponded(effect_id=call.request.effect_id, response=response)


def succeeded(start: StartToolCall, content: str) -> CallSettled:
    call = start.request.call
    result = ToolResult(call_id=call.id, name=call.name, content=content)
    return CallSettled(effect_id=start.request.effect_id, outcome=Succeeded(result=result))


def test_a_round_is_reported_call_by_call_and_its_end_once() -> None:
    machine = InteractionMachine.start(DEFINITION, "root", [Message.user("why?")])
    news = machine.news()
    assert news.settled() == []
    [call] = machine.next_effects()
    assert isinstance(call, CallModel)
    assert kinds(news.started([call], ())) == ["model_started"]
    response = reply.tool_calls(
        ("look", {"what": "logs"}),
        ("nope", {}),
        ("ask", {"task": "summarise"}),
        ("look", {"what": "runbook"}),
    )
    outcome = responded(call, response)
    machine.on_model(outcome)
    [settled_model] = news.model(call.request, outcome)
    assert isinstance(settled_model, ModelSettledEvent)
    assert settled_model.message == response.message and settled_model.outcome == "responded"
    # the call refused at admission settles at once, before anything starts
    [refused] = news.settled()
    assert isinstance(refused, ToolSettledEvent) and refused.entry.disposition == "rejected"
    effects = machine.next_effects()
    started = news.started(effects, ())
    assert [e.call.name for e in started if isinstance(e, ToolStartedEvent)] == [
        "look",
        "ask",
        "look",
    ]
    [first, delegate, last] = effects
    assert isinstance(first, StartToolCall) and isinstance(last, StartToolCall)
    assert isinstance(delegate, StartDelegate)
    assert [e.target for e in started if isinstance(e, ToolStartedEvent)][1] == "delegate"
    machine.on_call(succeeded(last, "runbook says restart"))
    assert [e.ref for e in news.settled() if isinstance(e, ToolSettledEvent)] == ["root/1/3"]
    assert news.settled() == []  # once
    machine.on_call(succeeded(first, "3 errors"))
    output = Output(source="model_response", model_calls=1, model_response=reply.text("done"))
    machine.on_call(DelegateSettled(effect_id=delegate.effect_id, output=output))
    # the last call commits the round in the same step: reported from the round's results
    rest = news.settled()
    assert [(e.ref, e.delegate) for e in rest if isinstance(e, ToolSettledEvent)] == [
        ("root/1/0", False),
        ("root/1/2", True),
    ]
    [call2] = machine.next_effects()
    assert isinstance(call2, CallModel)
    news.started([call2], ())
    reply2 = responded(call2, reply.text("Root cause: a leak"))
    machine.on_model(reply2)
    news.model(call2.request, reply2)
    assert kinds(news.settled()) == ["completed"]
    assert news.settled() == []


def test_steers_are_reported_when_applied_and_feedback_when_the_validator_sends_back() -> None:
    machine = InteractionMachine.start(DEFINITION, "root", [Message.user("why?")])
    news = machine.news()
    [call] = machine.next_effects()
    assert isinstance(call, CallModel)
    news.started([call], ())
    machine.on_model(responded(call, reply.text("a leak")))
    [feedback] = news.settled()  # the validator sent the reply back
    assert isinstance(feedback, FeedbackEvent) and feedback.text == "Say 'Root cause:'."
    machine.steer("s1", (Message.user("be brief"),))
    steers = machine.pending_steers
    [call2] = machine.next_effects()
    assert isinstance(call2, CallModel)
    started = news.started([call2], steers)
    assert kinds(started) == ["steer_applied", "model_started"]
    assert news.settled() == []  # the steer's message is no feedback
    machine.on_model(responded(call2, reply.text("Root cause: a leak")))
    assert kinds(news.settled()) == ["completed"]


def test_a_context_reducer_replacing_the_context_is_no_feedback() -> None:
    machine = InteractionMachine.start(DEFINITION, "root", [Message.user("why?")])
    news = machine.news()
    [call] = machine.next_effects()
    assert isinstance(call, CallModel)
    news.started([call], ())
    outcome = ModelResponded(
        effect_id=call.request.effect_id,
        response=reply.text("no idea"),
        messages_sent=(Message.user("(summary) why?"),),
    )
    machine.on_model(outcome)
    assert [e.text for e in news.settled() if isinstance(e, FeedbackEvent)] == [
        "Say 'Root cause:'."
    ]


def test_unknown_model_outcomes_and_their_settlement_by_the_host() -> None:
    machine = InteractionMachine.start(DEFINITION, "root", [Message.user("why?")])
    news = machine.news()
    [call] = machine.next_effects()
    assert isinstance(call, CallModel)
    lost = ModelUnknown(effect_id=call.request.effect_id, diagnostic="worker lost")
    machine.on_model(lost)
    [opened] = news.model(call.request, lost)
    assert isinstance(opened, UnknownOpenedEvent)
    assert (opened.effect_kind, opened.model_call_seq, opened.definition) == ("model", 1, "news")
    settlement = ModelSettlement(
        request=call.request,
        response=reply.text("Root cause: a leak"),
        messages_sent=call.request.messages,
    )
    machine.resolve(settlement)
    events = news.model(call.request, settlement)
    assert kinds(events) == ["unknown_settled", "model_settled"]
    assert isinstance(events[1], ModelSettledEvent) and events[1].settled_by_host
    failed = ModelHostFailed(effect_id=call.request.effect_id, message="reducer failed")
    assert [
        e.outcome for e in news.model(call.request, failed) if isinstance(e, ModelSettledEvent)
    ] == ["host_failed"]


def test_the_end_is_reported_once_failed_or_canceled() -> None:
    failed = InteractionMachine.start(DEFINITION, "a", [Message.user("x")])
    news = failed.news()
    failed.fail("interaction.host.failed", "boom")
    assert kinds(news.settled()) == ["failed"] and news.settled() == []
    canceled = InteractionMachine.start(DEFINITION, "b", [Message.user("x")])
    news = canceled.news()
    canceled.cancel()
    assert kinds(news.settled()) == ["canceled"]


def test_a_cursor_from_a_carried_state_reports_only_what_follows() -> None:
    machine = InteractionMachine.start(DEFINITION, "root", [Message.user("why?")])
    [call] = machine.next_effects()
    assert isinstance(call, CallModel)
    machine.on_model(responded(call, reply.tool_calls(("look", {"what": "a"}), ("nope", {}))))
    [start] = machine.next_effects()
    assert isinstance(start, StartToolCall)
    carried = InteractionMachine(DEFINITION, machine.state)  # as continue-as-new restores it
    news = carried.news()
    assert news.settled() == []  # the refused call was reported by the run before
    carried.on_call(succeeded(start, "a"))
    assert [e.ref for e in news.settled() if isinstance(e, ToolSettledEvent)] == ["root/1/0"]


def tool_call() -> tuple[ToolCallMachine, StartToolCall]:
    machine = InteractionMachine.start(DEFINITION, "root", [Message.user("go")])
    [call] = machine.next_effects()
    assert isinstance(call, CallModel)
    machine.on_model(responded(call, reply.tool_calls(("look", {"what": "x"}))))
    [start] = machine.next_effects()
    assert isinstance(start, StartToolCall)
    return ToolCallMachine.start(start.request), start


def test_a_tool_call_reports_its_wait_and_its_unknown_outcome() -> None:
    machine, start = tool_call()
    news = ToolCallNews()
    assert news.step(machine.snapshot()) == []
    machine.next_attempt()
    machine.on_outcome(InputRequired(prompt="Sure?", response_schema={"type": "boolean"}))
    [opened] = news.step(machine.snapshot())
    assert isinstance(opened, WaitOpenedEvent) and opened.wait.prompt == "Sure?"
    assert news.step(machine.snapshot()) == []
    machine.answer(opened.wait.wait_id, "a1", True)
    assert kinds(news.step(machine.snapshot())) == ["wait_answered"]
    machine.next_attempt()
    machine.on_outcome(Unknown(code="tool.execution_failed", diagnostic="lost"))
    [unknown] = news.step(machine.snapshot())
    assert isinstance(unknown, UnknownOpenedEvent)
    assert unknown.call == start.request.call and unknown.ref == "root/1/0"
    result = ToolResult(call_id=start.request.call.id, name="look", content="x")
    machine.resolve(ToolSettlement(request=start.request, outcome=Succeeded(result=result)))
    assert kinds(news.step(machine.snapshot())) == ["unknown_settled"]


def test_a_wait_closed_by_cancellation_is_not_answered() -> None:
    machine, _ = tool_call()
    news = ToolCallNews()
    machine.next_attempt()
    machine.on_outcome(InputRequired(prompt="Sure?", response_schema={"type": "boolean"}))
    news.step(machine.snapshot())
    machine.cancel()
    assert news.step(machine.snapshot()) == []


def task(status: Any = "running", events: int = 0, data: Any = None) -> TaskSnapshot:
    return TaskSnapshot(
        task_id="root/task/1/0",
        tool="export",
        ref="root/1/0",
        parent_id="root",
        status=status,
        attempt=1,
        progress=ProgressSummary(events=events),
        data=data,
    )


def test_a_task_reports_when_its_status_or_progress_moves_and_keeps_big_results_out() -> None:
    news = TaskNews()
    assert kinds(news.step(task())) == ["task_progress"]
    assert news.step(task()) == []
    assert kinds(news.step(task(events=1))) == ["task_progress"]
    small = news.step(task("completed", 1, {"rows": 3}))
    assert isinstance(small[0], TaskProgressEvent) and small[0].task.data == {"rows": 3}
    big = TaskNews().step(task("completed", 1, "x" * (MAX_TASK_DATA_BYTES + 1)))
    assert isinstance(big[0], TaskProgressEvent) and big[0].task.data is None

"""CONFORMANCE 42, offline: histories checked into tests/histories replay with today's code.

They hold an input wait, a steer, and an unknown tool effect resolved by the host, in
both tool-call mappings; a delegate; a steer during a batch; continue-as-new; an unknown
model call settled by the host; approval waits (denied, approved and remembered, a call
the approver denied), in both mappings; a model call refused with a 429 (a durable timer,
then a new Effect) whose retry was unknown and sent again by the host. A change that would
break running Interactions fails here, without any server. A changed Definition must fail
*as such* (`interaction.definition.changed`), not just somehow.

`before-run-settings/` keeps recordings made before a run recorded its settings (its
local activity then recorded the digest alone; ToolCall inputs carried no payload limit;
continue-as-new carried no settings), and `before-events/` recordings made before the
event stream (no stream polls, no batches sent to the root, inputs without `events_to`):
Interactions started then must still replay. Today's recordings were made by a host
following the event stream: they hold its long polls and the children's batches.
`wire-context/` holds the same runs recorded in the compact wire form of issue 28.2
(`scope_temporal/wire.py` rules 2-6: payloads leave out what their workflow id derives,
digests in base64url, marked defaults): those must replay too.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.workflow import NondeterminismError

from scope_temporal import Definition, ScopeError
from scope_temporal.names import STREAM_POLL, STREAM_PUBLISH_SIGNAL
from scope_temporal.testing.replay import replay_history
from tests.histories.agents import DEFINITIONS

HISTORIES = sorted((Path(__file__).parents[1] / "histories").glob("*.json"))
BEFORE_RUN_SETTINGS = sorted(
    (Path(__file__).parents[1] / "histories" / "before-run-settings").glob("*.json")
)
BEFORE_EVENTS = sorted((Path(__file__).parents[1] / "histories" / "before-events").glob("*.json"))
WIRE_CONTEXT = sorted((Path(__file__).parents[1] / "histories" / "wire-context").glob("*.json"))


def history_named(stem: str) -> Path:
    [path] = [p for p in HISTORIES if p.stem == stem]
    return path


def load(path: Path) -> WorkflowHistory:
    """The file's history under its workflow's id (the file name is the id with "/" as
    "_", plus "_run<k>" for an earlier run of a workflow that continued-as-new)."""
    workflow_id = path.stem.split("_run")[0].replace("_", "/")
    return WorkflowHistory.from_json(workflow_id, path.read_text())


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_c42_checked_in_history_replays(path: Path) -> None:
    result = await replay_history(load(path), DEFINITIONS)
    assert result.replay_failure is None


@pytest.mark.parametrize("path", BEFORE_RUN_SETTINGS, ids=[p.stem for p in BEFORE_RUN_SETTINGS])
async def test_c42_histories_recorded_before_run_settings_still_replay(path: Path) -> None:
    result = await replay_history(load(path), DEFINITIONS)
    assert result.replay_failure is None


@pytest.mark.parametrize("path", BEFORE_EVENTS, ids=[p.stem for p in BEFORE_EVENTS])
async def test_c42_histories_recorded_before_the_event_stream_still_replay(path: Path) -> None:
    result = await replay_history(load(path), DEFINITIONS)
    assert result.replay_failure is None


@pytest.mark.parametrize("path", WIRE_CONTEXT, ids=[p.stem for p in WIRE_CONTEXT])
async def test_c42_histories_recorded_in_the_compact_wire_form_replay(path: Path) -> None:
    result = await replay_history(load(path), DEFINITIONS)
    assert result.replay_failure is None


def _marker_result(path: Path) -> Any:
    """The decoded result of the first local-activity marker of a history, if any."""
    for event in load(path).events:
        if event.HasField("marker_recorded_event_attributes"):
            payload = event.marker_recorded_event_attributes.details["result"].payloads[0]
            return json.loads(payload.data)
    return None


def test_a_run_records_its_settings_and_continue_as_new_carries_them() -> None:
    # what the recording worker served, recorded in the root's history
    settings = _marker_result(history_named("recorded"))
    assert settings == {
        "digest": DEFINITIONS[0].digest,
        "payload_limit": 1_000_000,
        "delegates": [],
    }
    # a delegating Definition records which of its delegates were served
    assert _marker_result(history_named("recorded-delegates"))["delegates"] == ["recorded-helper"]
    # the first run records; a continued run carries them in its input, recording nothing
    assert _marker_result(history_named("recorded-continue-as-new_run1")) is not None
    assert _marker_result(history_named("recorded-continue-as-new")) is None
    # the older recordings hold the digest alone
    [older] = [p for p in BEFORE_RUN_SETTINGS if p.stem == "recorded"]
    assert _marker_result(older) == DEFINITIONS[0].digest


async def test_c42_a_replay_decides_by_the_recorded_settings_not_the_replaying_worker() -> None:
    # A worker that serves no delegate Definition and takes tiny payloads replays the
    # delegating root as recorded: it started its delegate and accepted the steer then.
    root = [d for d in DEFINITIONS if d.name == "recorded-delegates"]
    for stem in ("recorded-delegates", "recorded-steer-batch"):
        definitions = root if stem == "recorded-delegates" else DEFINITIONS
        result = await replay_history(
            load(history_named(stem)), definitions, payload_limit_bytes=10
        )
        assert result.replay_failure is None, stem


async def test_c42_a_changed_definition_is_caught_by_replay() -> None:
    changed = Definition(
        "recorded",
        instructions="You fix services, differently.",
        tools=DEFINITIONS[0].tools,
        max_concurrent_tool_calls=2,
    )
    result = await replay_history(load(history_named("recorded")), [changed])
    failure = result.replay_failure
    assert isinstance(failure, ScopeError), repr(failure)
    assert failure.code == "interaction.definition.changed"
    assert "Definition 'recorded' changed while this Interaction ran" in failure.message
    assert isinstance(failure.__cause__, NondeterminismError)


async def test_c42_a_replay_failure_of_another_cause_is_reported_as_temporal_gives_it() -> None:
    # a history this code cannot have produced: a ToolCall's first events spliced in front
    # of the Interaction's; the replay fails, but not with one of our codes
    history = load(history_named("recorded"))
    tool_history = load(history_named("recorded_tool_2_0"))
    mixed = WorkflowHistory(history.workflow_id, [*tool_history.events[:3], *history.events[3:]])
    result = await replay_history(mixed, DEFINITIONS)
    assert result.replay_failure is not None
    assert not isinstance(result.replay_failure, ScopeError)


def test_histories_are_present() -> None:
    assert sorted(p.stem for p in HISTORIES) == [
        "recorded",
        "recorded-approvals",
        # on_demand: the calls waiting for approval became ToolCall workflows at once
        "recorded-approvals-on-demand",
        "recorded-approvals-on-demand_tool_1_1",
        "recorded-approvals-on-demand_tool_2_0",
        "recorded-approvals-on-demand_tool_3_0",
        "recorded-approvals_tool_1_0",
        "recorded-approvals_tool_1_1",  # no tool_1_2: the approver denied it at admission
        "recorded-approvals_tool_2_0",
        "recorded-approvals_tool_3_0",
        "recorded-continue-as-new",
        "recorded-continue-as-new_run1",
        "recorded-continue-as-new_run2",
        "recorded-delegates",
        "recorded-delegates_delegate_1_0",
        "recorded-delegates_delegate_1_0_tool_1_0",
        "recorded-delegates_tool_1_1",
        "recorded-model-retry",
        "recorded-model-unknown",
        "recorded-on-demand",
        # on_demand: only the calls that needed a life of their own (the approval wait,
        # the unknown outcome) became ToolCall workflows
        "recorded-on-demand_tool_1_1",
        "recorded-on-demand_tool_2_0",
        # a session: its two runs (continue-as-new every 2 turns) and its three turns
        "recorded-session",
        "recorded-session_run1",
        "recorded-session_turn_1",
        "recorded-session_turn_2",
        "recorded-session_turn_2_tool_1_0",
        "recorded-session_turn_3",
        "recorded-steer-batch",
        "recorded-steer-batch_tool_1_0",
        "recorded-steer-batch_tool_1_1",
        "recorded_tool_1_0",
        "recorded_tool_1_1",
        "recorded_tool_2_0",
    ]
    assert sorted(p.stem for p in BEFORE_EVENTS) == sorted(p.stem for p in HISTORIES)
    assert sorted(p.stem for p in BEFORE_RUN_SETTINGS) == [
        "recorded",
        "recorded-continue-as-new",
        "recorded-continue-as-new_run1",
        "recorded-continue-as-new_run2",
        "recorded_tool_1_0",
        "recorded_tool_1_1",
        "recorded_tool_2_0",
    ]


def _events(stem: str) -> list[tuple[str, Any]]:
    """(event type, decoded first payload of its input/result, if any) of a history."""
    found: list[tuple[str, Any]] = []
    for event in load(history_named(stem)).events:
        name = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
        payload = None
        for field in (
            "workflow_execution_completed_event_attributes",
            "activity_task_completed_event_attributes",
        ):
            if event.HasField(field):
                payloads = getattr(event, field).result.payloads
                payload = json.loads(payloads[0].data) if payloads else None
        if event.HasField("workflow_execution_update_accepted_event_attributes"):
            update = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if update.input.name == STREAM_POLL:  # the host following the events
                name = "STREAM_POLL_ACCEPTED"
            payload = json.loads(update.input.args.payloads[0].data)
        found.append((name, payload))
    return found


def _output_text(stem: str) -> str:
    [(_, output)] = [e for e in _events(stem) if e[0] == "WORKFLOW_EXECUTION_COMPLETED"]
    parts = output["model_response"]["message"]["parts"]
    return "".join(p["text"] for p in parts if p["kind"] == "text")


def test_the_recordings_hold_what_they_are_named_for() -> None:
    # a delegate (a child Interaction with its own ToolCall) beside a read
    assert _output_text("recorded-delegates") == "summary: db: degraded / web: degraded"
    # a steer accepted while the batch ran (an approval pending) was applied after it
    assert _output_text("recorded-steer-batch") == "done; last user message: be careful"
    updates = [p for name, p in _events("recorded-steer-batch") if name.endswith("UPDATE_ACCEPTED")]
    assert [u["signal_id"] for u in updates] == ["s1"]
    # three runs of one Interaction: continued-as-new after each model call
    ends = [
        _events(stem)[-1][0]
        for stem in ("recorded-continue-as-new_run1", "recorded-continue-as-new_run2")
    ]
    assert ends == ["WORKFLOW_EXECUTION_CONTINUED_AS_NEW"] * 2
    assert _output_text("recorded-continue-as-new") == "all read"
    # the model call's outcome was unknown; the host settled it with a final reply, which
    # did not complete because the steer was pending: the model was called once more
    events = _events("recorded-model-unknown")
    model_calls = [p for name, p in events if name == "ACTIVITY_TASK_COMPLETED"]
    assert [p["kind"] for p in model_calls] == ["unknown", "responded"]
    settled = [p for name, p in events if name.endswith("UPDATE_ACCEPTED") and "settlement" in p]
    assert [p["settlement"]["kind"] for p in settled] == ["model"]
    assert _output_text("recorded-model-unknown") == "answered after the steer"
    # refused (429): a timer of the Retry-After, then a new Effect, whose outcome was
    # unknown; the host sent it again (a `model_resend` through scope.resolve)
    events = _events("recorded-model-retry")
    model_calls = [p for name, p in events if name == "ACTIVITY_TASK_COMPLETED"]
    assert [p["kind"] for p in model_calls][:3] == ["not_called", "unknown", "responded"]
    assert model_calls[0]["reason"]["status"] == 429
    assert [name for name, _ in events].count("TIMER_STARTED") == 1
    resent = [p for name, p in events if name.endswith("UPDATE_ACCEPTED") and "settlement" in p]
    assert [p["settlement"]["kind"] for p in resent] == ["model_resend"]
    assert resent[0]["settlement"]["request"]["effect_id"] == "recorded-model-retry/model/1/retry/1"


def _root_events(stem: str) -> list[Any]:
    """The events a root's stream received from its other processes (by signal)."""
    received: list[Any] = []
    for event in load(history_named(stem)).events:
        signaled = event.workflow_execution_signaled_event_attributes
        if event.HasField("workflow_execution_signaled_event_attributes") and (
            signaled.signal_name == STREAM_PUBLISH_SIGNAL
        ):
            publish = json.loads(signaled.input.payloads[0].data)
            for item in publish["items"]:
                payload = Payload()
                payload.ParseFromString(base64.b64decode(item["data"]))
                received.append(json.loads(payload.data))
    return received


def test_the_recordings_hold_the_event_stream() -> None:
    # the host followed the events: the root served its long polls
    names = [name for name, _ in _events("recorded")]
    assert "STREAM_POLL_ACCEPTED" in names
    # a ToolCall's wait, and the delegate's steps, reached the root by signal
    assert [e["kind"] for e in _root_events("recorded")][:2] == ["wait_opened", "wait_answered"]
    delegate = [e for e in _root_events("recorded-delegates") if "delegate" in e["process_id"]]
    assert delegate[0]["kind"] == "model_started"
    assert delegate[-1]["kind"] == "completed"


def test_the_approval_recordings_hold_a_denial_a_remembered_approval_and_the_approvers() -> None:
    for stem in ("recorded-approvals", "recorded-approvals-on-demand"):
        [(_, output)] = [e for e in _events(stem) if e[0] == "WORKFLOW_EXECUTION_COMPLETED"]
        assert output["approved_tools"] == ["restart"]
        assert _output_text(stem) == "web and db restarted"
    # the denied call never entered its tool: its ToolCall workflow scheduled no activity
    denied = [name for name, _ in _events("recorded-approvals-on-demand_tool_1_1")]
    assert "ACTIVITY_TASK_SCHEDULED" not in denied
    # approved and remembered: the tool ran, then asked its own question
    answered = [p for name, p in _events("recorded-approvals_tool_2_0") if p and "wait_id" in p]
    assert [(a["wait_id"].rsplit("/", 1)[1], a["response"]) for a in answered] == [
        ("approval", {"decision": "approve", "reason": "backup done", "remember": True}),
        ("1", {"ok": True}),
    ]
    # remembered: the next call's ToolCall asked nothing but its own question
    later = [p for name, p in _events("recorded-approvals_tool_3_0") if p and "wait_id" in p]
    assert [a["wait_id"].rsplit("/", 1)[1] for a in later] == ["1"]


def test_a_recorded_turn_holds_the_transcript_by_reference() -> None:
    started = load(history_named("recorded-session_turn_3")).events[0]
    raw = started.workflow_execution_started_event_attributes.input.payloads[0].data.decode()
    turn = json.loads(raw)
    assert turn["base"]["count"] == 7  # instructions, hello, reply, status, call, result, reply
    assert [m["parts"][0]["text"] for m in turn["messages"]] == ["thanks"]
    assert "hello" not in raw and "You chat about services." not in raw
    assert turn["context"] == {"user": "ada", "session_id": "recorded-session"}

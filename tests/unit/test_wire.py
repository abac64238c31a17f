"""The compact wire form (`scope_temporal.wire`): smaller payloads, the same values.

Every payload of every checked-in history (written in the long form, by earlier
versions) is read, written again in the compact form and read back: the value must be
equal, and the compact bytes never more. That is the rule that keeps old histories and
new payloads interchangeable.
"""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio.api.common.v1 import Payload
from temporalio.converter import WorkflowSerializationContext

from scope_temporal.activities.model_call import ModelResult
from scope_temporal.chat import Message, Options, ToolCall, ToolResult
from scope_temporal.context_refs import ContextRef
from scope_temporal.converter import ScopePayloadConverter
from scope_temporal.interaction.effects import CallSettled, ToolEffectRequest
from scope_temporal.interaction.session_values import SessionSnapshot
from scope_temporal.interaction.tool_call import ToolAttempt
from scope_temporal.outputs import Output
from scope_temporal.payloads import (
    InteractionInput,
    ModelActivityInput,
    Route,
    SessionInput,
    TaskInput,
    ToolActivityInput,
    ToolCallInput,
)
from scope_temporal.tools.outcome import AttemptOutcome, Succeeded
from scope_temporal.wire import MARK, compact

HISTORIES = Path(__file__).resolve().parents[1] / "histories"

STARTED = {
    "scope.Interaction": InteractionInput,
    "scope.ToolCall": ToolCallInput,
    "scope.Session": SessionInput,
    "scope.BackgroundTask": TaskInput,
}
RESULTS = {
    "scope.Interaction": Output,
    "scope.ToolCall": CallSettled,
    "scope.Session": SessionSnapshot,
}
ACTIVITY_INPUTS = {"scope.model": ModelActivityInput, "scope.tool": ToolActivityInput}
ACTIVITY_RESULTS: dict[str, Any] = {"scope.model": ModelResult, "scope.tool": AttemptOutcome}


def _typed_payloads(path: Path) -> list[tuple[Any, dict[str, Any], str]]:
    """(type, payload JSON, id of the workflow it belongs to) of every payload in the
    history whose type we know."""
    events = json.loads(path.read_text())["events"]
    own_type = own_id = ""
    activity_types: dict[str, str] = {}
    found: list[tuple[Any, dict[str, Any], str]] = []
    for event in events:
        kind = event["eventType"]
        belongs_to = own_id
        if kind == "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED":
            a = event["workflowExecutionStartedEventAttributes"]
            own_type, own_id = a["workflowType"]["name"], a["workflowId"]
            belongs_to = own_id
            hint, payloads = STARTED.get(own_type), a.get("input", {}).get("payloads", [])
        elif kind == "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW":
            a = event["workflowExecutionContinuedAsNewEventAttributes"]
            hint, payloads = STARTED.get(own_type), a.get("input", {}).get("payloads", [])
        elif kind == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED":
            a = event["workflowExecutionCompletedEventAttributes"]
            hint, payloads = RESULTS.get(own_type), a.get("result", {}).get("payloads", [])
        elif kind == "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED":
            a = event["startChildWorkflowExecutionInitiatedEventAttributes"]
            hint = STARTED.get(a["workflowType"]["name"])
            payloads = a.get("input", {}).get("payloads", [])
            belongs_to = a["workflowId"]
        elif kind == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED":
            a = event["activityTaskScheduledEventAttributes"]
            activity_types[str(event["eventId"])] = a["activityType"]["name"]
            hint = ACTIVITY_INPUTS.get(a["activityType"]["name"])
            payloads = a.get("input", {}).get("payloads", [])
        elif kind == "EVENT_TYPE_ACTIVITY_TASK_COMPLETED":
            a = event["activityTaskCompletedEventAttributes"]
            name = activity_types.get(str(a["scheduledEventId"]), "")
            hint, payloads = ACTIVITY_RESULTS.get(name), a.get("result", {}).get("payloads", [])
        else:
            continue
        if hint is not None and payloads:
            found.append((hint, payloads[0], belongs_to))
    return found


def _payload(raw: dict[str, Any]) -> Payload:
    metadata = {k: base64.b64decode(v) for k, v in raw.get("metadata", {}).items()}
    return Payload(metadata=metadata, data=base64.b64decode(raw.get("data", "")))


CASES = [
    pytest.param(
        hint,
        raw,
        workflow_id,
        path.parent.name != "wire-context",  # recorded before rule 5: every field written
        id=f"{path.relative_to(HISTORIES).with_suffix('')}-{i}",
    )
    for path in sorted(HISTORIES.rglob("*.json"))
    for i, (hint, raw, workflow_id) in enumerate(_typed_payloads(path))
]


def test_the_checked_in_histories_hold_payloads_of_every_kind() -> None:
    kinds = {hint for param in CASES for hint in [param.values[0]]}
    assert {InteractionInput, ToolCallInput, ModelActivityInput, ToolActivityInput} <= kinds
    assert len(CASES) > 100


@pytest.mark.parametrize(("hint", "raw", "workflow_id", "whole"), CASES)
def test_every_recorded_payload_reads_back_equal_from_its_compact_form(
    hint: Any, raw: dict[str, Any], workflow_id: str, whole: bool
) -> None:
    """Read with the id of the workflow it belongs to (rule 5: what Temporal hands the
    converter in a worker) and written again, with and without that id, it reads back
    equal, never longer with it. A payload recorded before rule 5 holds every field: its
    id puts nothing back, and it reads the same without."""
    converter = ScopePayloadConverter()
    in_context = converter.with_context(_context(workflow_id))
    recorded = _payload(raw)
    value = in_context.from_payloads([recorded], [hint])[0]
    if whole:
        assert converter.from_payloads([recorded], [hint])[0] == value
    for writer in (converter, in_context):
        written = writer.to_payloads([value])[0]
        assert writer.from_payloads([written], [hint])[0] == value
    assert len(in_context.to_payloads([value])[0].data) <= len(recorded.data)


def _context(workflow_id: str) -> WorkflowSerializationContext:
    return WorkflowSerializationContext(namespace="default", workflow_id=workflow_id)


def _request(**changes: Any) -> ToolEffectRequest:
    values: dict[str, Any] = {
        "definition": "d",
        "digest": "0" * 64,
        "process_id": "p/tool/3/1",
        "parent_id": "p",
        "effect_id": "p/call/3/1",
        "ref": "p/3/1",
        "model_call_seq": 3,
        "call_index": 1,
        "call": ToolCall(id="c1", name="lookup", arguments='{"n": 1}'),
        "granted": ("read",),
    }
    return ToolEffectRequest(**{**values, **changes})


def test_identities_a_call_position_derives_are_left_out_and_come_back() -> None:
    request = _request()
    short = compact(request)
    assert not {"process_id", "effect_id", "ref"} & set(short)
    assert short["kind"] == "tool"  # a tag is always written
    assert ToolEffectRequest.model_validate(short) == request


def test_identities_that_differ_from_the_derived_ones_are_kept() -> None:
    submitted = _request(process_id="p", effect_id="p/call/submit/k", ref="p#submit/k")
    short = compact(submitted)
    assert short["process_id"] == "p" and short["ref"] == "p#submit/k"
    assert ToolEffectRequest.model_validate(short) == submitted


def test_defaults_are_left_out_but_tags_stay() -> None:
    value = ToolCallInput(request=_request(), start_to_close=timedelta(seconds=5))
    short = compact(value)
    assert "paused" not in short and "first_outcome" not in short and "approval" not in short
    text = compact(Message.user("hi"))
    assert text == {"role": "user", "parts": [{"kind": "text", "text": "hi"}]}


def test_a_users_model_keeps_pydantics_form() -> None:
    class Mine(BaseModel):
        a: int = 1
        b: str | None = None

    payload = ScopePayloadConverter().to_payloads([Mine()])[0]
    assert json.loads(payload.data) == {"a": 1, "b": None}


def test_routes_naming_the_caller_are_marked_and_come_back() -> None:
    value = ToolCallInput(
        request=_request(),
        start_to_close=timedelta(seconds=5),
        heartbeat=timedelta(seconds=10),
        payload_limit=1_000_000,
        route=Route(events_to="p", report_to="p"),
    )
    short = compact(value)
    assert short[MARK] == 1
    assert not {"events_to", "report_to", "heartbeat", "payload_limit"} & set(short)
    assert ToolCallInput.model_validate(short) == value
    bare = value.model_copy(update={"heartbeat": None, "payload_limit": None})
    short = compact(bare)  # marked, it would have to write two nulls: the `true`s are shorter
    assert MARK not in short and short["events_to"] is True and short["report_to"] is True
    assert ToolCallInput.model_validate(short) == bare
    elsewhere = value.model_copy(update={"route": Route(events_to="root")})
    short = compact(elsewhere)
    assert short[MARK] == 1 and not {"payload_limit", "heartbeat"} & set(short)
    assert short["events_to"] == "root" and short["report_to"] is None  # marked: null written
    assert ToolCallInput.model_validate(short) == elsewhere


def test_an_unmarked_payload_keeps_the_meaning_it_was_written_with() -> None:
    """Payloads written before rule 6 carry no mark: a field left out is its model default
    (None), and `true` names the caller."""
    written_before = {
        "request": compact(_request()),
        "start_to_close": "PT5S",
        "events_to": True,
        "report_to": True,
    }
    value = ToolCallInput.model_validate(written_before)
    assert value.route.events_to == value.route.report_to == "p"
    assert value.heartbeat is None and value.payload_limit is None


def test_a_model_calls_first_effect_id_and_own_stream_are_derived() -> None:
    value = ModelActivityInput(
        definition="d",
        digest="0" * 64,
        process_id="p",
        effect_id="p/model/2",
        model_call_seq=2,
        model="default",
        options=Options(),
        prefix=ContextRef(count=0, digest=""),
        new_messages=(Message.user("hi"),),
        heartbeat=timedelta(seconds=10),
        events_to="p",
    )
    short = compact(value)
    assert short[MARK] == 1 and not {"effect_id", "events_to", "heartbeat"} & set(short)
    assert ModelActivityInput.model_validate(short) == value
    unmarked = {k: v for k, v in short.items() if k != MARK}
    unmarked |= {"events_to": True, "heartbeat": "PT10S"}
    assert ModelActivityInput.model_validate(unmarked) == value
    retry = value.model_copy(update={"effect_id": "p/model/2/retry/1", "attempt": 2})
    assert compact(retry)["effect_id"] == "p/model/2/retry/1"
    assert ModelActivityInput.model_validate(compact(retry)) == retry


# --- issue 28.2: a small call's envelopes, pinned ------------------------------------

W_ROOT = "w-always-af56b8646a1c"
W_CHILD = f"{W_ROOT}/tool/19/1"


def _w_call() -> ToolEffectRequest:
    """W's `lookup(n=55)`, the 2nd call of the 19th model call, as its Interaction asks."""
    return _request(
        definition="w-always",
        digest="de61ff267282507a0c19b4058770942bff941706ae93599b81772129ada2245d",
        process_id=W_CHILD,
        parent_id=W_ROOT,
        effect_id=f"{W_ROOT}/call/19/1",
        ref=f"{W_ROOT}/19/1",
        model_call_seq=19,
        call_index=1,
        call=ToolCall(id="call_2", name="lookup", arguments='{"n": 55}'),
        granted=("exec", "read", "write"),
    )


def _written(value: BaseModel, workflow_id: str) -> bytes:
    """The payload as a worker writes it for `workflow_id`, checked to read back equal."""
    converter = ScopePayloadConverter().with_context(_context(workflow_id))
    payload = converter.to_payloads([value])[0]
    assert converter.from_payloads([payload], [type(value)])[0] == value
    return payload.data


def test_a_small_calls_envelopes_stay_near_its_data() -> None:
    """In `always`, the ToolCall child's input (written twice: the parent's start event and
    the child's own) was 401 bytes in W for a 52-byte call; its activity's input 339
    (344 in `on_demand`), its result 165. What is left: the call, the Definition's name
    and digest, the mark."""
    request = _w_call()
    start = ToolCallInput(
        request=request,
        start_to_close=timedelta(minutes=10, seconds=5),
        heartbeat=timedelta(seconds=10),
        payload_limit=1_000_000,
        route=Route(events_to=W_ROOT, report_to=W_ROOT),
    )
    attempt = ToolActivityInput(
        attempt=ToolAttempt(request=request, entry=1), heartbeat=timedelta(seconds=10)
    )
    result = CallSettled(
        effect_id=request.effect_id,
        outcome=Succeeded(result=ToolResult(call_id="call_2", name="lookup", content="fact 55")),
    )
    assert len(_written(start, W_CHILD)) <= 165
    assert len(_written(attempt, W_CHILD)) <= 180  # in the child
    assert len(_written(attempt, W_ROOT)) <= 215  # `on_demand`: in the Interaction
    assert len(_written(result, W_CHILD)) <= 100
    assert json.loads(_written(start, W_CHILD)) == {
        "request": {
            "definition": "w-always",
            "digest": "3mH_JnKCUHoMGbQFh3CUK_-UFwauk1mbgXchKa2iJF0",
            "call": {"id": "call_2", "name": "lookup", "arguments": '{"n": 55}'},
        },
        MARK: 1,
    }


def test_what_a_workflow_id_derives_stays_when_it_differs() -> None:
    """A hand-started ToolCall (a forged one, in the authority tests) has an id that
    names no call: its request is written whole, and reads back as it was."""
    forged = ToolCallInput(
        request=_w_call().model_copy(update={"process_id": f"{W_ROOT}/forged/1"}),
        start_to_close=timedelta(seconds=30),
    )
    written = json.loads(_written(forged, f"{W_ROOT}/forged/1"))
    assert written["request"]["parent_id"] == W_ROOT
    assert written["request"]["model_call_seq"] == 19
    other_call = json.loads(
        _written(
            ToolCallInput(request=_w_call(), start_to_close=timedelta(seconds=30)),
            f"{W_ROOT}/tool/2/0",
        )
    )
    # each field on its own: the same caller is left out, another position is written
    assert "parent_id" not in other_call["request"]
    assert other_call["request"]["model_call_seq"] == 19
    assert other_call["request"]["call_index"] == 1


def test_a_digest_reads_back_as_hex() -> None:
    short = compact(_w_call())
    assert len(short["digest"]) == 43
    assert ToolEffectRequest.model_validate(short).digest == _w_call().digest
    odd = _w_call().model_copy(update={"digest": "not-a-sha256"})
    assert compact(odd)["digest"] == "not-a-sha256"  # only a lowercase hex SHA-256 shrinks
    assert ToolEffectRequest.model_validate(compact(odd)) == odd

"""Rule 9 of the compact wire form (`scope_temporal.wire`): an input's grouped values
(`route`, an Interaction's `carry`) are written flat, byte for byte as the loose fields
were, and the loose fields every history holds read back into the groups.

`flat_wire_cases.json` was written by the code before the fields were grouped (issue
26.4): for representative inputs and for every input the golden histories hold, the long
form (`model_dump_json`, what size checks measure), the compact payload (with and
without the workflow id it belongs to), and the size the continue-as-new check measured.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ValidationError
from temporalio.contrib.workflow_streams import WorkflowStreamState

from scope_temporal.chat import Message
from scope_temporal.converter import ScopePayloadConverter
from scope_temporal.driver.carry import _carried_size
from scope_temporal.interaction.attention import AttentionReport
from scope_temporal.payloads import (
    InteractionCarry,
    InteractionInput,
    Route,
    RunSettings,
    SteerInput,
    TaskInput,
    ToolCallInput,
)
from scope_temporal.wire import MARK, Flat, Grouped, compact
from tests.unit.test_wire import CASES, _context, _payload, _request

FIXTURES = json.loads((Path(__file__).parent / "flat_wire_cases.json").read_text())
MODELS: dict[str, type[BaseModel]] = {
    m.__name__: m for m in (InteractionInput, ToolCallInput, TaskInput)
}
RECORDED = {param.id: param.values for param in CASES}


def _converter(workflow_id: str | None) -> ScopePayloadConverter:
    converter = ScopePayloadConverter()
    return converter if workflow_id is None else converter.with_context(_context(workflow_id))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    "case", FIXTURES, ids=[f"{c['name']}@{c['workflow_id']}" for c in FIXTURES]
)
def test_grouped_inputs_write_the_bytes_the_loose_fields_wrote(case: dict[str, Any]) -> None:
    model = MODELS[case["type"]]
    writer = _converter(case["workflow_id"])
    if case["name"].startswith("history:"):
        hint, raw, workflow_id, _ = RECORDED[case["name"].removeprefix("history:")]
        value = _converter(workflow_id).from_payloads([_payload(raw)], [hint])[0]
        assert _sha(value.model_dump_json().encode()) == case["long_sha256"]
        assert _sha(writer.to_payloads([value])[0].data) == case["compact_sha256"]
    else:
        value = model.model_validate_json(case["long"])  # the long form of before
        assert value.model_dump_json() == case["long"]
        assert writer.to_payloads([value])[0].data.decode() == case["compact"]
    payload = writer.to_payloads([value])[0]
    assert writer.from_payloads([payload], [model])[0] == value
    if "carried_size" in case:  # continue-as-new decides on it: a replay must decide alike
        assert _carried_size(value) == case["carried_size"]


def test_the_fixtures_cover_every_grouped_field() -> None:
    synthetic = [c for c in FIXTURES if not c["name"].startswith("history:")]
    for holder, group in ((InteractionInput, InteractionCarry), (ToolCallInput, Route)):
        name = holder.__name__
        written = set().union(*(json.loads(c["long"]) for c in synthetic if c["type"] == name))
        assert set(group.model_fields) - holder.WIRE_LATER <= written  # later: not pinned
    assert any(c["name"].startswith("history:") for c in FIXTURES)


def _fixture(name: str, workflow_id: str | None) -> dict[str, Any]:
    [case] = [c for c in FIXTURES if c["name"] == name and c["workflow_id"] == workflow_id]
    return case


def test_the_grouped_values_are_the_loose_fields_of_before() -> None:
    report = AttentionReport(
        process_id="root/tool/1/0", attention="waiting_input", seq=2, source="root/tool/1/0"
    )
    built = InteractionInput(
        definition="ops",
        messages=(Message.user("héllo"),),
        max_model_calls=3,
        capabilities=("read",),
        context={"user": "u1"},
        approved_tools=("echo",),
        track_status=True,
        continue_as_new_every=2,
        carry=InteractionCarry(
            context_sent=4,
            context_digest="cd" * 32,
            settings=RunSettings(
                digest="ab" * 32, payload_limit=1_000_000, delegates=("helper",), attention=True
            ),
            stream=WorkflowStreamState(base_offset=7),
            reports=(report,),
            told=report,
            scope_status="waiting_input",
        ),
        route=Route(events_to="root", report_to="root", session_id="sess"),
        notices=(SteerInput(signal_id="n1", messages=(Message.user("note"),)),),
        instructions_first=True,
    )
    case = _fixture("synthetic:interaction-full", None)
    assert built.model_dump_json() == case["long"]
    assert _converter(None).to_payloads([built])[0].data.decode() == case["compact"]


def test_loose_fields_read_back_into_their_groups() -> None:
    """A long form of before (every field loose), and a loose keyword in code, land in the
    group; a group given whole is taken as it is."""
    loose = InteractionInput.model_validate(
        {"definition": "d", "events_to": "root", "context_sent": 3, "session_id": "s"}
    )
    assert loose.route == Route(events_to="root", session_id="s")
    assert loose.carry == InteractionCarry(context_sent=3)
    task = TaskInput.model_validate_json(_fixture("synthetic:task-1", None)["long"])
    assert task.route == Route(events_to="root", report_to="root", session_id="sess")
    grouped = InteractionInput(definition="d", route=Route(report_to="p"))
    assert InteractionInput.model_validate(grouped.model_dump()) == grouped
    assert grouped.model_dump()["report_to"] == "p" and "route" not in grouped.model_dump()
    with pytest.raises(ValidationError):  # both: the loose one is no field
        InteractionInput.model_validate({"definition": "d", "route": {}, "events_to": "x"})


def test_the_holders_rules_apply_to_a_groups_fields() -> None:
    """Rule 6 leaves out a route naming the caller (marked), rule 3 writes it `true`."""
    value = ToolCallInput(
        request=_request(),
        start_to_close=timedelta(seconds=5),
        route=Route(events_to="p", report_to="p", session_id="s"),
    )
    short = compact(value)
    assert MARK not in short and short["events_to"] is True and short["report_to"] is True
    assert short["session_id"] == "s" and "route" not in short
    assert list(short)[-3:] == ["events_to", "report_to", "session_id"]
    assert ToolCallInput.model_validate(short) == value


def test_a_flat_model_names_only_fields_it_has() -> None:
    class Inner(Grouped):
        a: int = 0

    with pytest.raises(TypeError, match="WIRE_FLAT"):

        class Typo(Flat):
            WIRE_FLAT: ClassVar[tuple[str, ...]] = ("inner", "b")
            inner: Inner = Inner()

    with pytest.raises(TypeError, match="WIRE_FLAT"):

        class Clash(Flat):
            a: int = 0
            inner: Inner = Inner()

"""The data converter scope-temporal layers onto the user's (their codec kept)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    ActivitySerializationContext,
    DataConverter,
    DefaultPayloadConverter,
    PayloadCodec,
    SerializationContext,
    WithSerializationContext,
    WorkflowSerializationContext,
)

from scope_temporal import ConfigurationError
from scope_temporal.chat import ToolCall
from scope_temporal.converter import (
    ScopeDataConverter,
    ScopePayloadConverter,
    scope_data_converter,
)
from scope_temporal.interaction.effects import ToolEffectRequest
from scope_temporal.interaction.tool_call import ToolAttempt
from scope_temporal.payloads import ToolActivityInput
from tests.live import codec_app


def test_a_payload_converter_that_cannot_encode_pydantic_is_refused_with_the_fix() -> None:
    class Custom(DefaultPayloadConverter):
        pass

    with pytest.raises(ConfigurationError, match="PydanticPayloadConverter"):
        scope_data_converter(DataConverter(payload_converter_class=Custom))


def test_the_scope_converter_keeps_codec_and_failure_converter() -> None:
    base = codec_app.data_converter
    layered = scope_data_converter(base)
    assert layered.payload_codec is base.payload_codec
    assert layered.failure_converter_class is base.failure_converter_class
    assert layered.payload_converter_class is ScopePayloadConverter
    assert scope_data_converter(layered) is layered


def _activity(workflow_id: str, activity_id: str) -> ActivitySerializationContext:
    return ActivitySerializationContext(
        namespace="default",
        activity_id=activity_id,
        activity_type="scope.tool",
        activity_task_queue="q",
        workflow_id=workflow_id,
        workflow_type="scope.Interaction",
        is_local=False,
    )


def test_the_converter_is_bound_to_a_workflow_once_not_per_payload() -> None:
    converter = scope_data_converter()
    assert isinstance(converter, ScopeDataConverter)
    first = converter.with_context(_activity("wf-1", "1"))
    assert converter.with_context(_activity("wf-1", "2")) is first
    assert converter.with_context(WorkflowSerializationContext("default", "wf-1")) is first
    other = converter.with_context(_activity("wf-2", "1"))
    assert other is not first
    # bound to its own workflow: the caller comes back from that id (wire rule 5)
    request = ToolEffectRequest(
        definition="d",
        digest="0" * 64,
        process_id="wf-1/tool/3/1",
        parent_id="wf-1",
        effect_id="wf-1/call/3/1",
        ref="wf-1/3/1",
        model_call_seq=3,
        call_index=1,
        call=ToolCall(id="c1", name="lookup", arguments='{"n": 1}'),
    )
    sent = ToolActivityInput(attempt=ToolAttempt(request=request, entry=1))
    payload = first.payload_converter.to_payload(sent)
    assert payload is not None and b"wf-1" not in payload.data
    assert first.payload_converter.from_payload(payload, ToolActivityInput) == sent
    assert other.payload_converter.from_payload(payload, ToolActivityInput) != sent


def test_a_codec_that_takes_a_context_is_bound_per_payload_as_temporal_does() -> None:
    class ContextCodec(PayloadCodec, WithSerializationContext):
        def __init__(self, workflow: str = "") -> None:
            self.workflow = workflow

        async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
            return list(payloads)

        async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
            return list(payloads)

        def with_context(self, context: SerializationContext) -> ContextCodec:
            return ContextCodec(f"{getattr(context, 'workflow_id', '')}")

    converter = scope_data_converter(DataConverter(payload_codec=ContextCodec()))
    one = converter.with_context(_activity("wf-1", "1"))
    two = converter.with_context(_activity("wf-1", "2"))
    assert one is not two
    assert isinstance(one.payload_codec, ContextCodec) and one.payload_codec.workflow == "wf-1"


def test_a_bound_payload_converter_keeps_the_type_adapters_already_built() -> None:
    """Building a TypeAdapter of an activity's outcome (a union) takes milliseconds: a
    converter bound to a workflow must reuse the adapters, not start with none (as a
    `copy.copy` does, through Temporal's pickling hooks)."""
    converter = ScopePayloadConverter()
    one = converter.with_context(WorkflowSerializationContext("default", "wf-1"))
    assert converter.with_context(WorkflowSerializationContext("default", "wf-1")) is one
    two = converter.with_context(WorkflowSerializationContext("default", "wf-2"))
    json_plain = b"json/plain"
    caches = {id(c.converters[json_plain]._type_adapter) for c in (converter, one, two)}  # type: ignore[attr-defined]
    assert len(caches) == 1

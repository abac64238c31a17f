"""How the activity side reads the input of `scope.model` and `scope.tool`.

The compact wire form leaves out of these inputs what the id of the workflow that
scheduled them derives (`scope_temporal.wire`, rule 5), so they are read with that id.
The activities take the raw payload and read it here rather than let the SDK do it: with
external storage configured, Temporal's activity worker copies its data converter in a
way that drops the serialization context (`dataclasses.replace` builds a fresh payload
converter), and the payload would not read back.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel
from temporalio import activity
from temporalio.common import RawValue
from temporalio.converter import WithSerializationContext, WorkflowSerializationContext

M = TypeVar("M", bound=BaseModel)


def read_activity_input(raw: RawValue, model: type[M]) -> M:
    """The running activity's input as `model`, read with the scheduling workflow's id.

    Raises:
        ValueError: it is not a valid `model` (pydantic's ValidationError).
    """
    info = activity.info()
    converter = activity.payload_converter()
    if isinstance(converter, WithSerializationContext):
        context = WorkflowSerializationContext(info.namespace, info.workflow_id or "")
        converter = converter.with_context(context)
    value = converter.from_payload(raw.payload, model)
    assert isinstance(value, model)
    return value


__all__ = ["read_activity_input"]

"""The data converter scope-temporal needs, layered onto the one the user configured.

Every payload scope-temporal sends is a pydantic model, so the converter's *payload
converter* must be pydantic's JSON one. Everything else a user configured on their client
is theirs and is kept: the payload codec (e.g. encryption or compression), the failure
converter (e.g. `DefaultFailureConverterWithEncodedAttributes`, which moves failure
messages into encoded attributes), and external storage. Dropping them would put prompts,
tool arguments and results into the server's history in plaintext.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Mapping
from typing import Any, ClassVar, Self, TypeGuard, TypeVar

from pydantic import BaseModel
from pydantic_core import to_json
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.contrib.pydantic import (
    PydanticJSONPlainPayloadConverter,
    PydanticPayloadConverter,
)
from temporalio.converter import (
    DataConverter,
    DefaultPayloadConverter,
    EncodingPayloadConverter,
    ExternalStorage,
    SerializationContext,
    StorageDriver,
    WithSerializationContext,
    WorkflowSerializationContext,
)

from scope_temporal.errors import ConfigurationError
from scope_temporal.wire import Derived, compact, expand

M = TypeVar("M", bound=BaseModel)

BOUND_CACHE_SIZE = 4096
"""How many workflows' bound converters a converter keeps (then it starts over)."""

DEFAULT_OFFLOAD_THRESHOLD_BYTES = 256 * 1024
"""Payloads over this size go to external storage when a `storage=` driver is given."""


def _ours(value: object) -> TypeGuard[BaseModel]:
    return isinstance(value, BaseModel) and type(value).__module__.startswith("scope_temporal.")


class _CompactJSON(PydanticJSONPlainPayloadConverter, WithSerializationContext):
    """Pydantic's JSON payloads, scope-temporal's own models in the compact form; given
    the workflow a payload belongs to (Temporal's serialization context), what its id
    derives is left out and put back (`scope_temporal.wire`, rule 5)."""

    _workflow_id: str | None = None

    def with_context(self, context: SerializationContext) -> Self:
        workflow_id = getattr(context, "workflow_id", None)
        if workflow_id == self._workflow_id:
            return self
        # not copy.copy: Temporal's pickling hooks give a copy an empty type adapter
        # cache, and a TypeAdapter of a union (an activity's outcome) costs ~2 ms to build
        bound = object.__new__(type(self))
        bound.__dict__.update(self.__dict__)
        bound._workflow_id = workflow_id
        return bound

    def to_payload(self, value: object) -> Payload | None:
        if not _ours(value):
            return super().to_payload(value)
        data = to_json(compact(value, self._workflow_id))
        return Payload(metadata={"encoding": self.encoding.encode()}, data=data)

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> Any:
        if (
            self._workflow_id is None
            or not isinstance(type_hint, type)
            or not issubclass(type_hint, Derived)
            or type_hint.WIRE_CONTEXT is None
        ):
            return super().from_payload(payload, type_hint)
        data = expand(type_hint, json.loads(payload.data), self._workflow_id)
        return super().from_payload(Payload(data=to_json(data)), type_hint)


class ScopePayloadConverter(PydanticPayloadConverter):
    """Temporal's pydantic payload converter, writing scope-temporal's own payloads in
    the compact form (module docstring); it reads both forms."""

    _built: ClassVar[dict[type, Mapping[bytes, EncodingPayloadConverter]]] = {}
    """The converters the first instance of each class built, shared by every later one."""
    _bound: dict[str | None, Self]
    """This converter bound to each workflow id it was asked for (`with_context`)."""

    def __init__(self) -> None:
        # Temporal's DataConverter.with_context builds a new payload converter for every
        # payload it converts with a context, and drops it: sharing the converters (they
        # hold no state but their type adapter cache) takes that from 25 to 15 us a call.
        built = ScopePayloadConverter._built.get(type(self))
        if built is not None:
            self.converters = built
            self._bound = {}
            return
        super().__init__()
        self._set_converters(
            *(
                _CompactJSON() if isinstance(c, PydanticJSONPlainPayloadConverter) else c
                for c in self.converters.values()
            )
        )
        ScopePayloadConverter._built[type(self)] = self.converters
        self._bound = {}

    def with_context(self, context: SerializationContext) -> Self:
        """This converter for payloads of the workflow `context` names: one per workflow
        id (at most `BOUND_CACHE_SIZE`), sharing the converters (the base class builds
        every one anew, for every payload a workflow converts)."""
        workflow_id = getattr(context, "workflow_id", None)
        bound = self._bound.get(workflow_id)
        if bound is None:
            if len(self._bound) >= BOUND_CACHE_SIZE:
                self._bound.clear()
            bound = self._bound[workflow_id] = self._bind(context)
        return bound

    def _bind(self, context: SerializationContext) -> Self:
        converters = {
            key: c.with_context(context) if isinstance(c, WithSerializationContext) else c
            for key, c in self.converters.items()
        }
        if all(converters[key] is c for key, c in self.converters.items()):
            return self
        bound = copy.copy(self)
        bound.converters = converters
        return bound


@dataclasses.dataclass(frozen=True)
class ScopeDataConverter(DataConverter):
    """Temporal's data converter, bound to a workflow once rather than per payload.

    Temporal binds its converter to a payload's serialization context for every payload
    it converts (`with_context`: a new data converter and payload converter each time).
    Ours depends on the context's workflow id alone, so while the codec, the failure
    converter and external storage take no context, the converter bound to a workflow is
    kept and given again (at most `BOUND_CACHE_SIZE` workflows). Any of them taking a
    context: bound per payload, as Temporal does.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "_bound", {})

    def with_context(self, context: SerializationContext) -> Self:
        contextual = (self.payload_codec, self.failure_converter, self.external_storage)
        if any(isinstance(part, WithSerializationContext) for part in contextual):
            return super().with_context(context)
        bound: dict[str | None, Self] = self.__dict__["_bound"]
        workflow_id = getattr(context, "workflow_id", None)
        converter = bound.get(workflow_id)
        if converter is None:
            if len(bound) >= BOUND_CACHE_SIZE:
                bound.clear()
            converter = bound[workflow_id] = super().with_context(context)
        return converter


def scope_data_converter(
    base: DataConverter | None = None,
    *,
    storage: StorageDriver | None = None,
    offload_threshold_bytes: int = DEFAULT_OFFLOAD_THRESHOLD_BYTES,
) -> DataConverter:
    """`base` with pydantic JSON payloads (and `storage`, if given) added.

    Args:
        base: the converter the user configured (default: Temporal's default one). Its
            payload codec, failure converter and external storage are kept as they are.
        storage: offload payloads over `offload_threshold_bytes` to this driver; it
            replaces any external storage `base` carries. None keeps `base`'s.
        offload_threshold_bytes: the size from which payloads are offloaded.

    Raises:
        ConfigurationError: `base` has a payload converter that is neither Temporal's
            default nor a `PydanticPayloadConverter` (subclass it from that class instead).
    """
    base = base or DataConverter.default
    converter_class = base.payload_converter_class
    if converter_class in (DefaultPayloadConverter, PydanticPayloadConverter):
        converter_class = ScopePayloadConverter
    elif not issubclass(converter_class, PydanticPayloadConverter):
        raise ConfigurationError(
            f"The client's payload converter {converter_class.__qualname__} cannot encode "
            "scope-temporal's pydantic payloads. Keep Temporal's default payload converter "
            "(scope-temporal adds pydantic's), or subclass "
            "temporalio.contrib.pydantic.PydanticPayloadConverter. Encryption and compression "
            "belong in payload_codec, which is kept."
        )
    external = base.external_storage
    if storage is not None:
        external = ExternalStorage(
            drivers=[storage], payload_size_threshold=offload_threshold_bytes
        )
    if (
        isinstance(base, ScopeDataConverter)
        and converter_class is base.payload_converter_class
        and external is base.external_storage
    ):
        return base
    if type(base) is not DataConverter:  # a class of the user's own: kept, bound per payload
        return dataclasses.replace(
            base, payload_converter_class=converter_class, external_storage=external
        )
    return ScopeDataConverter(
        payload_converter_class=converter_class,
        payload_codec=base.payload_codec,
        failure_converter_class=base.failure_converter_class,
        external_storage=external,
    )


def with_scope_converter(client: Client, storage: StorageDriver | None = None) -> Client:
    """The same connection, its data converter layered by `scope_data_converter`.

    Returns `client` itself when its converter already is what scope-temporal needs.
    """
    converter = scope_data_converter(client.data_converter, storage=storage)
    if converter is client.data_converter:
        return client
    config = client.config()
    config["data_converter"] = converter
    return Client(**config)


def read_recorded(payload: Payload, model: type[M], workflow_id: str) -> M:
    """A payload of scope-temporal's recorded in `workflow_id`'s history (its input or
    result, or an input or result of its activities), read as `model` outside a worker:
    what the id derives is put back (`scope_temporal.wire`, rule 5). The payload must be
    decoded already (no codec runs here).

    Raises:
        ValueError: it is not a valid `model` (pydantic's ValidationError).
    """
    context = WorkflowSerializationContext(namespace="", workflow_id=workflow_id)
    value = ScopePayloadConverter().with_context(context).from_payload(payload, model)
    assert isinstance(value, model)
    return value


def is_decode_failure(error: BaseException) -> bool:
    """Whether `error` is a payload that could not be decoded (a codec the reader lacks)."""
    text = str(error)
    return "payload encoding" in text.lower() or "Failed decoding" in text


__all__ = [
    "BOUND_CACHE_SIZE",
    "DEFAULT_OFFLOAD_THRESHOLD_BYTES",
    "ScopeDataConverter",
    "ScopePayloadConverter",
    "is_decode_failure",
    "read_recorded",
    "scope_data_converter",
    "with_scope_converter",
]

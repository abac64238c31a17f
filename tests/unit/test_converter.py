"""The data converter scope-temporal layers onto the user's (their codec kept)."""

from __future__ import annotations

import pytest
from temporalio.converter import DataConverter, DefaultPayloadConverter

from scope_temporal import ConfigurationError
from scope_temporal.converter import ScopePayloadConverter, scope_data_converter
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

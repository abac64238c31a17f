"""A real encryption codec (AES-GCM from `cryptography`) for the encryption tests.

The CLI loads it the way a user's app would: `--data-converter
tests.live.codec_app:data_converter` (or `SCOPE_DATA_CONVERTER`). The key is fixed so that a
CLI subprocess decodes what the test's worker encoded; a real deployment reads it from a
secret store.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    PayloadCodec,
)

ENCODING = b"binary/encrypted"
KEY_ID = "test-key-1"
_KEY = bytes(range(32))


class AesGcmCodec(PayloadCodec):
    """Encrypts each whole payload (data and metadata) with AES-256-GCM."""

    def __init__(self, key: bytes = _KEY, key_id: str = KEY_ID) -> None:
        self._aead = AESGCM(key)
        self._key_id = key_id

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [
            Payload(
                metadata={"encoding": ENCODING, "encryption-key-id": self._key_id.encode()},
                data=self._encrypt(p.SerializeToString()),
            )
            for p in payloads
        ]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        decoded: list[Payload] = []
        for payload in payloads:
            if payload.metadata.get("encoding") != ENCODING:
                decoded.append(payload)  # e.g. a search attribute: never encoded
                continue
            key_id = payload.metadata.get("encryption-key-id", b"").decode()
            if key_id != self._key_id:
                raise ValueError(f"payload was encrypted with key {key_id!r}, not {self._key_id!r}")
            inner = Payload()
            inner.ParseFromString(self._decrypt(payload.data))
            decoded.append(inner)
        return decoded

    def _encrypt(self, data: bytes) -> bytes:
        nonce = os.urandom(12)
        return nonce + self._aead.encrypt(nonce, data, None)

    def _decrypt(self, data: bytes) -> bytes:
        return self._aead.decrypt(data[:12], data[12:], None)


data_converter = DataConverter(
    payload_codec=AesGcmCodec(),
    failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
)
"""What a user's app module exposes: their converter, codec and failure converter."""

"""Offload large payloads to external storage instead of refusing them.

Temporal keeps every payload in history, and a blob over the server's limit fails the
command that carries it. With external storage configured, the data converter writes
payloads over a threshold to a store and puts only a small reference in history; the
worker reads them back transparently. `DirectoryStorage` stores them as files (one
machine, or a shared volume); on a cluster use an object-store driver such as
`temporalio.contrib.gcp.gcsdriver`. Uses Temporal's (experimental) External Storage API.

A long Interaction's continue-as-new writes its whole state each time, and each state is
the one before plus what the runs between added. `DirectoryStorage` therefore stores a
large payload as pieces cut where its content says (content-defined chunking), each
piece a file named by its sha256, plus the list of their digests: a piece an earlier state already
stored is not written again, so the store grows with what is new, not with the square of
the rounds. The cuts fall after a JSON object in a list (`},{` or `}]`) whose bytes (from
the place before) hash to a chosen value, or, in a piece already 64 KB long, at the next
such place; so an insertion moves only the cuts around it. A payload with no such place
(not JSON, or encrypted by a codec) is stored whole, as before.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

PIECES_FROM_BYTES = 64 * 1024
"""Payloads from this size are stored as pieces; smaller ones whole."""

_MIN_PIECE = 1024
_FULL_PIECE = 64 * 1024  # a piece this big ends at the next place (large messages)
_CUT_ONE_IN = 64  # of the candidate places past _MIN_PIECE: pieces of about 5-20 KB
_PLACE = re.compile(rb"\}(?:,\{|\])")  # the end of an object in a list


def pieces(data: bytes) -> Iterator[bytes]:
    """`data` cut at content-defined places (module docstring); joined, they are `data`."""
    start = place = 0
    for match in _PLACE.finditer(data):
        cut, ended = match.start() + 1, place  # after the `}`; where its object began
        place = cut
        if start == 0:  # the envelope, which changes with every payload, stands alone
            yield data[:cut]
            start = cut
            continue
        if cut - start < _MIN_PIECE:
            continue
        # the hash of the object that ends here: its own bytes decide, wherever it is
        if cut - start >= _FULL_PIECE or zlib.crc32(data[ended:cut]) % _CUT_ONE_IN == 0:
            yield data[start:cut]
            start = cut
    yield data[start:]


class DirectoryStorage(StorageDriver):
    """Stores each payload as files named by their sha256 (content-addressed, idempotent):
    a small payload as one file, a large one as pieces and a list of them (module
    docstring). It reads payloads stored whole by earlier releases too.

    Args:
        root: the directory; every worker and client must see the same one. It is
            created when the first payload is stored.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def name(self) -> str:
        return "scope-directory"

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        return [await asyncio.to_thread(self._write, p) for p in payloads]

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        return [await asyncio.to_thread(self._read, c) for c in claims]

    def _write(self, payload: Payload) -> StorageDriverClaim:
        data = payload.SerializeToString()
        digest = hashlib.sha256(data).hexdigest()
        cut = list(pieces(data)) if len(data) >= PIECES_FROM_BYTES else [data]
        if len(cut) == 1:
            self._put(digest, data)
            return StorageDriverClaim(claim_data={"sha256": digest})
        names = [self._put(hashlib.sha256(piece).hexdigest(), piece) for piece in cut]
        listing = b"".join(bytes.fromhex(name) for name in [digest, *names])  # 32 bytes each
        listed = hashlib.sha256(listing).hexdigest()
        self._put(listed, listing)
        return StorageDriverClaim(claim_data={"pieces": listed})

    def _put(self, digest: str, data: bytes) -> str:
        path = self.root / digest
        if not path.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".partial")
            partial.write_bytes(data)
            partial.replace(path)
        return digest

    def _get(self, digest: str) -> bytes:
        data = (self.root / digest).read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise ValueError(f"stored payload {digest} is corrupt")
        return data

    def _read(self, claim: StorageDriverClaim) -> Payload:
        listed = claim.claim_data.get("pieces")
        if listed is None:
            data = self._get(claim.claim_data["sha256"])
        else:
            listing = self._get(listed)
            whole, *names = (listing[i : i + 32].hex() for i in range(0, len(listing), 32))
            data = b"".join(self._get(name) for name in names)
            if hashlib.sha256(data).hexdigest() != whole:
                raise ValueError(f"stored payload {whole} (pieces {listed}) is corrupt")
        payload = Payload()
        payload.ParseFromString(data)
        return payload


__all__ = ["PIECES_FROM_BYTES", "DirectoryStorage", "pieces"]

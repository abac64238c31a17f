"""Offload large payloads to external storage instead of refusing them.

Temporal keeps every payload in history, and a blob over the server's limit fails the
command that carries it. With external storage configured, the data converter writes
payloads over a threshold to a store and puts only a small reference in history; the
worker reads them back transparently. `DirectoryStorage` stores them as files (one
machine, or a shared volume); on a cluster use an object-store driver such as
`temporalio.contrib.gcp.gcsdriver`. Uses Temporal's (experimental) External Storage API.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)


class DirectoryStorage(StorageDriver):
    """Stores each payload as a file named by its sha256 (content-addressed, idempotent).

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
        path = self.root / digest
        if not path.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".partial")
            partial.write_bytes(data)
            partial.replace(path)
        return StorageDriverClaim(claim_data={"sha256": digest})

    def _read(self, claim: StorageDriverClaim) -> Payload:
        digest = claim.claim_data["sha256"]
        data = (self.root / digest).read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise ValueError(f"stored payload {digest} is corrupt")
        payload = Payload()
        payload.ParseFromString(data)
        return payload

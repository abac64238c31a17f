"""Where the bytes of progress updates live: outside the workflow history.

`OutputMaterializer` is the interface (implement it over a database or an object store);
`LocalFileMaterializer` keeps each task's output in a directory, `MemoryMaterializer` in
this process. Both steps are idempotent per task id and event id, so a run recovered on
another worker that replays its updates stores each event once:

1. `reserve(task_id, update)` claims the event id for these bytes: `new` (store it),
   `duplicate` (already stored with the same bytes) or `conflict` (other bytes).
2. `append(task_id, update)` stores a reserved event and returns its position.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, Protocol
from urllib.parse import quote

from scope_temporal.background.progress import ProgressUpdate, StoredEvent

Reservation = Literal["new", "duplicate", "conflict"]


class OutputMaterializer(Protocol):
    """Stores the progress output of background tasks (see the module docstring)."""

    async def reserve(self, task_id: str, update: ProgressUpdate) -> Reservation:
        """Claim `update.event_id` for `update`'s bytes; never stores a second copy."""
        ...

    async def append(self, task_id: str, update: ProgressUpdate) -> int:
        """Store a reserved event; returns its 1-based position (the same on a repeat)."""
        ...

    async def read(self, task_id: str, *, after: int = 0, limit: int = 100) -> list[StoredEvent]:
        """Stored events with position > `after`, oldest first, at most `limit`."""
        ...

    async def count(self, task_id: str) -> int:
        """How many events of the task are stored."""
        ...


class _Index:
    """The events of one task, as read from (or kept in) one place."""

    def __init__(self) -> None:
        self.digests: dict[str, str] = {}
        """Reserved event ids -> digest."""
        self.positions: dict[str, int] = {}
        """Stored event ids -> position."""
        self.events: list[StoredEvent] = []

    def reserve(self, update: ProgressUpdate) -> Reservation:
        known = self.digests.get(update.event_id)
        if known is not None and known != update.digest:
            return "conflict"
        if update.event_id in self.positions:
            return "duplicate"
        return "new"

    def add(self, update: ProgressUpdate) -> StoredEvent:
        event = StoredEvent(seq=len(self.events) + 1, update=update)
        self.digests[update.event_id] = update.digest
        self.positions[update.event_id] = event.seq
        self.events.append(event)
        return event

    def page(self, after: int, limit: int) -> list[StoredEvent]:
        return self.events[max(after, 0) : max(after, 0) + max(limit, 0)]


class MemoryMaterializer:
    """Keeps task output in this process (tests, `LocalRunner`)."""

    def __init__(self) -> None:
        self._tasks: dict[str, _Index] = {}

    def _index(self, task_id: str) -> _Index:
        return self._tasks.setdefault(task_id, _Index())

    async def reserve(self, task_id: str, update: ProgressUpdate) -> Reservation:
        index = self._index(task_id)
        verdict = index.reserve(update)
        if verdict == "new":
            index.digests[update.event_id] = update.digest
        return verdict

    async def append(self, task_id: str, update: ProgressUpdate) -> int:
        index = self._index(task_id)
        if update.event_id in index.positions:
            return index.positions[update.event_id]
        return index.add(update).seq

    async def read(self, task_id: str, *, after: int = 0, limit: int = 100) -> list[StoredEvent]:
        return self._index(task_id).page(after, limit)

    async def count(self, task_id: str) -> int:
        return len(self._index(task_id).events)


class LocalFileMaterializer:
    """Keeps each task's output in `<directory>/<task id, quoted>/`.

    `reserved.jsonl` holds the claimed event ids with their digests, `events.jsonl` the
    stored events in order; writers take an exclusive lock, so workers sharing the
    directory (one machine, or a shared file system) agree. Every worker that may run a
    task's attempts, and every worker answering `task_output`, must see the directory.

    Args:
        directory: created on first use.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _folder(self, task_id: str) -> Path:
        return self.directory / quote(task_id, safe="")

    async def reserve(self, task_id: str, update: ProgressUpdate) -> Reservation:
        return await asyncio.to_thread(self._reserve, task_id, update)

    async def append(self, task_id: str, update: ProgressUpdate) -> int:
        return await asyncio.to_thread(self._append, task_id, update)

    async def read(self, task_id: str, *, after: int = 0, limit: int = 100) -> list[StoredEvent]:
        return await asyncio.to_thread(lambda: self._load(task_id).page(after, limit))

    async def count(self, task_id: str) -> int:
        return await asyncio.to_thread(lambda: len(self._load(task_id).events))

    def _reserve(self, task_id: str, update: ProgressUpdate) -> Reservation:
        with self._locked(task_id) as folder:
            index = self._load(task_id)
            verdict = index.reserve(update)
            if verdict == "new" and update.event_id not in index.digests:
                line = json.dumps({"event_id": update.event_id, "digest": update.digest})
                with (folder / "reserved.jsonl").open("a") as f:
                    f.write(line + "\n")
            return verdict

    def _append(self, task_id: str, update: ProgressUpdate) -> int:
        with self._locked(task_id) as folder:
            index = self._load(task_id)
            known = index.positions.get(update.event_id)
            if known is not None:
                return known
            event = index.add(update)
            with (folder / "events.jsonl").open("a") as f:
                f.write(event.model_dump_json() + "\n")
            return event.seq

    def _load(self, task_id: str) -> _Index:
        folder = self._folder(task_id)
        index = _Index()
        for line in _lines(folder / "events.jsonl"):
            index.add(StoredEvent.model_validate_json(line).update)
        for line in _lines(folder / "reserved.jsonl"):
            claim = json.loads(line)
            index.digests.setdefault(claim["event_id"], claim["digest"])
        return index

    @contextmanager
    def _locked(self, task_id: str) -> Iterator[Path]:
        folder = self._folder(task_id)
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / ".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield folder
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _lines(path: Path) -> list[str]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [line for line in text.splitlines() if line.strip()]


__all__ = ["LocalFileMaterializer", "MemoryMaterializer", "OutputMaterializer", "Reservation"]

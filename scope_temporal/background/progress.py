"""Progress updates a background run publishes, and what the workflow keeps of them.

A run publishes `ProgressUpdate`s (event id, kind, data, metadata). Their bytes are stored
outside the workflow history by an `OutputMaterializer`; the workflow keeps only a
`ProgressSummary` (a count and the latest event's headline). An event id is shown once:
the same id with the same bytes is a duplicate (a recovered run replays its updates), the
same id with other bytes is a conflict that fails the task.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from scope_temporal.tools.outcome import ProgressSummary
from scope_temporal.tools.output import json_form

MAX_DATA_BYTES = 256 * 1024
"""The largest `data` of one update, as JSON."""
MAX_KIND_BYTES = 128
"""The longest `kind` of one update, UTF-8."""
MAX_METADATA_ENTRIES = 32
MAX_METADATA_ENTRY_BYTES = 1024
"""The largest key + value of one metadata entry, UTF-8."""
_HEADLINE_CHARS = 200


class ProgressUpdate(BaseModel):
    """One progress event of a background run.

    Raises:
        pydantic.ValidationError: (a ValueError) `kind` is empty or over 128 bytes, `data`
            is not JSON or over 256 KiB, or
            `metadata` has more than 32 entries or an entry over 1 KiB.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_id: str
    """Stable per event: a recovered run must replay its updates with the same ids."""
    kind: str = "progress"
    """What the event is (e.g. `progress`, `log`, `artifact`)."""
    data: Any = None
    """Any JSON value, at most 256 KiB."""
    metadata: dict[str, str] = {}
    """At most 32 entries of at most 1 KiB each. `message`, if present, is the headline
    hosts show (otherwise `data` when it is a string)."""

    @field_validator("event_id")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value:
            raise ValueError("a progress update needs a non-empty event_id")
        return value

    @field_validator("kind")
    @classmethod
    def _short_kind(cls, value: str) -> str:
        size = len(value.encode())
        if not value or size > MAX_KIND_BYTES:
            raise ValueError(
                f"progress kind {value[:40]!r} is {size} bytes; give a short non-empty name "
                f"(at most {MAX_KIND_BYTES} bytes, e.g. 'progress', 'log', 'artifact')"
            )
        return value

    @field_validator("data", mode="after")
    @classmethod
    def _json_data(cls, value: Any) -> Any:
        data = json_form(value)
        size = len(json.dumps(data, ensure_ascii=False).encode())
        if size > MAX_DATA_BYTES:
            raise ValueError(f"progress data is {size} bytes; the limit is {MAX_DATA_BYTES}")
        return data

    @model_validator(mode="after")
    def _small_metadata(self) -> ProgressUpdate:
        if len(self.metadata) > MAX_METADATA_ENTRIES:
            raise ValueError(
                f"progress metadata has {len(self.metadata)} entries; "
                f"the limit is {MAX_METADATA_ENTRIES}"
            )
        for key, value in self.metadata.items():
            if len(key.encode()) + len(value.encode()) > MAX_METADATA_ENTRY_BYTES:
                raise ValueError(
                    f"progress metadata entry {key!r} is over {MAX_METADATA_ENTRY_BYTES} bytes"
                )
        return self

    @property
    def digest(self) -> str:
        """Identifies the event's bytes: equal ids with other digests conflict."""
        body = json.dumps(
            [self.kind, self.data, self.metadata], sort_keys=True, separators=(",", ":")
        )
        return hashlib.sha256(body.encode()).hexdigest()

    @property
    def headline(self) -> str | None:
        """A short text for people: `metadata["message"]`, else `data` if it is a string."""
        text = self.metadata.get("message")
        if text is None and isinstance(self.data, str):
            text = self.data
        return None if text is None else text[:_HEADLINE_CHARS]


class StoredEvent(BaseModel):
    """A materialized update: its position in the task's output, 1-based."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int
    update: ProgressUpdate


def summary_after(summary: ProgressSummary, event: StoredEvent) -> ProgressSummary:
    """`summary` once `event` has been stored (an older event changes nothing)."""
    if event.seq < summary.events:
        return summary
    return ProgressSummary(
        events=event.seq,
        last_event_id=event.update.event_id,
        last_kind=event.update.kind,
        last_message=event.update.headline or summary.last_message,
    )


__all__ = ["ProgressSummary", "ProgressUpdate", "StoredEvent", "summary_after"]

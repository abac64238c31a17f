"""Progress updates: limits, identity, and the output stores' idempotent reserve/append."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import ValidationError

from scope_temporal import LocalFileMaterializer, ProgressUpdate, RunOutcome, TaskRun
from scope_temporal.background.materializer import MemoryMaterializer, OutputMaterializer
from scope_temporal.background.observe import RunFailure, RunObserver
from scope_temporal.background.progress import MAX_DATA_BYTES, StoredEvent, summary_after
from scope_temporal.background.protocols import RunHandle
from scope_temporal.tools.outcome import ProgressSummary


def test_an_update_refuses_data_over_256_kib_and_metadata_over_its_limits() -> None:
    ProgressUpdate(event_id="e", data="x" * (MAX_DATA_BYTES - 2))
    with pytest.raises(ValidationError, match="limit is 262144"):
        ProgressUpdate(event_id="e", data="x" * MAX_DATA_BYTES)
    with pytest.raises(ValidationError, match="32"):
        ProgressUpdate(event_id="e", metadata={str(i): "v" for i in range(33)})
    with pytest.raises(ValidationError, match="over 1024 bytes"):
        ProgressUpdate(event_id="e", metadata={"k": "v" * 1024})
    with pytest.raises(ValidationError, match="event_id"):
        ProgressUpdate(event_id="")


def test_the_digest_is_the_events_bytes_and_the_headline_its_message() -> None:
    a = ProgressUpdate(event_id="e", data={"n": 1}, metadata={"message": "half"})
    assert (
        a.digest
        == ProgressUpdate(event_id="other", data={"n": 1}, metadata={"message": "half"}).digest
    )
    assert (
        a.digest != ProgressUpdate(event_id="e", data={"n": 2}, metadata={"message": "half"}).digest
    )
    assert a.headline == "half"
    assert ProgressUpdate(event_id="e", data="plain text").headline == "plain text"


def test_summary_after_keeps_the_latest_event() -> None:
    one = StoredEvent(seq=1, update=ProgressUpdate(event_id="a", metadata={"message": "first"}))
    two = StoredEvent(seq=2, update=ProgressUpdate(event_id="b", kind="log"))
    summary = summary_after(summary_after(ProgressSummary(), one), two)
    assert (summary.events, summary.last_event_id, summary.last_kind) == (2, "b", "log")
    assert summary.last_message == "first"  # b has no headline of its own
    assert summary_after(summary, one) == summary  # an older event changes nothing


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> OutputMaterializer:
    return MemoryMaterializer() if request.param == "memory" else LocalFileMaterializer(tmp_path)


async def test_reserve_and_append_are_idempotent_per_task_and_event_id(
    store: OutputMaterializer,
) -> None:
    a = ProgressUpdate(event_id="a", data=1)
    assert await store.reserve("t/1", a) == "new"
    assert await store.reserve("t/1", a) == "new"  # reserved, not yet stored: store it
    assert await store.append("t/1", a) == 1
    assert await store.append("t/1", a) == 1  # a repeat keeps its position
    assert await store.reserve("t/1", a) == "duplicate"
    assert await store.reserve("t/1", ProgressUpdate(event_id="a", data=2)) == "conflict"
    assert await store.reserve("t/2", ProgressUpdate(event_id="a", data=2)) == "new"  # other task
    b = ProgressUpdate(event_id="b", data=2)
    await store.reserve("t/1", b)
    assert await store.append("t/1", b) == 2
    assert await store.count("t/1") == 2
    assert [e.update.event_id for e in await store.read("t/1", after=1)] == ["b"]


async def test_a_conflict_is_seen_by_a_second_store_on_the_same_directory(tmp_path: Path) -> None:
    await LocalFileMaterializer(tmp_path).reserve("t", ProgressUpdate(event_id="a", data=1))
    other = LocalFileMaterializer(tmp_path)  # e.g. another worker
    assert await other.reserve("t", ProgressUpdate(event_id="a", data=9)) == "conflict"


async def test_a_task_run_publishes_replays_and_stops() -> None:
    async def work(progress: object) -> str:
        progress.publish("one", data=1)  # type: ignore[attr-defined]
        progress.checkpoint({"at": 1})  # type: ignore[attr-defined]
        return "finished"

    run = TaskRun(work, replay=[ProgressUpdate(event_id="zero")])
    assert await run.wait() == RunOutcome.completed("finished")
    assert [u.event_id async for u in run.updates()] == ["zero", "one"]
    assert [u.event_id async for u in run.updates()] == ["zero", "one"]  # again from the first
    assert run.checkpoint() == {"at": 1}

    async def forever(progress: object) -> None:
        await asyncio.sleep(60)

    slow = TaskRun(forever)
    await slow.stop()
    await slow.stop()  # safe to repeat
    assert (await slow.wait()).status == "canceled"


async def _observe(*updates: ProgressUpdate) -> tuple[RunObserver, RunOutcome | RunFailure]:
    async def work(progress: object) -> str:
        for update in updates:
            progress.publish(update.event_id, data=update.data)  # type: ignore[attr-defined]
        return "ok"

    observer = RunObserver("t", TaskRun(work), MemoryMaterializer(), ProgressSummary())
    try:
        outcome = await observer.outcome()
    except RunFailure as failure:
        return observer, failure
    assert outcome is not None
    return observer, outcome


async def test_the_observer_stores_a_replayed_event_once() -> None:
    a = ProgressUpdate(event_id="a", data=1)
    observer, outcome = await _observe(a, ProgressUpdate(event_id="b"), a)
    assert outcome == RunOutcome.completed("ok")
    assert observer.summary.events == 2


async def test_the_observer_fails_the_run_on_a_conflicting_event() -> None:
    _, failure = await _observe(
        ProgressUpdate(event_id="a", data=1), ProgressUpdate(event_id="a", data=2)
    )
    assert isinstance(failure, RunFailure) and failure.code == "tool.background.progress_conflict"


async def test_the_observer_fails_the_run_on_an_invalid_update() -> None:
    class Bad(RunHandle):
        def __init__(self) -> None:
            self.stopped = asyncio.Event()

        async def wait(self) -> RunOutcome:
            await self.stopped.wait()
            return RunOutcome.canceled()

        async def stop(self) -> None:
            self.stopped.set()

        async def updates(self):  # type: ignore[no-untyped-def, override]
            yield {"event_id": "x", "metadata": {str(i): "v" for i in range(40)}}

    bad = Bad()
    observer = RunObserver("t", bad, MemoryMaterializer(), ProgressSummary())
    with pytest.raises(RunFailure) as failure:
        await observer.outcome(5)
    assert failure.value.code == "tool.background.progress_invalid" and bad.stopped.is_set()

"""A ScopeWorker's slots are sized from the CPU count unless its caller sizes them, and a
worker whose event loop runs late says so in its log (busy, not lost)."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

import pytest
from temporalio.worker import WorkerTuner

from scope_temporal.loop_watch import TICK_S, LoopWatch
from scope_temporal.sizing import (
    ACTIVITIES_PER_CPU,
    WORKFLOW_TASKS_PER_CPU,
    sized_worker_options,
    usable_cpus,
)


def test_slots_follow_the_cpu_count() -> None:
    options = sized_worker_options({"identity": "w1"}, cpus=2)
    assert options == {
        "identity": "w1",
        "max_concurrent_workflow_tasks": 2 * WORKFLOW_TASKS_PER_CPU,
        "max_concurrent_activities": 2 * ACTIVITIES_PER_CPU,
    }


def test_a_caller_that_sizes_slots_keeps_its_own() -> None:
    tuner = WorkerTuner.create_fixed(workflow_slots=3, activity_slots=5)
    assert sized_worker_options({"tuner": tuner}, cpus=8) == {"tuner": tuner}
    assert sized_worker_options({"max_concurrent_activities": 7}, cpus=8) == {
        "max_concurrent_activities": 7
    }
    assert sized_worker_options({"max_concurrent_workflow_tasks": 2}, cpus=8) == {
        "max_concurrent_workflow_tasks": 2
    }


def test_usable_cpus_is_at_least_one() -> None:
    assert usable_cpus() >= 1


def test_a_late_loop_is_logged_as_a_busy_worker_at_most_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    watch = LoopWatch(warn_after=timedelta(seconds=3))
    with caplog.at_level(logging.WARNING, logger="scope_temporal.worker"):
        watch.observe(0.2, now=100.0)
        assert caplog.records == []
        watch.observe(4.0, now=101.0)
        watch.observe(5.0, now=130.0)  # within the minute: not again
        watch.observe(3.5, now=162.0)
    assert [r.getMessage()[:40] for r in caplog.records] == [
        "this worker's event loop ran 4.0 s late:",
        "this worker's event loop ran 3.5 s late:",
    ]
    assert "lower its slots" in caplog.records[0].getMessage()
    assert watch.worst_lag_s == 5.0


async def test_the_watch_probes_the_running_loop() -> None:
    watch = LoopWatch()
    watch.start()
    await asyncio.sleep(TICK_S * 2.5)
    await watch.stop()
    assert 0 <= watch.worst_lag_s < watch.warn_after

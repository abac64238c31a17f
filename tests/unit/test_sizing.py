"""A ScopeWorker's slots are sized from the CPU count unless its caller sizes them."""

from __future__ import annotations

from temporalio.worker import WorkerTuner

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

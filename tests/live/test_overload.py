"""Overload slows, never strands: 100 runs of workload W at once on one worker beside a
CPU hog complete with no unknown (no `scope.model` / `scope.tool` activity timed out).

Long (minutes on two cores): marked `full`. The same run is `bench/run.py --only overload`.
"""

from __future__ import annotations

import pytest
from temporalio.testing import WorkflowEnvironment

from bench.overload import cpu_hog, run_overload


@pytest.mark.full
async def test_overload_100_runs_beside_a_cpu_hog_complete_with_no_unknown(
    temporal_env: WorkflowEnvironment,
) -> None:
    with cpu_hog():
        result = await run_overload(temporal_env.client, runs=100, stall_s=120)
    assert result.unknowns == 0, result.line()
    assert result.completed == 100, result.line()

"""CONFORMANCE 45/46: a run that cannot carry its state fails before Temporal's limits.

The decision is pure (`scope_temporal.driver.history_limits`); the driver's use of it runs here
through `LocalRunner`, whose transport is told to report a history past the threshold.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from scope_temporal import Definition, InteractionFailed, errors
from scope_temporal.chat import Message
from scope_temporal.driver.history_limits import (
    HISTORY_BYTES_FAIL_AT,
    HISTORY_EVENTS_FAIL_AT,
    HistoryUsage,
    refuse_carry,
)
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.testing import LocalRunner
from scope_temporal.testing.engine import LocalTransport
from scope_temporal.tools import tool


def test_c46_a_run_under_half_the_limits_goes_on_with_a_warning() -> None:
    refused = refuse_carry(2_000_000, 1_000_000, HistoryUsage(HISTORY_EVENTS_FAIL_AT - 1, 0))
    assert not refused.fail
    assert "2,000,000 bytes" in refused.message and "storage=" in refused.message


@pytest.mark.parametrize(
    "usage",
    [HistoryUsage(HISTORY_EVENTS_FAIL_AT, 0), HistoryUsage(10, HISTORY_BYTES_FAIL_AT)],
)
def test_c46_a_run_at_half_the_limits_fails_naming_the_fix(usage: HistoryUsage) -> None:
    refused = refuse_carry(2_000_000, 1_000_000, usage)
    assert refused.fail
    assert "51,200 events" in refused.message and "storage=" in refused.message
    assert "S3StorageDriver" in refused.message and "DirectoryStorage" in refused.message


def test_c46_the_thresholds_leave_half_of_temporals_limits() -> None:
    assert HISTORY_EVENTS_FAIL_AT * 2 == 51_200
    assert HISTORY_BYTES_FAIL_AT * 2 == 50 * 1024 * 1024


@tool(permission="read")
def kilobytes(n: int) -> str:
    """Return `n` KB."""
    return "k" * 1000 * n


async def run_long(monkeypatch: pytest.MonkeyPatch, usage: HistoryUsage) -> Any:
    asked = itertools.count()  # every other check: a fresh run is never suggested at once
    monkeypatch.setattr(
        LocalTransport, "continue_as_new_suggested", lambda self: next(asked) % 2 == 1
    )
    monkeypatch.setattr(LocalTransport, "history_usage", lambda self: usage)
    script = [reply.tool_calls(("kilobytes", {"n": 4})) for _ in range(5)] + [reply.text("ok")]
    runner = LocalRunner(
        definitions=[Definition("long", tools=[kilobytes])],
        tools=[kilobytes],
        models={"default": ScriptedModel(script)},
        payload_limit_bytes=10_000,
    )
    run = await runner.start("long", [Message.user("go")])
    return await run.result(timeout=10)


async def test_c46_a_state_that_cannot_be_carried_fails_early_with_its_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(InteractionFailed) as failed:
        await run_long(monkeypatch, HistoryUsage(HISTORY_EVENTS_FAIL_AT, 3_000_000))
    assert failed.value.code == errors.STATE_TOO_LARGE == "interaction.state.too_large"
    assert "storage=" in failed.value.message


async def test_c45_a_state_that_cannot_be_carried_goes_on_while_the_history_is_small(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = await run_long(monkeypatch, HistoryUsage(100, 100_000))
    assert out.text == "ok" and out.model_calls == 6

"""Unit-test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def reference_app_exports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The reference app's `export_logs` writes into the test's folder (not the checkout),
    and quickly: still over its half-second foreground timeout, so it moves to the
    background as in the demo."""
    import activities.exports

    monkeypatch.setattr(activities.exports, "EXPORTS", tmp_path / "exports")
    monkeypatch.setattr(activities.exports, "STEP_SECONDS", 0.15)

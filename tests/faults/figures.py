"""Figures the fault suite measures, printed at the end of the session (tests/conftest.py).

docs/guarantees.md quotes them from the last `--full` run.
"""

from __future__ import annotations

from collections import Counter

FULL = False
"""Set from `--full` when pytest starts (tests/conftest.py): sizes the long variants."""
FIGURES: Counter[str] = Counter()
"""e.g. kill_runs, kill_points, duplicates, losses, hostile_inputs, ..."""
KILL_POINTS: set[str] = set()
"""Distinct kill points survived (each in one or both tool-call mappings)."""


def summary() -> list[str]:
    if not FIGURES:
        return []
    lines = [f"distinct kill points survived: {len(KILL_POINTS)}"]
    lines += [f"{name}: {value}" for name, value in sorted(FIGURES.items())]
    return lines

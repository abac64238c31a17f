"""Figures come from one source: `python bench/run.py` records them in docs/figures.json
(value, date, machine, command), and a page quoting one writes its number right before
`<!-- fig <name> -->`. A quoted figure the file does not hold, or holds with another value,
fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIGURES = json.loads((REPO / "docs" / "figures.json").read_text())["figures"]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
QUOTE = re.compile(r"(?P<number>\d[\d,]*(?:\.\d+)?)?<!-- fig (?P<name>[\w.]+) -->")


def misquoted(text: str, figures: dict[str, dict[str, object]]) -> list[str]:
    """Each quote of `text` whose number is missing, or is not the figure as rounded."""
    wrong = []
    for match in QUOTE.finditer(re.sub(r"`[^`\n]*`", "", text)):  # code shows the syntax
        name, written = match.group("name"), match.group("number")
        if name not in figures:
            wrong.append(f"{name}: not in docs/figures.json")
            continue
        value = figures[name]["value"]
        if written is None or not isinstance(value, int | float):
            wrong.append(f"{name}: {written!r} is not a number before the marker")
            continue
        decimals = len(written.partition(".")[2])
        # as rounded to the digits written (either way at an exact half)
        if abs(float(value) - float(written.replace(",", ""))) > 0.5 * 10**-decimals + 1e-9:
            wrong.append(f"{name}: the page says {written}, the file holds {value}")
    return wrong


def test_every_figure_records_its_date_machine_and_command() -> None:
    for name, entry in FIGURES.items():
        assert set(entry) == {"value", "date", "machine", "command"}, name
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(entry["date"])), name
        assert str(entry["command"]).startswith("python bench/run.py"), name


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_quoted_figure_is_the_one_the_bench_recorded(page: Path) -> None:
    assert misquoted(page.read_text(), FIGURES) == []


def test_the_quotes_that_matter_are_marked() -> None:
    # the sizing a user reads, and the W ratios, come from the file
    deploy = (REPO / "docs" / "deploy.md").read_text()
    performance = (REPO / "docs" / "performance.md").read_text()
    assert "<!-- fig overhead_cpu_ms_per_round_always -->" in deploy
    assert "<!-- fig overhead_ratio_always -->" in performance


def test_a_drifted_or_unknown_figure_is_found() -> None:
    figures = {"w": {"value": 34.25}, "n": {"value": 17043}}
    text = (
        "34<!-- fig w --> 34.3<!-- fig w --> 17,043<!-- fig n --> "
        "27<!-- fig w --> 15,598<!-- fig n --> 3<!-- fig gone --> x <!-- fig n -->"
    )
    assert misquoted(text, figures) == [
        "w: the page says 27, the file holds 34.25",
        "n: the page says 15,598, the file holds 17043",
        "gone: not in docs/figures.json",
        "n: None is not a number before the marker",
    ]

"""The state diagrams in docs/machines/ are drawn from the machines' tables by
tools/make_diagrams.py, and are current: a change to a table fails here until they are
made again."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def make_diagrams() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_diagrams", ROOT / "tools" / "make_diagrams.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_diagrams", module)
    spec.loader.exec_module(module)
    return module


def test_every_machine_has_a_current_diagram_in_docs() -> None:
    script = make_diagrams()
    assert set(script.machines()) == {"background_task", "machine", "session", "tool_call"}
    assert script.main(["--check"]) == 0, "run: python tools/make_diagrams.py"


def test_a_changed_table_makes_its_diagram_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = make_diagrams()
    monkeypatch.setattr(script, "OUT", tmp_path)
    assert script.main(["--check"]) == 1  # none written yet
    assert script.main([]) == 0 and script.main(["--check"]) == 0
    table = script.machines()["tool_call"].TABLE
    monkeypatch.setitem(table, "answer", {"waiting": frozenset({"ready"})})
    capsys.readouterr()
    assert script.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "tool_call.md" in out and "session.md" not in out


def test_a_diagram_draws_each_legal_pair_the_initial_phase_and_the_terminal_ones() -> None:
    page = (ROOT / "docs" / "machines" / "background_task.md").read_text()
    assert "```mermaid\nstateDiagram-v2\n    [*] --> ready\n" in page
    assert "    running --> waiting_input : report\n" in page
    assert "    completed --> [*]\n" in page and "    running --> [*]" not in page

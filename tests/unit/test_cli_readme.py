"""The user-path pages stay true: every shell command in them (the README's quickstart, the
CLI, UI and deploy pages of docs/) parses against the CLI as it is, and is run, with the same
options, by the test named for it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from scope_temporal.cli import cli

REPO = Path(__file__).resolve().parents[2]
# (page, heading): the section runs from its heading to the next heading of its level or above
SECTIONS = (
    ("README.md", "## Quickstart: the demo"),
    ("docs/cli.md", "# The CLI"),
    ("docs/temporal-ui.md", "# Look at it in the Temporal UI"),
    ("docs/deploy.md", "# Deploy"),
    ("docs/observability.md", "# Traces and metrics"),
)

# Which test runs each documented command (as a subprocess, the way a user types it); the
# options it is documented with are used by one of the tests named.
RUN_BY: dict[str, str | tuple[str, ...]] = {
    "scope-temporal demo": "tests/live/test_demo.py",
    "scope-temporal dev": "tests/live/test_cli_dev.py",
    "scope-temporal worker": (
        "tests/live/test_cli_run.py",
        "tests/live/test_worker_versioning.py",
        "tests/live/test_cli_telemetry.py",
        "tests/live/test_tool_pools.py",
    ),
    "scope-temporal replay-check": (
        "tests/live/test_replay_check.py",
        "tests/live/test_worker_versioning.py",
    ),
    "scope-temporal run": "tests/live/test_cli_run.py",
    "scope-temporal chat": "tests/live/test_cli_chat.py",
    "scope-temporal sessions": "tests/live/test_cli_chat.py",
    "scope-temporal list": "tests/live/test_cli_run.py",
    "scope-temporal setup": "tests/live/test_cli_setup.py",
    "scope-temporal inspect": "tests/live/test_cli_run.py",
    "scope-temporal steer": "tests/live/test_cli_run.py",
    "scope-temporal submit": "tests/live/test_cli_run.py",
    "scope-temporal answer": "tests/live/test_cli_run.py",
    "scope-temporal resolve": (
        "tests/live/test_cli_run.py",
        "tests/live/test_live_model_errors.py",
    ),
    "temporal operator": "tests/live/test_cli_dev.py",
    "temporal worker": "tests/live/test_worker_versioning.py",
    "docker compose": "tests/unit/test_cli_deploy.py",
    "curl http://localhost:9464/metrics": "tests/live/test_cli_telemetry.py",
}
# Documented but not runnable here (no Docker engine): the file they use is validated by
# `docker compose ... config` in test_cli_deploy.py.
NOT_RUNNABLE = {
    "up --build",
    "up --scale worker=3",
    "--profile observability up --build --scale worker=0",
}
CONFIG = {"config", "--profile observability config"}


def _section(page: str, heading: str) -> str:
    """From `heading` to the next heading of its level or above (headings in code don't count)."""
    lines = (REPO / page).read_text().splitlines()
    level = len(heading.split(" ", 1)[0])
    start, end, fenced = None, len(lines), False
    for number, line in enumerate(lines):
        fenced ^= line.startswith("```")
        marks = len(line) - len(line.lstrip("#"))
        if fenced or not marks or not line[marks:].startswith(" "):
            continue
        if start is None and line == heading:
            start = number
        elif start is not None and marks <= level:
            end = number
            break
    assert start is not None, f"{page} has no {heading!r}"
    return "\n".join(lines[start:end])


def _sections() -> str:
    return "\n".join(_section(page, heading) for page, heading in SECTIONS)


def _commands() -> list[list[str]]:
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", _sections(), re.S):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            while words and re.match(r"^[A-Z_]+=", words[0]):
                words = words[1:]  # VAR=value prefixes
            if words:
                commands.append(words)
    for inline in re.findall(r"`(temporal operator [^`]+)`", _sections()):
        commands.append(shlex.split(inline))
    return commands


def test_the_sections_document_every_cli_command() -> None:
    used = {words[1] for words in _commands() if words[0] == "scope-temporal"}
    assert used == set(cli.commands)


@pytest.mark.parametrize("words", _commands(), ids=lambda w: " ".join(w)[:60])
def test_each_readme_command_parses_and_is_run_by_a_test(words: list[str]) -> None:
    prefix = " ".join(words[:2])
    assert prefix in RUN_BY, f"no test runs `{prefix}`"
    files = RUN_BY[prefix]
    files = (files,) if isinstance(files, str) else files
    test_file = "".join((REPO / f).read_text() for f in files)
    if words[0] == "scope-temporal":
        command = cli.commands[words[1]]
        command.make_context(words[1], words[2:])  # raises on an unknown option or argument
    if words[0] == "scope-temporal" or words[:2] == ["temporal", "worker"]:
        for option in (w for w in words[2:] if w.startswith("--")):
            assert f'"{option}"' in test_file, f"{files} never use {option}"
    elif words[0] == "docker":
        rest = " ".join(words[4:])
        assert rest in CONFIG or rest in NOT_RUNNABLE
        assert '"config"' in test_file
    elif words[0] == "curl":
        assert "/metrics" in test_file
    else:
        assert "search-attribute" in test_file


def test_the_readme_env_vars_are_the_ones_the_cli_reads() -> None:
    text = _sections()
    source = "".join(p.read_text() for p in (REPO / "scope_temporal" / "cli").glob("*.py"))
    source += (REPO / "activities" / "models.py").read_text()
    source += (REPO / "activities" / "operations.py").read_text()
    for name in set(re.findall(r"`((?:TEMPORAL|SCOPE|OPENAI)_[A-Z_]+)", text)):
        assert f'"{name}"' in source, f"README names {name}, nothing reads it"

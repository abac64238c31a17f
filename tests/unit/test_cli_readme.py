"""The README's user-path sections stay true: every shell command in them parses against the
CLI as it is, and is run, with the same options, by the test named for it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from scope_temporal.cli import cli

REPO = Path(__file__).resolve().parents[2]
SECTIONS = (
    "## Quickstart: the demo",
    "## The CLI",
    "## Look at it in the Temporal UI",
    "## Deploy",
)

# Which test runs each documented command (as a subprocess, the way a user types it).
RUN_BY = {
    "scope-temporal demo": "tests/live/test_demo.py",
    "scope-temporal dev": "tests/live/test_cli_dev.py",
    "scope-temporal worker": "tests/live/test_cli_run.py",
    "scope-temporal run": "tests/live/test_cli_run.py",
    "scope-temporal list": "tests/live/test_cli_run.py",
    "scope-temporal inspect": "tests/live/test_cli_run.py",
    "scope-temporal steer": "tests/live/test_cli_run.py",
    "scope-temporal answer": "tests/live/test_cli_run.py",
    "scope-temporal resolve": "tests/live/test_cli_run.py",
    "temporal operator": "tests/live/test_cli_dev.py",
    "docker compose": "tests/unit/test_cli_deploy.py",
}
# Documented but not runnable here (no Docker engine): the file they use is validated by
# `docker compose ... config` in test_cli_deploy.py.
NOT_RUNNABLE = {"up --build", "up --scale worker=3"}


def _sections() -> str:
    text = (REPO / "README.md").read_text()
    parts = re.split(r"(?m)^(?=## )", text)
    mine = [p for p in parts if p.startswith(SECTIONS)]
    assert [p.splitlines()[0] for p in mine] == list(SECTIONS), "sections in this order"
    return "\n".join(mine)


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
    test_file = (REPO / RUN_BY[prefix]).read_text()
    if words[0] == "scope-temporal":
        command = cli.commands[words[1]]
        command.make_context(words[1], words[2:])  # raises on an unknown option or argument
        for option in (w for w in words[2:] if w.startswith("--")):
            assert f'"{option}"' in test_file, f"{RUN_BY[prefix]} never uses {option}"
    elif words[0] == "docker":
        rest = " ".join(words[4:])
        assert rest == "config" or rest in NOT_RUNNABLE
        assert '"config"' in test_file
    else:
        assert "search-attribute" in test_file


def test_the_readme_env_vars_are_the_ones_the_cli_reads() -> None:
    text = _sections()
    source = "".join(p.read_text() for p in (REPO / "scope_temporal" / "cli").glob("*.py"))
    source += (REPO / "activities" / "models.py").read_text()
    source += (REPO / "activities" / "operations.py").read_text()
    for name in set(re.findall(r"`((?:TEMPORAL|SCOPE|OPENAI)_[A-Z_]+)", text)):
        assert f'"{name}"' in source, f"README names {name}, nothing reads it"

"""Every command explains itself; bad invocations fail with a clear message, no traceback."""

from __future__ import annotations

import pytest

from scope_temporal.cli import cli, main

COMMANDS = sorted(cli.commands)


def test_the_cli_has_every_command_of_the_issue() -> None:
    assert COMMANDS == [
        "answer",
        "chat",
        "demo",
        "dev",
        "inspect",
        "list",
        "replay-check",
        "resolve",
        "run",
        "sessions",
        "setup",
        "steer",
        "submit",
        "worker",
    ]


def test_top_level_help_exits_0_and_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: scope-temporal [OPTIONS] COMMAND [ARGS]...")
    for name in COMMANDS:
        assert f"  {name} " in out


@pytest.mark.parametrize("command", COMMANDS)
def test_help_of_every_command_exits_0_and_shows_an_example(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Usage: scope-temporal {command} ")
    assert "Example" in out, f"`{command} --help` shows how to use it"
    assert main([command, "-h"]) == 0


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert "scope-temporal, version" in capsys.readouterr().out


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nope"]) == 2
    assert "No such command 'nope'" in capsys.readouterr().err


def test_worker_with_an_app_that_cannot_be_imported(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["worker", "--app", "no_such_package.agents"]) == 1
    err = capsys.readouterr().err
    assert "cannot import the app module 'no_such_package.agents'" in err


def test_worker_with_a_module_that_is_not_an_app(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["worker", "--app", "json"]) == 1
    assert "must define `definitions`" in capsys.readouterr().err


def test_commands_say_when_temporal_cannot_be_reached(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--address", "127.0.0.1:1"]) == 1
    err = capsys.readouterr().err
    assert "cannot reach Temporal at 127.0.0.1:1" in err
    assert "scope-temporal dev" in err


def test_resolve_needs_exactly_one_result(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resolve", "ops-1", "ops-1/call/1/0"]) == 2
    assert "exactly one of --result or --file" in capsys.readouterr().err


def test_demo_without_a_terminal_asks_for_yes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert main(["demo"]) == 2
    assert "pass --yes" in capsys.readouterr().err


def test_replay_check_help_says_what_it_checks_and_its_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["replay-check", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for needle in (
        "Replay recent Interactions against the app's current code and Definitions",
        "ToolCalls, delegates and background tasks",
        "interaction.definition.changed",
        "--running",
        "0 every run replays",
        "1 a run diverges",
        "3 nothing matched the selection",
        "scope-temporal replay-check --app myproject.agents --running",
    ):
        assert needle in out


def test_replay_check_refuses_a_limit_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay-check", "--limit", "0"]) == 2
    assert "--limit" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--deployment", "agents"], "needs both a deployment name and a build id"),
        (["--build-id", "7"], "needs both a deployment name and a build id"),
        (["--deployment", "agents.eu", "--build-id", "7"], "holds a '.'"),
    ],
)
def test_worker_refuses_half_a_version_before_connecting(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["worker", *args]) == 2
    assert message in capsys.readouterr().err


def test_top_level_help_names_every_sessions_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    # `scope-temporal --help` is how a user finds `sessions follow`
    assert main(["--help"]) == 0
    out = capsys.readouterr().out.splitlines()
    line = next(ln for ln in out if ln.strip().startswith("sessions")).lower()
    for sub in ("list", "show", "follow", "end"):
        assert sub in line, sub

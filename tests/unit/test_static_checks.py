"""The SDK passes `ruff check` and `mypy --strict`, users' type checkers see its types (from
outside the checkout too); the public surface matches API.md."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import scope_temporal

ROOT = Path(__file__).resolve().parents[2]
API_MD = ROOT.parent / "shared" / "API.md"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_is_clean() -> None:
    result = run("ruff", "check", "scope_temporal", "tests", "workflows", "activities")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_is_clean_on_the_sdk() -> None:
    result = run("mypy", "--strict", "scope_temporal")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_sees_the_real_public_types_in_a_user_program() -> None:
    # e.g. OpenAIChatModel, loaded lazily at run time, must not look like `object`
    result = run("mypy", "--strict", "tests/typing/user_program.py")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_refuses_an_option_a_decorator_does_not_have(tmp_path: Path) -> None:
    # the decorators take their options as TypedDicts (`Unpack`): a misspelt or mistyped
    # option is a type error, as it was with one keyword parameter per option
    program = tmp_path / "wrong_option.py"
    program.write_text(
        "from scope_temporal import background_tool, tool\n"
        "@tool(permision='read')\n"
        "def f(x: int) -> int:\n    return x\n"
        "g = background_tool(notify='yes')\n"
    )
    result = run("mypy", "--strict", str(program))
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'Unexpected keyword argument "permision" for overloaded function "tool"' in (
        result.stdout
    ), result.stdout
    assert 'Argument "notify" to "background_tool" has incompatible type' in result.stdout


# A user's program with one deliberate type error (a string where a count goes).
WRONG_TYPE = """from scope_temporal import Definition

agent = Definition("agent", max_model_calls="three")
"""


def test_mypy_strict_checks_a_user_program_outside_the_checkout_against_the_installed_package(
    tmp_path: Path,
) -> None:
    # As a user's project: its own folder (not the checkout, so scope_temporal is found only
    # as an installed package, which mypy reads only with the py.typed marker), no config.
    assert not tmp_path.resolve().is_relative_to(ROOT)
    assert (Path(scope_temporal.__file__).parent / "py.typed").is_file()
    shutil.copy(ROOT / "tests" / "typing" / "user_program.py", tmp_path / "user_program.py")
    (tmp_path / "wrong_type.py").write_text(WRONG_TYPE)
    (tmp_path / "mypy.ini").write_text("[mypy]\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}

    def mypy(program: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini"]
        return subprocess.run(
            [*command, program], cwd=tmp_path, env=env, capture_output=True, text=True
        )

    correct = mypy("user_program.py")
    assert correct.returncode == 0, correct.stdout + correct.stderr
    wrong = mypy("wrong_type.py")
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert "py.typed" not in wrong.stdout
    assert (
        'wrong_type.py:3: error: Argument "max_model_calls" to "Definition" has incompatible '
        'type "str"' in wrong.stdout
    ), wrong.stdout


def test_every_name_api_md_promises_is_exported() -> None:
    promised = {
        "Message",
        "ToolCall",
        "ToolResult",
        "FinishReason",
        "Response",
        "Usage",
        "Options",
        "tool",
        "ToolOutput",
        "ToolFailure",
        "HostFailure",
        "require_tool_input",
        "tool_input_continuation",
        "advertise_tools",
        "current_tool_call",
        "Middleware",
        "chain",
        "Definition",
        "ToolSet",
        "Delegate",
        "CompletionDecision",
        "Model",
        "ModelRequest",
        "OpenAIChatModel",
        "ScriptedModel",
        "reply",
        "ScopeWorker",
        "ScopeClient",
        "InteractionHandle",
        "settle_tool_result",
        "settle_model_result",
        "ScopeError",
        "InvalidToolInput",
        "SignalConflict",
        "NoSuchWait",
        "SettlementMismatch",
        "InteractionFailed",
        "TreeSnapshot",
        "PendingToolInput",
        "UnknownEffect",
        "RoundResults",
        "ResultEntry",
        "ActiveDelegate",
        "Output",
        # added by issue 11: typed errors for an id in use and a bad input request
        "InteractionAlreadyStarted",
        "InvalidInputRequest",
        # added by issue 8: live text of a streaming model call
        "LiveText",
        "stream_delta",
        # added by issue 9: managed background tools
        "background_tool",
        "BackgroundTool",
        "BackgroundOperation",
        "Recoverable",
        "Resumable",
        "Handoff",
        "RunHandle",
        "RunOutcome",
        "RunProgress",
        "TaskRun",
        "ProgressUpdate",
        "ProgressSummary",
        "OutputMaterializer",
        "LocalFileMaterializer",
        "TaskSnapshot",
        "TaskNotFound",
        "TaskEnded",
    }
    if API_MD.exists():  # every `from scope_temporal import a, b` line of API.md
        text = API_MD.read_text()
        for line in re.findall(r"^from scope_temporal import (.+)$", text, re.M):
            promised |= {n.strip() for n in line.split(",")}
    missing = sorted(n for n in promised if not hasattr(scope_temporal, n))
    assert missing == []
    assert set(scope_temporal.__all__) >= promised
    from scope_temporal.testing import LocalRunner  # noqa: F401

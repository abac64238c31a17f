"""The mutation check: named mutants the suite must catch (issue 25).

Each mutant is a minimal, exact text change to our own source that breaks one core
guarantee (a call retried, an unknown re-sent, a denied body run, plaintext in history,
...), with the tests that must catch it. Under `--full` every mutant is applied to a fresh
copy of the repository and its catching tests run there in a pytest subprocess
(PYTHONPATH to the copy): every one of them must FAIL, and the run must show the text of
the guarantee's own assertion (`expect`), so a mutant that only breaks the import or the
syntax does not count as caught. The control: the unmutated copy passes the same tests.

The `old` text must occur exactly once in its file (checked in the default run too): a
mutant the code has drifted away from fails loudly and is updated with the code, never
skipped. docs/guarantees.md ("Mutants the suite must catch") lists them.

    python -m pytest tests/faults/test_mutants.py --full
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_IGNORED = shutil.ignore_patterns(
    ".git",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    ".scope",
    "site",
    "*.egg-info",
    ".venv",
)


@dataclass(frozen=True)
class Mutant:
    name: str
    breaks: str
    """The guarantee it breaks (what docs/guarantees.md says)."""
    file: str
    """Relative to the repository's root."""
    old: str
    """Occurs exactly once in `file`."""
    new: str
    tests: tuple[str, ...]
    """Node ids (with or without parameters): each must fail under the mutant."""
    expect: tuple[str, ...]
    """Text the failing run must show: the guarantee's own assertion failed."""
    timeout: int = 120
    """Seconds each catching test may take (pytest-timeout, in the subprocess)."""


LIVE_UNKNOWNS = "tests/live/test_live_unknowns.py"
MODEL_TIMEOUT = f"{LIVE_UNKNOWNS}::test_c9_live_model_activity_timeout_is_unknown"
TOOL_TIMEOUT = (
    f"{LIVE_UNKNOWNS}::test_c19_live_tool_activity_timeout_is_unknown_and_never_entered_again"
)
ENCRYPTION = (
    "tests/live/test_encryption.py::"
    "test_an_encryption_codec_on_client_and_worker_keeps_every_payload_encrypted"
)
CONVERTER = (
    "tests/unit/test_converter.py::test_the_scope_converter_keeps_codec_and_failure_converter"
)
ONCE = "            retry_policy=retry,\n"

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "tool-activity-retried",
        "nothing runs twice: scope.tool runs with maximum_attempts=1",
        "scope_temporal/workflows/temporal.py",
        ONCE,
        "            retry_policy=RetryPolicy(maximum_attempts=3)\n"
        "            if activity == names.TOOL_ACTIVITY\n"
        "            else retry,\n",
        (TOOL_TIMEOUT,),
        ("the tool body was entered 2 times",),
    ),
    Mutant(
        "model-activity-retried",
        "nothing runs twice: scope.model runs with maximum_attempts=1",
        "scope_temporal/workflows/temporal.py",
        ONCE,
        "            retry_policy=RetryPolicy(maximum_attempts=3)\n"
        "            if activity == names.MODEL_ACTIVITY\n"
        "            else retry,\n",
        (MODEL_TIMEOUT,),
        ("assert len(model.requests) == 1", "assert 3 == 1"),
    ),
    Mutant(
        "unknown-model-call-resent",
        "an unknown model call is held for the host, never re-sent by itself",
        "scope_temporal/interaction/retries.py",
        "    if pending.resends >= policy.ambiguous:\n",
        "    if pending.resends >= policy.ambiguous + 1:\n",
        (
            "tests/unit/test_model_retries_machine.py::"
            "test_an_unknown_outcome_is_held_by_default_never_retried",
            "tests/unit/test_core_model_retries.py::"
            "test_c9_what_is_not_proven_stays_unknown_with_a_diagnostic",
        ),
        ('assert machine.status == "waiting"', "len(model.requests) == 1"),
    ),
    Mutant(
        "ambiguous-resends-by-default",
        "ModelRetry(ambiguous=0) by default: every unknown is the host's",
        "scope_temporal/models/retry.py",
        "        ambiguous: int = 0,\n",
        "        ambiguous: int = 1,\n",
        (
            MODEL_TIMEOUT,
            "tests/unit/test_model_retries_machine.py::"
            "test_an_unknown_outcome_is_held_by_default_never_retried",
        ),
        ("assert len(model.requests) == 1", "assert 2 == 1"),
    ),
    Mutant(
        "steer-dedup-off",
        "the same steer id with the same content twice is a no-op",
        "scope_temporal/interaction/steering.py",
        "        return False\n    if ended:\n",
        "        return True\n    if ended:\n",
        (
            "tests/unit/test_core_steering.py::test_c37_same_id_same_content_is_a_no_op",
            "tests/unit/test_core_steering.py::"
            "test_c37_local_run_steer_dedups_and_raises_typed_errors",
        ),
        ('machine.check_steer("s1", (Message.user("a"),)) is False',),
    ),
    Mutant(
        "denied-body-runs",
        "a denied call never enters its body (machine and scope.tool's guard)",
        "scope_temporal/interaction/admission.py",
        '    if decision != "ask" and decision.decision == "deny":\n',
        '    if decision != "ask" and decision.decision == "deny" and False:\n',
        (
            "tests/unit/test_core_approval_runs.py::test_a8_otherwise_deny_refuses_without_a_wait",
            "tests/unit/test_core_admission.py::"
            "test_seam_08_the_tool_guard_refuses_a_covered_attempt_without_an_approval",
        ),
        ("assert runs() == {}", "TOOL_APPROVAL_DENIED"),
    ),
    Mutant(
        "denial-remembered",
        "only an approval is remembered for the tool, never a denial",
        "scope_temporal/interaction/approvals.py",
        '        remember=decision == "approve" and bool(response.get("remember", False)),\n',
        '        remember=bool(response.get("remember", False)),\n',
        ("tests/unit/test_core_approvals.py::test_a4_a_denial_is_never_remembered",),
        ("assert m.approved_tools == ()",),
    ),
    Mutant(
        "codec-skipped",
        "the user's payload codec is kept: no plaintext in history",
        "scope_temporal/converter.py",
        "        base, payload_converter_class=converter_class, external_storage=external\n",
        "        base,\n"
        "        payload_converter_class=converter_class,\n"
        "        external_storage=external,\n"
        "        payload_codec=None,\n",
        (CONVERTER, ENCRYPTION),
        ("payload_codec is base.payload_codec", "payload_codec is codec_app"),
    ),
    Mutant(
        "failure-converter-dropped",
        "the user's failure converter is kept: failure messages encrypted in history",
        "scope_temporal/converter.py",
        "        base, payload_converter_class=converter_class, external_storage=external\n",
        "        base,\n"
        "        payload_converter_class=converter_class,\n"
        "        external_storage=external,\n"
        "        failure_converter_class=DataConverter.default.failure_converter_class,\n",
        (CONVERTER, ENCRYPTION),
        (
            "failure_converter_class is base.failure_converter_class",
            "a failure message is in plaintext in history",
        ),
    ),
    Mutant(
        "tool-outcome-size-limit-off",
        "a tool outcome over the payload limit is unknown, not recorded",
        "scope_temporal/activities/tool_attempt.py",
        "    if size <= limit.bytes:\n",
        "    if True:\n",
        (
            "tests/unit/test_core_drivers.py::"
            "test_c46_local_a_tool_outcome_over_the_limit_is_unknown_naming_the_tool",
        ),
        ("[unknown] = (await run.idle()).unknown_effects", "not enough values to unpack"),
    ),
    Mutant(
        "model-response-size-limit-off",
        "a model response over the payload limit is unknown, not recorded",
        "scope_temporal/activities/model_call.py",
        "    if not isinstance(outcome, ModelResponded) or size <= limit.bytes:\n",
        "    if True:\n",
        (
            "tests/unit/test_core_drivers.py::test_c46_local_a_model_response_over_the_limit_is_unknown",
        ),
        ("[unknown] = (await run.idle()).unknown_effects", "not enough values to unpack"),
    ),
    Mutant(
        "failed-call-rerun",
        "a definitely failed tool call is never entered again",
        "scope_temporal/driver/calls.py",
        "    if not isinstance(outcome, Backgrounded):\n        return outcome\n",
        '    if outcome.kind == "failed" and attempt.entry == 1:\n'
        '        attempt = attempt.model_copy(update={"entry": 2})\n'
        "        return await attempt_tool(\n"
        "            transport, attempt, start_to_close=start_to_close, heartbeat=heartbeat,\n"
        "            route=route, task_queue=task_queue,\n"
        "        )\n"
        "    if not isinstance(outcome, Backgrounded):\n        return outcome\n",
        (
            "tests/unit/test_core_tool_outcomes.py::"
            "test_c18_tool_failure_is_a_model_visible_failed_result_and_never_reruns",
        ),
        ('assert entries == ["prod"]',),
    ),
    Mutant(
        "schema-check-off-in-the-machine",
        "a model's tool call off the tool's schema is rejected at admission, no child started",
        "scope_temporal/interaction/admission.py",
        "    error = validate_arguments(spec.parameters, call.arguments)\n",
        "    error = (\n"
        "        None\n"
        "        if advertised is not None\n"
        "        else validate_arguments(spec.parameters, call.arguments)\n"
        "    )\n",
        (
            "tests/unit/test_core_tool_outcomes.py::"
            "test_c17_invalid_arguments_never_start_a_child_in_the_pure_machine",
        ),
        ("assert [type(e) for e in effects] == [StartToolCall]",),
    ),
    Mutant(
        "schema-check-off-in-scope-tool",
        "scope.tool's guard re-checks the arguments against the tool's schema",
        "scope_temporal/interaction/admission.py",
        "    error = validate_arguments(spec.parameters, call.arguments)\n",
        "    error = (\n"
        "        None\n"
        "        if advertised is None\n"
        "        else validate_arguments(spec.parameters, call.arguments)\n"
        "    )\n",
        ("tests/unit/test_core_admission.py::test_seam_08_arguments_off_the_schema_are_invalid",),
        ("assert refusal is not None and refusal.code == TOOL_INPUT_INVALID",),
    ),
    Mutant(
        "nondeterministic-timer",
        "workflow code is deterministic: a replay issues the timers the history holds",
        "scope_temporal/workflows/temporal.py",
        "        await workflow.sleep(delay, summary=summary)\n",
        "        # the wall clock in workflow code: a wait already over by it is skipped\n"
        '        if __import__("time").time() < workflow.time() + delay.total_seconds():\n'
        "            await workflow.sleep(delay, summary=summary)\n",
        (
            "tests/unit/test_checked_in_histories.py::"
            "test_c42_checked_in_history_replays[recorded-model-retry]",
        ),
        ("NondeterminismError",),
    ),
    Mutant(
        "many-workers-kill-misses",
        "test_many_workers --full kills a worker holding work, whose calls become unknown",
        "tests/faults/test_many_workers.py",
        "            fleet[0].kill()\n            spare.go()\n",
        "            spare.kill()  # the kill hits the idle spare: no worker holding work\n",
        (
            "tests/faults/test_many_workers.py::"
            "test_three_workers_fifty_interactions_one_worker_lost[always]",
        ),
        ("became unknown",),
        timeout=400,
    ),
)


def _function(node: str) -> tuple[Path, str]:
    path, _, rest = node.partition("::")
    return ROOT / path, rest.split("[")[0]


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_each_mutant_still_applies_and_names_tests_that_exist(mutant: Mutant) -> None:
    """Cheap, in the default run: a mutant the code drifted from fails here, loudly."""
    text = (ROOT / mutant.file).read_text()
    assert text.count(mutant.old) == 1, (
        f"mutant {mutant.name}: its old text occurs {text.count(mutant.old)} times in "
        f"{mutant.file} (must be exactly once): update the mutant with the code"
    )
    assert mutant.new != mutant.old
    compile(text.replace(mutant.old, mutant.new), mutant.file, "exec")
    assert mutant.tests and mutant.expect
    for node in mutant.tests:
        path, function = _function(node)
        assert re.search(rf"^(async )?def {function}\(", path.read_text(), re.M), node


def test_the_mutant_names_are_unique_and_each_is_in_the_guarantees_page() -> None:
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)
    page = (ROOT / "docs" / "guarantees.md").read_text()
    section = page.partition("## Mutants the suite must catch")[2]
    listed = re.findall(r"^\| `([\w-]+)` \|", section, re.M)
    assert listed == [m.name for m in MUTANTS]


def copy_of_the_repository(into: Path, mutant: Mutant | None = None) -> Path:
    """A copy of the repository, with `mutant` applied (its `old` text exactly once)."""
    copy = into / "repo"
    shutil.copytree(ROOT, copy, ignore=_IGNORED)
    if mutant is not None:
        target = copy / mutant.file
        text = target.read_text()
        assert text.count(mutant.old) == 1, f"mutant {mutant.name} does not apply"
        target.write_text(text.replace(mutant.old, mutant.new))
    return copy


def run_tests(copy: Path, tests: tuple[str, ...], timeout: int) -> tuple[int, str]:
    """Run `tests` with pytest inside `copy` (its code, not this checkout's): the exit
    code and the whole output."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTHONPATH")}
    env["PYTHONPATH"] = str(copy)
    where = subprocess.run(
        [sys.executable, "-c", "import scope_temporal, tests; print(scope_temporal.__file__)"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(copy), where.stdout  # the copy's code
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--full", "-n", "0"]
    command += ["-q", "-rfE", "--tb=short", f"--timeout={timeout}", *tests]
    started = time.monotonic()
    ran = subprocess.run(
        command,
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout * max(len(tests), 2) + 120,
    )
    output = ran.stdout + ran.stderr
    print(f"{' '.join(tests)}: exit {ran.returncode} in {time.monotonic() - started:.1f}s")
    return ran.returncode, output


def counts(output: str) -> dict[str, int]:
    """The pytest summary's counts ("3 failed, 1 passed in 9.1s" -> failed 3, passed 1)."""
    summaries = [
        line
        for line in output.splitlines()
        if re.search(r"\d+ (passed|failed|errors?|skipped|deselected)\b.* in [\d.]+s", line)
    ]
    assert summaries, f"no pytest summary in:\n{output[-3000:]}"
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summaries[-1])}


@pytest.mark.full
@pytest.mark.timeout(900)
def test_the_unmutated_copy_passes_every_catching_test(tmp_path: Path) -> None:
    tests = tuple(dict.fromkeys(node for m in MUTANTS for node in m.tests))
    code, output = run_tests(copy_of_the_repository(tmp_path), tests, timeout=400)
    summary = counts(output)
    assert code == 0 and summary.get("passed", 0) >= len(tests), output[-5000:]
    assert set(summary) <= {"passed", "warning", "warnings"}, output[-5000:]


@pytest.mark.full
@pytest.mark.timeout(900)
@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_the_suite_catches_the_mutant(mutant: Mutant, tmp_path: Path) -> None:
    code, output = run_tests(copy_of_the_repository(tmp_path, mutant), mutant.tests, mutant.timeout)
    tail = output[-8000:]
    summary = counts(output)
    # every catching test ran and failed (none passed, none errored in collection)
    assert code == 1, f"mutant {mutant.name} survived (exit {code}):\n{tail}"
    assert summary.get("failed", 0) >= len(mutant.tests), tail
    assert not {"passed", "error", "errors", "skipped"} & set(summary), tail
    failed = [line for line in output.splitlines() if line.startswith("FAILED ")]
    for node in mutant.tests:
        assert any(line[len("FAILED ") :].startswith(node) for line in failed), (node, tail)
    # ...on the guarantee's own assertion, not on an import or a syntax error
    missing = [text for text in mutant.expect if text not in output]
    assert missing == [], f"mutant {mutant.name}: caught, but not by {missing}:\n{tail}"

"""The CLI as a user drives it: `dev` + `worker` + `run` (answering at a real terminal with
pexpect), then `list`, `inspect`, `steer`, `submit`, `answer` and `resolve` on running
Interactions."""

from __future__ import annotations

import io
import json
import re
import shlex
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pexpect
import pytest

from tests.live.test_cli_dev import CLI, Proc, clean_env, dev_server, run_cli

pytestmark = pytest.mark.live

PROMPT = "checkout is returning 502 errors since 09:12 UTC, investigate"


@dataclass
class Stack:
    home: Path
    address: str
    ui_port: int
    task_queue: str

    def env(self, **extra: str) -> dict[str, str]:
        values = {"TEMPORAL_ADDRESS": self.address, "SCOPE_TASK_QUEUE": self.task_queue}
        return clean_env(self.home, **{**values, **extra})

    def cli(self, *args: str, ok: bool = True) -> str:
        done = run_cli(args, env=self.env(), cwd=self.home)
        output = done.stdout + done.stderr
        if ok:
            assert done.returncode == 0, f"scope-temporal {shlex.join(args)}:\n{output}"
        return output

    def snapshot(self, workflow_id: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.cli("inspect", workflow_id, "--json"))
        return data

    def until(self, workflow_id: str, what: str, timeout: float = 30) -> dict[str, Any]:
        """Poll `inspect --json` until `what` (status, or "waiting-input") holds."""
        deadline = time.monotonic() + timeout
        while True:
            snap = self.snapshot(workflow_id)
            waits = [w for p in snap["processes"] for w in p["pending_tool_inputs"]]
            if snap["status"] == what or (what == "waiting-input" and waits):
                return snap
            assert time.monotonic() < deadline, f"{workflow_id} never {what}: {snap['status']}"
            time.sleep(0.3)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The README's path: `scope-temporal dev`, then `scope-temporal worker` (the reference
    app, found from a folder outside the checkout), on free ports."""
    home = tmp_path_factory.mktemp("cli")
    with dev_server(home) as (_, port, ui_port):
        stack = Stack(home, f"localhost:{port}", ui_port, f"cli-{uuid.uuid4().hex[:6]}")
        worker = Proc(["worker"], env=stack.env(), cwd=home)
        try:
            worker.wait_for("ready; Ctrl-C to stop", timeout=30)
            assert "offline rule-based planner" in worker.output
            yield stack
            assert worker.stop() == 0
            assert "worker stopped" in worker.output
        finally:
            worker.kill()


def test_run_refuses_a_bad_answer_with_the_schema_message_and_a_good_one_continues(
    stack: Stack,
) -> None:
    child = pexpect.spawn(
        CLI,
        ["run", "ops", PROMPT, "--id", "run-pexpect"],
        env=stack.env(),
        cwd=str(stack.home),
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 200),
    )
    shown = io.StringIO()
    child.logfile_read = shown
    try:
        child.expect(r"restart_service asks: Restart payments-worker\?")
        child.expect(re.escape('{"approved": boolean, "note": string} (required: approved)'))
        child.expect("answer> ")
        child.sendline('{"approved": "sure"}')
        child.expect(
            re.escape("does not match the schema: approved: 'sure' is not of type 'boolean'")
        )
        child.expect("try again")
        child.expect("answer> ")
        child.sendline("maybe later")
        child.expect(r"not JSON \(Expecting value")
        child.expect("answer> ")
        child.sendline('{"approved": true, "note": "go ahead"}')
        child.expect("answer sent")
        child.expect(r"✓ restart_service\(.*\) succeeded · payments-worker restarted")
        child.expect("completion validator sent the reply back")
        # the reply streams in as the model writes it, then the settled response shows
        child.expect(r"model #(\d+) ▸ Incident report")
        seq = child.match.group(1)
        child.expect(f"model #{seq} → reply: Incident report")
        child.expect("Root cause: payments-worker v2.3.1 leaks database connections")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    transcript = child.before or ""
    assert "offline rule-based planner" in transcript
    # what happened before the prompt was shown live too
    snap = stack.snapshot("run-pexpect")
    assert snap["status"] == "completed"
    assert "artifact: summarize (run-pexpect/delegate/3/0)" in transcript
    # the background export: moved to the background, its end shown as it happened
    assert "⇢ export_logs continues in the background" in shown.getvalue()
    assert "✓ export_logs completed · task run-pexpect/task/1/2 · attempt 1 · 4 progress" in (
        shown.getvalue()
    )


def _polls() -> Iterator[None]:
    """Up to 10 s of tries, 0.5 s apart (for what visibility shows a moment later)."""
    for attempt in range(20):
        if attempt:
            time.sleep(0.5)
        yield None


def test_list_inspect_steer_answer_on_a_running_interaction(stack: Stack) -> None:
    started = stack.cli("run", "ops", PROMPT, "--detach", "--id", "cli-steer")
    assert "started cli-steer (ops)" in started
    snap = stack.until("cli-steer", "waiting-input")
    wait = next(w for p in snap["processes"] for w in p["pending_tool_inputs"])
    assert wait["wait_id"] == "cli-steer/tool/4/0/wait/1"

    tree = stack.cli("inspect", "cli-steer")
    assert "cli-steer · ops · waiting_input" in tree
    # the root's attribute says what the tree needs (list reads Temporal's visibility,
    # which follows an upsert within moments)
    assert any("cli-steer" in stack.cli("list", "--needs-attention") for _ in _polls())
    assert "? input wait cli-steer/tool/4/0/wait/1: Restart payments-worker?" in tree
    assert "answer: scope-temporal answer cli-steer cli-steer/tool/4/0/wait/1" in tree
    assert "✓ summarize(" in tree and "(delegate) succeeded" in tree

    assert "queued" in stack.cli("steer", "cli-steer", "note-1", "do not restart anything")
    assert "already received" in stack.cli(
        "steer", "cli-steer", "note-1", "do not restart anything"
    )
    conflict = stack.cli("steer", "cli-steer", "note-1", "something else", ok=False)
    assert "interaction.signal.conflict" in conflict

    submitted = stack.cli(
        "submit", "cli-steer", "export_logs", '{"services": ["payments-db"]}', "--key", "ev-1"
    )
    assert "task cli-steer/task/submit/ev-1 submitted" in submitted
    again = stack.cli(
        "submit", "cli-steer", "export_logs", '{"services": ["payments-db"]}', "--key", "ev-1"
    )
    assert "task cli-steer/task/submit/ev-1 submitted" in again  # the same task
    bad = stack.cli("submit", "cli-steer", "export_logs", '{"services": ["nope"]}', ok=False)
    assert "submit refused" in bad and "no logs for ['nope']" in bad
    assert "tool.background.submit_invalid" in bad

    refused = stack.cli("answer", "cli-steer", wait["wait_id"], '{"approved": 1}', ok=False)
    assert "approved: 1 is not of type 'boolean'" in refused
    assert "no open wait 'nope'" in stack.cli("answer", "cli-steer", "nope", "{}", ok=False)
    assert "the tool continues" in stack.cli(
        "answer", "cli-steer", wait["wait_id"], '{"approved": false, "note": "not now"}'
    )

    done = stack.until("cli-steer", "completed")
    report = done["root"]["output"]["model_response"]["message"]["parts"][0]["text"]
    assert "declined the restart of payments-worker: not now" in report
    assert "operator said: do not restart anything" in report
    tree = stack.cli("inspect", "cli-steer")
    assert "✎ steer: do not restart anything" in tree
    assert "✗ restart_service(" in tree
    assert "✎ completion validator:" in tree
    listing = stack.cli("list")
    assert re.search(r"cli-steer\s+completed", listing)
    assert "cli-steer" in stack.cli("list", "--query", "ScopeDefinition = 'ops'")
    assert "cli-steer" not in stack.cli("list", "--query", "ScopeDefinition = 'nope'")
    assert "cli-steer" not in stack.cli("list", "--needs-attention")


def test_run_reports_an_unknown_effect_and_resolve_settles_it(stack: Stack) -> None:
    queue = f"cli-unknown-{uuid.uuid4().hex[:6]}"
    env = stack.env(SCOPE_TASK_QUEUE=queue, SCOPE_DEMO_UNKNOWN_RESTART="1")
    worker = Proc(["worker"], env=env, cwd=stack.home)
    run = None
    try:
        worker.wait_for("ready; Ctrl-C to stop")
        run = Proc(["run", "ops", PROMPT, "--yes", "--id", "cli-unknown"], env=env, cwd=stack.home)
        run.wait_for(r"! outcome unknown: tool restart_service\(")
        command = run.wait_for(r"^\s+(scope-temporal resolve .*)$").group(1)
        assert command == (
            "scope-temporal resolve cli-unknown cli-unknown/call/4/0 "
            "--result 'what you established' --disposition succeeded"
        )
        assert (
            "why: [tool.execution_failed] HostFailure: the fleet API connection dropped"
            in run.output
        )
        assert "nothing is retried" in run.output

        tree = stack.cli("inspect", "cli-unknown")
        assert "! unknown outcome of tool restart_service(" in tree
        args = shlex.split(command)[1:]
        args[args.index("--result") + 1] = "payments-worker restarted (checked in the console)"
        mismatch = stack.cli(
            *args[:-2], "--disposition", "failed", "--advertise", "open_ticket", ok=False
        )
        assert "interaction.settlement.mismatch" in mismatch
        assert "settled cli-unknown/call/4/0 as succeeded" in stack.cli(*args)

        run.wait_for(r"✓ restart_service\(.*succeeded · payments-worker restarted \(checked")
        run.wait_for("Root cause:")
        assert run.wait() == 0
    finally:
        if run is not None:
            run.kill()
        worker.stop()


def test_demo_reuses_a_server_already_running(stack: Stack) -> None:
    out = stack.cli("demo", "--yes", "--address", stack.address, "--ui-port", str(stack.ui_port))
    assert f"Temporal server: {stack.address} (already running; reused)" in out
    assert "Root cause: payments-worker" in out
    assert (
        f"See it in the Temporal UI: http://localhost:{stack.ui_port}/namespaces/default/"
        "workflows/ops-demo-" in out
    )


def test_errors_are_reported_without_tracebacks(stack: Stack) -> None:
    failed = stack.cli("run", "nope", "hello", ok=False)
    assert "✗ failed: [interaction.definition.unknown] No Definition 'nope'" in failed
    assert "Traceback" not in failed
    assert "no interaction 'no-such-id'" in stack.cli("inspect", "no-such-id", ok=False)
    missing = stack.cli("resolve", "no-such-id", "x", "--result", "y", ok=False)
    assert "Traceback" not in missing and "no-such-id" in missing


APP = '''
from scope_temporal import Definition, ScriptedModel, reply, tool

@tool(permission="read")
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()

definitions = [Definition("echo", tools=[shout])]
tools = [shout]
def plan(request):
    last = request.messages[-1]
    if last.role == "tool":
        return reply.text("done: " + last.tool_results[0].content)
    return reply.tool_calls(("shout", {"text": "hi"}))

models = {"default": ScriptedModel(plan)}
'''


@contextmanager
def app_worker(
    stack: Stack, module: str, source: str, serving: str
) -> Iterator[tuple[dict[str, str], Path]]:
    """`scope-temporal worker --app MODULE` serving `source` from its own project folder
    on a fresh task queue: yields the environment to run the CLI with, and the folder."""
    project = stack.home / module
    project.mkdir()
    (project / f"{module}.py").write_text(source)
    env = stack.env(SCOPE_TASK_QUEUE=f"cli-{module}-{uuid.uuid4().hex[:6]}")
    worker = Proc(["worker", "--app", module], env=env, cwd=project)
    try:
        worker.wait_for(f"worker serving {serving} from {module}")
        worker.wait_for("model default: ScriptedModel")
        yield env, project
    finally:
        worker.stop()


def test_worker_serves_your_own_app_module(stack: Stack) -> None:
    with app_worker(stack, "myagents", APP, "echo") as (env, project):
        done = run_cli(["run", "echo", "say hi"], env=env, cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert '✓ shout(text="hi") succeeded · HI' in done.stdout
    assert "━━ output" in done.stdout and "\ndone: HI\n" in done.stdout


APPROVALS_APP = '''
from scope_temporal import ApprovalPolicy, Definition, ScriptedModel, reply, tool

@tool(permission="exec")
def restart(name: str) -> str:
    """Restart a service."""
    return name + " restarted"

definitions = [Definition("guarded", tools=[restart], approval=ApprovalPolicy.deny_writes())]
tools = [restart]
PLAN = ["web", "web", "api"]

def plan(request):
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < len(PLAN):
        return reply.tool_calls(("restart", {"name": PLAN[done]}))
    return reply.text("done")

models = {"default": ScriptedModel(plan)}
'''


def test_run_asks_y_n_for_an_approval_and_yes_approves(stack: Stack) -> None:
    with app_worker(stack, "guarded_app", APPROVALS_APP, "guarded") as (env, project):
        child = pexpect.spawn(
            CLI,
            ["run", "guarded", "restart things", "--id", f"guarded-{uuid.uuid4().hex[:6]}"],
            env=env,
            cwd=str(project),
            encoding="utf-8",
            timeout=30,
            dimensions=(50, 200),
        )
        shown = io.StringIO()
        child.logfile_read = shown
        try:
            child.expect(re.escape('? restart needs approval: Allow restart(name="web")?'))
            child.expect(re.escape("approve? [y/a/n]> "))
            child.sendline("n")
            child.expect(re.escape("reason (optional, Enter to skip)> "))
            child.sendline("not during the sale")
            child.expect(re.escape('⊘ restart(name="web") rejected · denied by person'))
            child.expect(re.escape("approve? [y/a/n]> "))
            child.sendline("a")  # approve, and remember it for the session
            child.expect(re.escape('✓ restart(name="web") succeeded · approved by person'))
            child.expect(re.escape('✓ restart(name="api") succeeded · approved by remembered'))
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
        assert child.exitstatus == 0
        assert shown.getvalue().count("needs approval") == 2  # web twice; api was not asked
        done = run_cli(["run", "guarded", "again", "--yes"], env=env, cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("approved (--yes)") == 3
    assert "━━ output" in done.stdout and "\ndone\n" in done.stdout

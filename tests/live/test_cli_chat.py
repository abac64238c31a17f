"""`scope-temporal chat` at a real terminal (pexpect) and `sessions list|show|follow|end`:
turns share the conversation, approvals are asked inline and "a" is kept for the session,
Ctrl-C leaves the session running and `--session ID` rejoins it (following a turn that
still waits for an approval); `sessions follow` prints every turn's events, or from a
stored position."""

from __future__ import annotations

import io
import re
import signal
import uuid

import pexpect
import pytest

from tests.live.test_cli_dev import CLI, run_cli
from tests.live.test_cli_run import APPROVALS_APP, Stack, app_worker, stack

pytestmark = pytest.mark.live
__all__ = ["stack"]  # the module's dev server and reference worker (test_cli_run)

# the approvals app's `restart` tool (needs approval), in a chatty Definition
CHAT_APP = (
    APPROVALS_APP.split("definitions =")[0]
    + """
definitions = [Definition("talk", tools=[restart], approval=ApprovalPolicy.deny_writes())]
tools = [restart]

def plan(request):
    last = request.messages[-1]
    if last.role == "user" and last.text.startswith("restart "):
        return reply.tool_calls(("restart", {"name": last.text.split()[1]}))
    if last.role == "tool":
        return reply.text("ok: " + last.tool_results[0].content)
    users = [m.text for m in request.messages if m.role == "user"]
    return reply.text("you said: " + " | ".join(users))

models = {"default": ScriptedModel(plan)}
"""
)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def spawn(env: dict[str, str], cwd: str, *args: str) -> tuple[pexpect.spawn, io.StringIO]:
    """The CLI at a terminal of its own. Ctrl-C is restored to what a terminal gives: a
    suite launched as a background job of a non-interactive shell ignores SIGINT, and an
    ignored signal is inherited across exec (the chat would never see its Ctrl-C)."""
    child = pexpect.spawn(
        CLI,
        list(args),
        env=env,
        cwd=cwd,
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 200),
        preexec_fn=_default_sigint,
    )
    shown = io.StringIO()
    child.logfile_read = shown
    return child, shown


def test_chat_turns_approvals_ctrl_c_and_rejoin(stack: Stack) -> None:
    session = f"chat-{uuid.uuid4().hex[:6]}"
    with app_worker(stack, "chat_app", CHAT_APP, "talk") as (env, project):
        child, shown = spawn(env, str(project), "chat", "talk", "--session", session)
        try:
            child.expect(f"session {session} \\(talk\\)")
            child.expect("you> ")
            child.sendline("hello there")
            child.expect(re.escape("agent> you said: hello there"))
            child.expect("you> ")
            child.sendline("restart web")
            child.expect(re.escape('? restart needs approval: Allow restart(name="web")?'))
            child.expect(re.escape("approve? [y/a/n]> "))
            child.sendline("a")  # approve for the rest of the session
            child.expect(re.escape("agent> ok: web restarted"))
            child.expect("you> ")
            child.sendline("restart db")  # remembered: nobody is asked
            child.expect(re.escape("agent> ok: db restarted"))
            child.expect("you> ")
            child.sendline("how many?")
            child.expect(re.escape("agent> you said: hello there | restart web | restart db"))
            child.expect("you> ")
            child.sendintr()
            child.expect(re.escape(f"Rejoin with: scope-temporal chat talk --session {session}"))
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
        assert shown.getvalue().count("needs approval") == 1

        listing = run_cli(["sessions", "list"], env=env, cwd=project).stdout
        assert re.search(rf"{session}\s+running\s+talk", listing)
        show = run_cli(["sessions", "show", session], env=env, cwd=project).stdout
        assert f"session {session} (talk) · idle · 4 turn(s)" in show
        assert "── turn 2 · completed" in show and "    ↳ restart: web restarted" in show
        assert "  you: how many?" in show

        child, _ = spawn(env, str(project), "chat", "talk", "--session", session)
        try:
            child.expect(f"rejoined session {session}: 4 turn\\(s\\)")
            child.expect("you> ")
            child.sendline("/end")
            child.expect(f"session {session} ended")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
        assert child.exitstatus == 0
        ended = run_cli(["chat", "talk", "--session", session], env=env, cwd=project)
        assert ended.returncode == 1 and "has ended" in ended.stdout
        again = run_cli(["sessions", "end", session], env=env, cwd=project)
        assert again.returncode == 0, again.stdout + again.stderr
        # the ended session's events, every turn, then from a stored position
        followed = run_cli(["sessions", "follow", session], env=env, cwd=project)
        assert followed.returncode == 0, followed.stdout + followed.stderr
        out = followed.stdout
        assert [line for line in out.splitlines() if line.startswith("── turn")] == [
            f"── turn {n}" for n in (1, 2, 3, 4)
        ]
        assert "agent> you said: hello there" in out and "agent> ok: web restarted" in out
        assert out.rstrip().endswith(f"session {session} has ended")
        resumed = run_cli(["sessions", "follow", session, "--after", "4:-1"], env=env, cwd=project)
        assert "── turn 3" not in resumed.stdout and "── turn 4" in resumed.stdout
        ahead = run_cli(["sessions", "follow", session, "--after", "9:0"], env=env, cwd=project)
        assert ahead.returncode == 1 and "ahead of session" in ahead.stderr


def test_rejoining_follows_a_turn_still_waiting_for_approval(stack: Stack) -> None:
    session = f"chat-{uuid.uuid4().hex[:6]}"
    with app_worker(stack, "rejoin_app", CHAT_APP, "talk") as (env, project):
        child, _ = spawn(env, str(project), "chat", "talk", "--session", session)
        try:
            child.expect("you> ")
            child.sendline("restart api")
            child.expect(re.escape("approve? [y/a/n]> "))
            child.sendintr()  # leave while the turn waits for the approval
            child.expect("Rejoin with")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
        child, _ = spawn(env, str(project), "chat", "talk", "--session", session)
        try:
            child.expect("turn 1 is still running; following it")
            child.expect(re.escape('? restart needs approval: Allow restart(name="api")?'))
            child.expect(re.escape("approve? [y/a/n]> "))
            child.sendline("y")
            child.expect(re.escape("agent> ok: api restarted"))
            child.expect("you> ")
            child.sendline("/quit")
            child.expect("left the chat; the session stays")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
        assert child.exitstatus == 0

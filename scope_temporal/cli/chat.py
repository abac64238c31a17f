"""`scope-temporal chat`: an interactive chat in the terminal, one session, a turn per line.

Each line you type is sent to the session (`SessionHandle.send`); the turn it opens is
followed live as `run` follows an Interaction (streamed text, tool calls, approvals asked
inline as y/a/n), then its reply is printed. The session lives on the server: leaving
(Ctrl-C, Ctrl-D, /quit, a lost connection) changes nothing, and `--session ID` rejoins
it, following a turn that is still running.
"""

from __future__ import annotations

import asyncio
import shlex
import sys

import click

from scope_temporal.cli._answers import Terminal
from scope_temporal.cli._connect import Connection, connection_options, has_worker, runs_async
from scope_temporal.cli._follow import Follower
from scope_temporal.cli._render import shorten
from scope_temporal.client.session import SessionHandle, TurnHandle
from scope_temporal.errors import InteractionNotFound, ScopeError, SessionEnded

HELP_LINE = "type a message · /end ends the session · /quit (or Ctrl-D, Ctrl-C) leaves it"


@click.command(short_help="Chat with an agent in the terminal (a session: one turn a message).")
@click.argument("definition")
@click.option(
    "--session",
    "session_id",
    default=None,
    metavar="ID",
    help="The session to rejoin or create with this id (default: a new session).",
)
@click.option("--yes", is_flag=True, help="Approve approval requests automatically.")
@connection_options
@runs_async
async def chat(definition: str, session_id: str | None, yes: bool, connection: Connection) -> int:
    """Chat with DEFINITION: each line you type is a message to one session.

    A message opens a turn (an Interaction whose context is the conversation so far); the
    turn is followed live and its reply printed. A tool call that needs approval is asked
    inline: y approves once, a approves the tool for the rest of the session, n denies
    (a reason may follow). The session lives on the server: Ctrl-C or a lost connection
    changes nothing, and --session ID rejoins it (a running turn is followed again).

    \b
    Examples:
      scope-temporal chat ops
      scope-temporal chat ops --session ops-session-1a2b3c

    Exit code: 0 when you leave (/quit, Ctrl-D) or end the session, 130 on Ctrl-C, 1 when
    the session had ended already.
    """
    scope = await connection.scope()
    session = scope.session(definition, id=session_id)
    terminal = Terminal(auto_approve=yes)
    args = " ".join(shlex.quote(a) for a in connection.args())
    resume = f"scope-temporal chat {definition} --session {session.id}" + (
        f" {args}" if args else ""
    )
    if session_id is not None and not await _rejoin(session, definition, terminal, connection):
        return 1
    if await has_worker(scope.client, connection.task_queue) is False:
        click.echo(
            f"(no worker is serving task queue {connection.task_queue!r} yet: start one with "
            "scope-temporal worker; messages wait for it)"
        )
    click.echo(f"session {session.id} ({definition}) · {HELP_LINE}")
    try:
        while True:
            click.echo("you> ", nl=False)
            sys.stdout.flush()
            line = await terminal.readline()
            text = line.strip() if line is not None else "/quit"
            if not text:
                continue
            if text == "/quit":
                click.echo(f"\nleft the chat; the session stays. Rejoin with: {resume}")
                return 0
            if text == "/end":
                await session.end("ended from scope-temporal chat")
                click.echo(f"session {session.id} ended; its transcript stays readable")
                return 0
            try:
                turn = await session.send(text)
            except SessionEnded as error:
                raise click.ClickException(str(error)) from None
            except ScopeError as error:
                click.echo(f"  ✗ not sent: {error}")
                continue
            receipt = session.last_receipt
            if receipt is not None and receipt.disposition == "steered":
                click.echo("  (added to the running turn: it reads it before its next step)")
            await _follow(session, turn, terminal, connection)
    except asyncio.CancelledError:  # Ctrl-C
        click.echo(f"\nleft the chat; the session goes on. Rejoin with: {resume}")
        raise


async def _rejoin(
    session: SessionHandle, definition: str, terminal: Terminal, connection: Connection
) -> bool:
    """Show where the session is and follow its running turn; False if it has ended."""
    try:
        transcript = await session.transcript()
    except InteractionNotFound:
        return True  # a new session with this id: the first message starts it
    if transcript.definition != definition:
        raise click.ClickException(
            f"Session {session.id!r} runs {transcript.definition!r}, not {definition!r}: "
            f"rejoin it with scope-temporal chat {transcript.definition} --session {session.id}"
        )
    click.echo(
        f"rejoined session {session.id}: {len(transcript.turns)} turn(s), "
        f"{len(transcript.messages)} message(s) so far"
    )
    for message in transcript.messages[-4:]:
        if message.role in ("user", "assistant") and message.text.strip():
            who = "you" if message.role == "user" else "agent"
            click.echo(f"  {who}: {shorten(message.text.strip(), 100)}")
    if transcript.status in ("ended", "failed"):
        click.echo(f"session {session.id} has {transcript.status}; start a new one to chat")
        return False
    running = transcript.turns[-1] if transcript.turns else None
    if running is not None and running.status == "running":
        click.echo(f"turn {running.turn} is still running; following it")
        await _follow(session, session.turn(running.turn), terminal, connection)
    return True


async def _follow(
    session: SessionHandle, turn: TurnHandle, terminal: Terminal, connection: Connection
) -> None:
    """Follow one turn to its end and print its reply."""
    follower = Follower(turn, answer=terminal, command_args=connection.args())
    outcome = await follower.follow()
    session.saw_turn_end(turn.number)  # the next message opens a new turn
    if outcome.output is not None:
        click.echo("agent> " + (outcome.output.text.strip() or "(empty reply)"))
    else:
        click.echo(f"  ✗ turn {turn.number} {outcome.status}: {outcome.error}")


__all__ = ["chat"]

"""`scope-temporal sessions list | show | follow | end`: the sessions `chat` and apps
create."""

from __future__ import annotations

import asyncio

import click

from scope_temporal.cli._connect import Connection, run_async, runs_async, server_options
from scope_temporal.cli._follow import Follower
from scope_temporal.cli._render import call_label, shorten
from scope_temporal.cli.listing import echo_table, listing_options
from scope_temporal.errors import EventOffsetError, InteractionNotFound, ScopeError
from scope_temporal.interaction.session_stream import SessionPosition
from scope_temporal.interaction.session_values import SessionTranscript


@click.group(short_help="List sessions, show or follow one, end one.")
def sessions() -> None:
    """Sessions: conversations of turns (`scope-temporal chat`, `ScopeClient.session`).

    \b
    Examples:
      scope-temporal sessions list
      scope-temporal sessions show ops-session-1a2b3c
      scope-temporal sessions follow ops-session-1a2b3c
      scope-temporal sessions end ops-session-1a2b3c
    """


@sessions.command("list", short_help="The most recent sessions and their status.")
@listing_options("\"ExecutionStatus = 'Running'\" (running: taking messages)")
@runs_async
async def list_command(limit: int, query: str | None, connection: Connection) -> int:
    """List the most recent sessions (newest first): running ones take messages."""
    found = await (await connection.scope()).sessions(query=query, limit=limit)
    if not found:
        click.echo("no sessions yet (start one: scope-temporal chat ops)")
        return 0
    echo_table(
        ("ID", "STATUS", "DEFINITION", "STARTED"),
        [(i.id, i.status, i.definition or "?", i.start_time[:19].replace("T", " ")) for i in found],
    )
    return 0


@sessions.command("show", short_help="A session's transcript, turn by turn.")
@click.argument("session_id")
@server_options
@runs_async
async def show(session_id: str, connection: Connection) -> int:
    """Print the transcript of SESSION_ID turn by turn (a worker must be running: the
    transcript is read from the session itself)."""
    session = (await connection.scope()).get_session(session_id)
    try:
        transcript = await session.transcript()
    except InteractionNotFound as error:
        raise click.ClickException(str(error)) from None
    for line in transcript_lines(transcript):
        click.echo(line)
    return 0


def transcript_lines(transcript: SessionTranscript) -> list[str]:
    """The transcript as lines: a header, then each turn's messages."""
    lines = [
        f"session {transcript.session_id} ({transcript.definition}) · {transcript.status} · "
        f"{len(transcript.turns)} turn(s)"
    ]
    for record in transcript.turns:
        lines.append(
            f"── turn {record.turn} · {record.status}"
            + (f" ({record.code})" if record.code else "")
        )
        for message in transcript.turn_messages(record.turn):
            if message.role == "assistant" and message.tool_calls:
                calls = ", ".join(call_label(c, 24) for c in message.tool_calls)
                lines.append(f"  agent calls {calls}")
            elif message.role == "tool":
                for result in message.tool_results:
                    mark = "✗" if result.is_error else "↳"
                    lines.append(f"    {mark} {result.name}: {shorten(result.content, 90)}")
            elif message.text.strip():
                who = {"user": "you", "assistant": "agent"}.get(message.role, message.role)
                lines.append(f"  {who}: {shorten(message.text.strip(), 200)}")
    return lines


@sessions.command("follow", short_help="Print a session's events live, turn after turn.")
@click.argument("session_id")
@click.option(
    "--after",
    default=None,
    metavar="TURN:OFFSET",
    help="Resume after this position (printed when you leave); default: from turn 1.",
)
@server_options
def follow(session_id: str, after: str | None, connection: Connection) -> int:
    """Print what happens in SESSION_ID as it happens (streamed text, tool calls, waits,
    replies), every turn in order, waiting while it is idle, until the session ends.
    Ctrl-C leaves and prints the --after position to resume from."""
    return run_async(_follow(session_id, _position(after), connection))


def _position(after: str | None) -> SessionPosition | None:
    if after is None:
        return None
    turn, _, offset = after.partition(":")
    try:
        return SessionPosition(int(turn), int(offset))
    except ValueError:
        raise click.BadParameter(f"{after!r} is not TURN:OFFSET (e.g. 2:17)") from None


async def _follow(session_id: str, after: SessionPosition | None, connection: Connection) -> int:
    session = (await connection.scope()).get_session(session_id)
    follower: Follower | None = None
    last = after
    try:
        async for event in session.events(after=after):
            turn = event.turn or 0
            if follower is None or last is None or turn != last.turn:
                click.echo(f"── turn {turn}")
                follower = Follower(session.turn(turn), command_args=connection.args())
            outcome = await follower.show(event)
            last = SessionPosition(turn, event.offset)
            if outcome is not None and outcome.output is not None:
                click.echo("agent> " + (outcome.output.text.strip() or "(empty reply)"))
            elif outcome is not None:
                click.echo(f"  ✗ turn {turn} {outcome.status}: {outcome.error}")
    except (EventOffsetError, InteractionNotFound) as error:
        raise click.ClickException(str(error)) from None
    except asyncio.CancelledError:  # Ctrl-C
        where = f" --after {last.turn}:{last.offset}" if last is not None else ""
        click.echo(f"\nleft; resume with: scope-temporal sessions follow {session_id}{where}")
        raise
    click.echo(f"session {session_id} has ended")
    return 0


@sessions.command("end", short_help="End a session (its running turn is cancelled).")
@click.argument("session_id")
@click.option("--reason", default="ended from the command line", show_default=True)
@server_options
@runs_async
async def end(session_id: str, reason: str, connection: Connection) -> int:
    """End SESSION_ID: a running turn is cancelled, then it takes no more messages. Its
    transcript stays readable. Ending an ended session does nothing."""
    session = (await connection.scope()).get_session(session_id)
    try:
        await session.end(reason)
    except ScopeError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"session {session_id} ended")
    return 0


__all__ = ["end", "follow", "list_command", "sessions", "show", "transcript_lines"]

"""`scope-temporal inspect`: the tree snapshot of an Interaction, for people or machines."""

from __future__ import annotations

import json

import click
from temporalio.service import RPCError, RPCStatusCode

from scope_temporal.cli._connect import Connection, runs_async, server_options
from scope_temporal.cli._render import output_lines, render_tree
from scope_temporal.cli._snapshots import snapshot_or_none
from scope_temporal.client import InteractionHandle
from scope_temporal.errors import InteractionCanceled, InteractionFailed


@click.command("inspect", short_help="Show an Interaction as a tree (or --json).")
@click.argument("interaction_id")
@click.option("--json", "as_json", is_flag=True, help="Print the TreeSnapshot as JSON.")
@server_options
@runs_async
async def inspect_command(interaction_id: str, as_json: bool, connection: Connection) -> int:
    """Show INTERACTION_ID as a tree: model calls, tool calls and delegates with their
    results, open input waits (with the `answer` command), unknown effects (with the
    `resolve` command), and the output.

    The snapshot is a query answered by a worker; for a finished Interaction with no
    worker serving its task queue, the status and the output are read from its history.

    \b
    Examples:
      scope-temporal inspect ops-1a2b3c
      scope-temporal inspect ops-1a2b3c --json | jq .root.status
    """
    scope = await connection.scope()
    handle = scope.get_handle(interaction_id)
    tree = await snapshot_or_none(handle)
    if tree is None:
        return await _from_history(handle, as_json)
    if as_json:
        data = tree.model_dump(mode="json")
        data["status"] = tree.status
        data["scope_status"] = tree.scope_status  # what a person is needed for, tree-wide
        data["usage"] = tree.usage.model_dump(mode="json")  # the whole tree's tokens
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        for line in render_tree(tree, connection.args()):
            click.echo(line)
    return 0


async def _from_history(handle: InteractionHandle, as_json: bool) -> int:
    try:
        status = await handle.status()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise click.ClickException(f"no interaction {handle.id!r}") from None
        raise click.ClickException(str(error)) from None
    name = status.name.lower() if status else "unknown"
    if name == "running":
        raise click.ClickException(
            f"{handle.id} is running but no worker answered its snapshot query; start one "
            f"on its task queue (scope-temporal worker)"
        )
    data: dict[str, object] = {"id": handle.id, "status": name, "source": "history"}
    lines = [f"{handle.id} · {name} (from history: no worker answered the snapshot query)"]
    try:
        output = await handle.result()
    except (InteractionFailed, InteractionCanceled) as error:
        data["failure"] = {"code": error.code, "message": error.message}
        lines.append(f"  ✗ {error}")
    else:
        data["output"] = output.model_dump(mode="json")
        lines += ["  output:", *("    " + line for line in output_lines(output))]
    click.echo(json.dumps(data, indent=2, ensure_ascii=False) if as_json else "\n".join(lines))
    return 0

"""`scope-temporal setup`: register the SDK's search attributes on a cluster's namespace."""

from __future__ import annotations

import click
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.client import Client
from temporalio.service import RPCError

from scope_temporal.cli._connect import Connection, runs_async, server_options
from scope_temporal.names import SEARCH_ATTRIBUTES

_KEYWORD = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD


@click.command("setup", short_help="Register the search attributes on a cluster.")
@server_options
@runs_async
async def setup(connection: Connection) -> int:
    """Register ScopeDefinition and ScopeStatus (Keyword) on the namespace, once.

    With them, the Temporal UI and `scope-temporal list --needs-attention` find runs by
    Definition and by what they need from a person (waiting_input, unknown). Runs started
    before the attributes existed are not tracked. Safe to run again: attributes already
    registered are left as they are. `scope-temporal dev` registers them locally by itself.

    \b
    Examples:
      scope-temporal setup --address temporal.internal:7233 --namespace agents
    """
    client = await connection.client()
    registered = await _registered(client, connection)
    missing: dict[str, IndexedValueType.ValueType] = {}
    for key in SEARCH_ATTRIBUTES:
        found = registered.get(key.name)
        if found is None:
            missing[key.name] = _KEYWORD
        elif found != _KEYWORD:
            raise click.ClickException(
                f"search attribute {key.name} exists in namespace {connection.namespace!r} "
                f"with type {IndexedValueType.Name(found)}, not Keyword: scope-temporal cannot "
                "use it. Use another namespace, or remove the attribute "
                f"(temporal operator search-attribute remove --name {key.name}) and run "
                "setup again."
            )
        else:
            click.echo(f"{key.name}: already registered")
    if missing:
        try:
            await client.operator_service.add_search_attributes(
                AddSearchAttributesRequest(namespace=client.namespace, search_attributes=missing)
            )
        except RPCError as error:
            raise click.ClickException(_refused(connection, list(missing), error)) from None
        for name in missing:
            click.echo(f"{name}: registered (Keyword)")
    click.echo(f"namespace {connection.namespace!r} is ready for scope-temporal")
    return 0


async def _registered(
    client: Client, connection: Connection
) -> dict[str, IndexedValueType.ValueType]:
    try:
        response = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
    except RPCError as error:
        raise click.ClickException(
            _refused(connection, [k.name for k in SEARCH_ATTRIBUTES], error)
        ) from None
    return dict(response.custom_attributes)


def _refused(connection: Connection, names: list[str], error: RPCError) -> str:
    flags = " ".join(f"--name {name} --type Keyword" for name in names)
    return (
        f"the server refused to register search attributes in namespace "
        f"{connection.namespace!r}: {error.message}. Nothing was changed. Ask an operator "
        f"to run `temporal operator search-attribute create {flags}` (on Temporal Cloud: "
        "add them in the namespace's settings or with tcld), then start new runs."
    )


__all__ = ["setup"]

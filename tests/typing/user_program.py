"""A user's program, type-checked with `mypy --strict` by `tests/unit/test_static_checks.py`.

It must see the real types behind the public names (e.g. `OpenAIChatModel`, loaded lazily
at run time), not `object`. Never run; only checked.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import Client

from scope_temporal import (
    Definition,
    Message,
    Model,
    OpenAIChatModel,
    ScopeClient,
    ScopeWorker,
    ToolSet,
    tool,
)


@tool(permission="read")
def lookup(query: str) -> str:
    """Look something up."""
    return query


def build_model() -> Model:
    model = OpenAIChatModel("gpt-4o-mini", base_url="http://localhost:8000/v1", stream=True)
    name: str = model.model
    assert name
    return model


def build_worker(client: Client) -> ScopeWorker:
    agent = Definition(
        "agent", tools=ToolSet("t", [lookup]), model_heartbeat_timeout=timedelta(seconds=5)
    )
    return ScopeWorker(
        client, definitions=[agent], tools=[lookup], models={"default": build_model()}
    )


async def ask(scope: ScopeClient) -> str:
    handle = await scope.start("agent", [Message.user("hi")], id="user-program")
    return (await handle.result()).text

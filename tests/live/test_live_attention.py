"""Status for people on a real server: a root's `ScopeStatus` (and details line) says what
its whole tree needs from a person; `list --needs-attention` finds those runs; `setup`
registers the search attributes on a namespace (tests/live/test_cli_setup.py).

On Temporal the roll-up into the root's attribute is off for now (see the note in
workflows/interaction.py): the tree's status for people is read by query (`inspect`),
and ScopeStatus keeps following the root's lifecycle. These tests pin both.
"""

from __future__ import annotations

import time

from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    Delegate,
    ScriptedModel,
    reply,
    require_tool_input,
    settle_model_result,
    tool,
    tool_input_continuation,
)
from scope_temporal.names import STATUS_ATTRIBUTE
from tests.live.harness import eventually, serving

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
# How long a root may take to say what a child needs (a signal and an upsert away).
BOUND = 10.0


@tool(permission="write")
def deploy(version: str) -> str:
    """Deploy after a person said yes."""
    if tool_input_continuation() is None:
        require_tool_input(f"Deploy {version}?", SCHEMA)
    return f"deployed {version}"


async def scope_status(root: WorkflowHandle) -> str | None:
    return (await root.describe()).typed_search_attributes.get(STATUS_ATTRIBUTE)


async def details(root: WorkflowHandle) -> str:
    meta = await root.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    return meta.current_details


async def test_a_delegates_unknown_model_call_makes_the_root_say_unknown(
    temporal_env: WorkflowEnvironment,
) -> None:
    parent = Definition("lead", delegates=[Delegate("helper", "Helps", definition="helper")])
    helper = Definition("helper", model="child")
    models = {
        "default": ScriptedModel(
            [reply.tool_calls(("helper", {"task": "look"})), reply.text("done")]
        ),
        "child": ScriptedModel([TimeoutError("the worker was lost mid-call")]),
    }
    async with serving(temporal_env, [parent, helper], models=models) as scope:
        handle = await scope.start("lead", "go")
        root = temporal_env.client.get_workflow_handle(handle.id)
        started = time.monotonic()
        snap = await eventually(
            handle.snapshot, lambda s: s.scope_status == "unknown", timeout=BOUND
        )
        print(f"inspect said unknown {time.monotonic() - started:.2f}s after its start")
        [unknown] = snap.unknown_effects
        assert unknown.process_id == f"{handle.id}/delegate/1/0"
        assert snap.status == "waiting"  # inspect --json: not `running`
        # on Temporal the root's attribute follows its lifecycle for now (known gap)
        assert await scope_status(root) == "running"

        settlement = settle_model_result(
            unknown.request, reply.text("helped"), unknown.request.messages
        )
        await handle.resolve(unknown, settlement)
        assert (await handle.result()).text == "done"
        await eventually(lambda: scope_status(root), lambda s: s == "completed")
        assert handle.id not in [s.id for s in await scope.list(needs_attention=True)]


async def test_a_wait_in_a_tool_call_child_makes_the_root_wait_until_answered(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel([reply.tool_calls(("deploy", {"version": "v2"})), reply.text("ok")])
    definition = Definition("shipper", tools=[deploy])
    async with serving(temporal_env, [definition], tools=[deploy], models={"default": model}) as (
        scope
    ):
        handle = await scope.start("shipper", "ship v2")
        root = temporal_env.client.get_workflow_handle(handle.id)
        snap = await eventually(
            handle.snapshot, lambda s: s.scope_status == "waiting_input", timeout=BOUND
        )
        [pending] = snap.pending_tool_inputs
        assert snap.status == "waiting"
        assert (await details(root)).startswith("**running**")

        await handle.pause()
        await eventually(handle.snapshot, lambda s: s.root.status == "paused")
        assert (await handle.snapshot()).scope_status == "waiting_input"  # still a person
        await handle.answer(pending, "a1", {"ok": True})
        await eventually(lambda: scope_status(root), lambda s: s == "paused")
        await handle.resume()
        assert (await handle.result()).text == "ok"
        await eventually(lambda: scope_status(root), lambda s: s == "completed")

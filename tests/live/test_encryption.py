"""Payload encryption survives: the client's codec and failure converter are kept.

A worker and a client whose data converter carries a real AES-GCM codec run an Interaction
with a tool input wait, an unknown settled by the host, a delegate that fails (its
workflow's failure event quotes the provider's refusal) and a background task. Then every
history of the tree is read raw from the server, without the codec: none of the prompt,
arguments, answers, results, diagnostics, failure messages or replies is in it in
plaintext, while the same histories decoded with the codec do hold each of them (the
scan's control).
The CLI works against the run when told where the app's converter is.
"""

from __future__ import annotations

import asyncio
import base64
import re
import subprocess
import sys
import tempfile
import uuid
from typing import Any

from pydantic import BaseModel
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHistory
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    Delegate,
    HostFailure,
    LocalFileMaterializer,
    ModelRejected,
    ModelRequest,
    Response,
    RunHandle,
    RunProgress,
    ScopeClient,
    ScopeWorker,
    ScriptedModel,
    TaskRun,
    TreeSnapshot,
    background_tool,
    reply,
    require_tool_input,
    settle_tool_result,
    tool,
    tool_input_continuation,
)
from scope_temporal.chat import ToolResult
from scope_temporal.interaction.effects import ToolEffectRequest
from scope_temporal.testing.replay import replay_history
from tests.live import codec_app
from tests.live.harness import CONVERTER_BY_QUEUE, STARTED_IDS, eventually

MARK = uuid.uuid4().hex[:10]
SECRETS = {
    name: f"{name}-{MARK}"
    for name in (
        "prompt",
        "approve-arg",
        "answer",
        "approved-result",
        "flaky-arg",
        "diagnostic",
        "settled-result",
        "archive-arg",
        "archive-progress",
        "archive-result",
        "delegate-task",
        "delegate-failure",
        "final-reply",
    )
}


@tool(permission="read", execution="parallel")
async def approve(note: str) -> str:
    """Ask a person to approve a note."""
    continuation = tool_input_continuation()
    if continuation is None:
        require_tool_input(
            f"Approve {note}?",
            {"type": "object", "properties": {"ok": {"type": "string"}}, "required": ["ok"]},
        )
    _, response = continuation
    return f"{SECRETS['approved-result']} ({response['ok']})"


@tool(permission="read", execution="parallel")
async def flaky(kind: str) -> str:
    """Fails ambiguously."""
    raise HostFailure(SECRETS["diagnostic"])


class ArchiveArgs(BaseModel):
    note: str


class Archive:
    """Archive a note, in the background."""

    async def start(self, task_id: str, arguments: ArchiveArgs, attempt: int) -> RunHandle:
        async def work(progress: RunProgress) -> Any:
            progress.publish("p1", data={"progress": SECRETS["archive-progress"]})
            await asyncio.sleep(0.3)
            return {"archived": SECRETS["archive-result"]}

        return TaskRun(work)


archive = background_tool(permission="read", execution="parallel")(Archive)


def root_model(request: ModelRequest) -> Response:
    if request.model_call_seq == 1:
        return reply.tool_calls(
            ("approve", {"note": SECRETS["approve-arg"]}),
            ("flaky", {"kind": SECRETS["flaky-arg"]}),
            ("archive", {"note": SECRETS["archive-arg"], "run_in_background": True}),
            ("helper", {"task": SECRETS["delegate-task"]}),
        )
    if request.model_call_seq == 2:
        results = " ".join(
            part.result.content for part in request.messages[-1].parts if part.kind == "tool_result"
        )
        [task_id] = re.findall(r'"task_id": "([^"]+)"', results)
        return reply.tool_calls(("task_output", {"task_id": task_id, "wait_seconds": 10}))
    return reply.text(SECRETS["final-reply"])


VAULT = Definition(
    "vault",
    tools=[approve, flaky, archive],
    delegates=[Delegate("helper", "Helps.", definition="vault-helper")],
    max_concurrent_tool_calls=4,
    tool_call_workflows="always",
)
HELPER = Definition("vault-helper", model="helper")
ADDRESS: list[str] = []


def encrypted(client: Client) -> Client:
    config = client.config()
    config["data_converter"] = codec_app.data_converter
    return Client(**config)


async def tree_histories(client: Client, root_id: str) -> dict[str, WorkflowHistory]:
    histories: dict[str, WorkflowHistory] = {}
    async for execution in client.list_workflows(f"WorkflowId STARTS_WITH '{root_id}'"):
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        histories[f"{execution.id}@{execution.run_id}"] = await handle.fetch_history()
    return histories


def raw_bytes(history: WorkflowHistory) -> bytes:
    """Everything the server stores for a history, byte for byte (payloads, failures,
    summaries, details)."""
    return b"".join(event.SerializeToString() for event in history.events)


async def decoded_bytes(history: WorkflowHistory) -> bytes:
    """The history's payloads after the codec (what the worker reads)."""
    payloads: list[Payload] = []

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            if "data" in node and isinstance(node.get("metadata"), dict):
                payload = Payload(
                    metadata={k: base64.b64decode(v) for k, v in node["metadata"].items()},
                    data=base64.b64decode(node["data"]),
                )
                payloads.append(payload)
                return
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(history.to_json_dict())
    decoded = await codec_app.AesGcmCodec().decode(payloads)
    return b"".join(p.data for p in decoded)


async def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "scope_temporal.cli", *args, "--address", ADDRESS[0]],
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_an_encryption_codec_on_client_and_worker_keeps_every_payload_encrypted(
    temporal_env: WorkflowEnvironment,
) -> None:
    client = encrypted(temporal_env.client)
    ADDRESS[:] = [temporal_env.client.service_client.config.target_host]
    task_queue = f"enc-{uuid.uuid4().hex[:10]}"
    CONVERTER_BY_QUEUE[task_queue] = codec_app.data_converter
    models = {
        "default": ScriptedModel(root_model),
        # the delegate fails: its failure event carries the provider's message
        "helper": ScriptedModel([ModelRejected(SECRETS["delegate-failure"], status=400)]),
    }
    worker = ScopeWorker(
        client,
        task_queue=task_queue,
        definitions=[VAULT, HELPER],
        tools=[approve, flaky, archive],
        models=models,
        materializer=LocalFileMaterializer(tempfile.mkdtemp(prefix="tasks-")),
    )
    # the worker layered pydantic payloads onto the user's converter, codec kept
    assert worker.client.data_converter.payload_codec is codec_app.data_converter.payload_codec
    async with worker:
        scope = ScopeClient(client, task_queue=task_queue)
        handle = await scope.start("vault", SECRETS["prompt"], id=f"vault-{MARK}")
        STARTED_IDS.append(handle.id)

        def needs_host(snap: TreeSnapshot) -> bool:
            return bool(snap.pending_tool_inputs) and bool(snap.unknown_effects)

        snap = await eventually(handle.snapshot, needs_host)
        [pending] = snap.pending_tool_inputs
        await handle.answer(pending, "a1", {"ok": SECRETS["answer"]})
        [unknown] = snap.unknown_effects
        assert isinstance(unknown.request, ToolEffectRequest)
        assert SECRETS["diagnostic"] in unknown.diagnostic  # decoded for the host
        result = ToolResult(
            call_id=unknown.request.call.id, name="flaky", content=SECRETS["settled-result"]
        )
        await handle.resolve(unknown, settle_tool_result(unknown.request, result, "succeeded"))
        output = await handle.result()
        assert output.model_response is not None
        assert output.model_response.message.text == SECRETS["final-reply"]
        # the CLI reads the same run when told where the app's converter is
        cli = await run_cli(
            "inspect",
            handle.id,
            "--json",
            "--data-converter",
            "tests.live.codec_app:data_converter",
        )
        assert cli.returncode == 0, cli.stderr
        assert SECRETS["final-reply"] in cli.stdout
        # ...and says what to do when it is not
        blind = await run_cli("inspect", handle.id)
        assert blind.returncode == 1
        assert "--data-converter" in blind.stderr and "Traceback" not in blind.stderr

    histories = await tree_histories(temporal_env.client, handle.id)
    kinds = {key.split("@")[0].removeprefix(handle.id) for key in histories}
    assert "" in kinds and "/delegate/1/3" in kinds  # root and delegate
    assert any(k.startswith("/tool/") for k in kinds)  # ToolCall children
    assert any(k.startswith("/task/") for k in kinds)  # the background task
    # the delegate's failure is in its history, its message encoded with the payloads
    [failed] = [
        event.workflow_execution_failed_event_attributes.failure
        for key, history in histories.items()
        if "/delegate/" in key
        for event in history.events
        if event.HasField("workflow_execution_failed_event_attributes")
    ]
    assert failed.HasField("encoded_attributes"), "a failure message is in plaintext in history"
    assert SECRETS["delegate-failure"] not in failed.message
    raw = b"".join(raw_bytes(h) for h in histories.values())
    decoded = b"".join([await decoded_bytes(h) for h in histories.values()])
    leaked = [name for name, secret in SECRETS.items() if secret.encode() in raw]
    assert leaked == [], f"in plaintext in the server's history: {leaked}"
    # the control: each of them is in the histories, encrypted
    missing = [name for name, secret in SECRETS.items() if secret.encode() not in decoded]
    assert missing == []
    # every history replays with the codec
    for history in histories.values():
        replayed = await replay_history(
            history, [VAULT, HELPER], data_converter=codec_app.data_converter
        )
        assert replayed.replay_failure is None

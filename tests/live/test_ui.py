"""The Temporal UI of a dev server shows the interaction and its activity summaries.

Headless Chromium (Debian package `chromium`, installed by .ci/run) loads the workflow page
the demo prints; the test reads the rendered DOM and saves a screenshot in test-artifacts/.
"""

from __future__ import annotations

import asyncio
import html
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import ScopeClient, ScopeWorker
from scope_temporal.cli._app import load_app
from scope_temporal.cli.demo import ui_url
from scope_temporal.names import SEARCH_ATTRIBUTES
from scope_temporal.testing.devserver import DEV_SERVER_ARGS, temporal_cli_path
from tests.live.test_cli_dev import REPO, free_port

pytestmark = pytest.mark.live

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = REPO / "test-artifacts"


async def chromium(url: str, *mode: str) -> str:
    """Run headless Chromium on `url` with `mode` (`--dump-dom` or `--screenshot=...`)."""
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        process = await asyncio.create_subprocess_exec(
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=8000",
            f"--window-size=1400,{6000 if '--dump-dom' in mode else 1800}",
            *mode,
            url,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            out, _ = await asyncio.wait_for(process.communicate(), 60)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    return out.decode(errors="replace")


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium is not installed (apt-get install chromium; .ci/run installs it)",
)
async def test_ui_shows_the_interaction_and_its_activity_summaries() -> None:
    ui_port = free_port()
    env = await WorkflowEnvironment.start_local(
        ui=True,
        ui_port=ui_port,
        dev_server_existing_path=temporal_cli_path(),
        dev_server_extra_args=list(DEV_SERVER_ARGS),
        search_attributes=SEARCH_ATTRIBUTES,
    )
    try:
        app = load_app(None)
        queue = f"ui-{uuid.uuid4().hex[:6]}"
        async with ScopeWorker(
            env.client,
            task_queue=queue,
            definitions=app.definitions,
            tools=app.tools,
            models=app.models,
            mcp_servers=app.mcp_servers,
        ):
            scope = ScopeClient(env.client, task_queue=queue)
            handle = await scope.start(
                "ops", app.prompt or "investigate", id=f"ops-ui-{uuid.uuid4().hex[:6]}"
            )
            for _ in range(200):
                waits = (await handle.snapshot()).pending_tool_inputs
                if waits:
                    await handle.answer(waits[0], "ui-approval", {"approved": True, "note": ""})
                    break
                await asyncio.sleep(0.05)
            output = await handle.result()
            assert "Root cause:" in output.text

            url = ui_url(ui_port, handle.id)
            dom = html.unescape(await chromium(url, "--dump-dom"))
            ARTIFACTS.mkdir(exist_ok=True)
            screenshot = ARTIFACTS / "ui.png"
            screenshot.unlink(missing_ok=True)
            await chromium(url, f"--screenshot={screenshot}")
    finally:
        await env.shutdown()

    assert handle.id in dom, "the workflow page names the interaction"
    assert "scope.Interaction" in dom
    # the timeline renders the rows its window shows, and the root's event-stream signals
    # (its children's batches, `__temporal_workflow_stream_publish`) take many: the DOM is
    # read through a tall window
    assert "model #1: default" in dom, "the timeline shows the model activity's summary"
    assert 'tool search_logs(query="ERROR")' in dom, "and the ToolCall child's summary"
    assert "delegate summarize -> summarizer" in dom
    assert screenshot.is_file() and screenshot.stat().st_size > 10_000
    assert Path(screenshot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

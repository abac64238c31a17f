"""`scope-temporal worker --metrics HOST:PORT` (Prometheus, scraped over HTTP) and
`scope-temporal worker --otel` (spans by OTLP/HTTP, received by a collector of the test's
own)."""

from __future__ import annotations

import asyncio
import re
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from temporalio.testing import WorkflowEnvironment

from scope_temporal import ScopeClient
from scope_temporal.registry import Registry
from tests.live import loud_app
from tests.live.harness import REGISTRY_BY_QUEUE, STARTED_IDS, eventually
from tests.live.test_cli_dev import REPO, Proc, clean_env, free_port

pytestmark = pytest.mark.live


SAMPLE = re.compile(r"^(?P<name>[a-z_]+)\{(?P<labels>[^}]*)\} (?P<value>\S+)$")


def samples(text: str, name: str) -> dict[frozenset[tuple[str, str]], float]:
    """The samples of metric `name`, by their labels (Temporal's own labels left out)."""
    found: dict[frozenset[tuple[str, str]], float] = {}
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match is None or match["name"] != name:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match["labels"]))
        labels.pop("service_name", None)
        found[frozenset(labels.items())] = float(match["value"])
    return found


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
        body: bytes = page.read()
    return body.decode()


async def test_worker_metrics_flag_serves_scope_metrics_to_prometheus(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    port, queue = free_port(), f"metrics-{uuid.uuid4().hex[:6]}"
    REGISTRY_BY_QUEUE[queue] = Registry(loud_app.definitions)  # for the suite's replay test
    address = temporal_env.client.service_client.config.target_host
    env = clean_env(tmp_path, TEMPORAL_ADDRESS=address, SCOPE_TASK_QUEUE=queue)
    worker = Proc(
        ["worker", "--app", "tests.live.loud_app", "--metrics", f"127.0.0.1:{port}"],
        env=env,
        cwd=REPO,
    )
    try:
        await asyncio.to_thread(worker.wait_for, "ready; Ctrl-C to stop")
        assert "metrics: Prometheus" in worker.output
        handle = await ScopeClient(temporal_env.client, task_queue=queue).start("loud", "go")
        STARTED_IDS.append(handle.id)
        assert (await handle.result()).text == "done"

        async def page() -> str:
            return await asyncio.to_thread(scrape, port)

        text = await eventually(page, lambda t: "scope_tool_calls{" in t)
    finally:
        worker.stop()
    mine = frozenset({("definition", "loud"), ("model", "default")})
    assert samples(text, "scope_model_calls") == {mine | {("outcome", "succeeded")}: 2}
    assert samples(text, "scope_model_tokens") == {
        mine | {("token_type", "input")}: 14,
        mine | {("token_type", "output")}: 6,
    }
    assert samples(text, "scope_model_latency_count") == {mine | {("outcome", "succeeded")}: 2}
    assert samples(text, "scope_tool_calls") == {
        frozenset({("definition", "loud"), ("tool", "shout"), ("outcome", "succeeded")}): 1
    }
    assert "temporal_workflow_completed" in text  # Temporal's own, on the same endpoint


@contextmanager
def collector() -> Iterator[tuple[int, list[ExportTraceServiceRequest]]]:
    """An OTLP/HTTP trace receiver on a free local port: what it was sent, decoded."""
    received: list[ExportTraceServiceRequest] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path == "/v1/traces":
                received.append(ExportTraceServiceRequest.FromString(body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], received
    finally:
        server.shutdown()
        server.server_close()


async def test_worker_otel_flag_sends_the_spans_by_otlp(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    queue = f"otel-{uuid.uuid4().hex[:6]}"
    REGISTRY_BY_QUEUE[queue] = Registry(loud_app.definitions)  # for the suite's replay test
    address = temporal_env.client.service_client.config.target_host
    with collector() as (port, received):
        env = clean_env(
            tmp_path,
            TEMPORAL_ADDRESS=address,
            SCOPE_TASK_QUEUE=queue,
            OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
            OTEL_SERVICE_NAME="loud-worker",
            OTEL_BSP_SCHEDULE_DELAY="100",
        )
        worker = Proc(["worker", "--app", "tests.live.loud_app", "--otel"], env=env, cwd=REPO)
        try:
            await asyncio.to_thread(worker.wait_for, "ready; Ctrl-C to stop")
            assert f"tracing: OTLP/HTTP to http://127.0.0.1:{port}/v1/traces" in worker.output
            handle = await ScopeClient(temporal_env.client, task_queue=queue).start("loud", "go")
            STARTED_IDS.append(handle.id)
            await handle.result()

            async def names() -> list[str]:
                return [
                    span.name
                    for request in list(received)
                    for resource in request.resource_spans
                    for scope in resource.scope_spans
                    for span in scope.spans
                ]

            seen = await eventually(names, lambda n: "invoke_agent loud" in n)
        finally:
            worker.stop()
    assert sorted(seen) == [
        "chat default",
        "chat default",
        "execute_tool shout",
        "invoke_agent loud",
    ]
    [resource] = {
        attribute.value.string_value
        for request in received
        for resource in request.resource_spans
        for attribute in resource.resource.attributes
        if attribute.key == "service.name"
    }
    assert resource == "loud-worker"

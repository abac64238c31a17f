"""`scope-temporal setup` on a namespace without the search attributes, and what
`list --needs-attention` says before and after."""

from __future__ import annotations

import uuid
from pathlib import Path

from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.testing import WorkflowEnvironment

from tests.live.harness import eventually
from tests.live.test_cli_dev import clean_env, run_cli


async def test_setup_registers_the_search_attributes_and_list_says_what_is_missing(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = temporal_env.client
    namespace = f"setup-{uuid.uuid4().hex[:6]}"
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=namespace, workflow_execution_retention_period=Duration(seconds=86400)
        )
    )
    address = client.service_client.config.target_host
    env = clean_env(tmp_path)

    def cli(*args: str) -> tuple[int, str]:
        done = run_cli(
            [*args, "--address", address, "--namespace", namespace], env=env, cwd=tmp_path
        )
        return done.returncode, done.stdout + done.stderr

    async def listed() -> tuple[int, str]:
        return cli("list", "--needs-attention")

    # a new namespace: usable once the server's namespace cache has it
    code, out = await eventually(listed, lambda r: "has no ScopeStatus" in r[1], timeout=30)
    assert code == 1 and "scope-temporal setup" in out and "Traceback" not in out

    code, out = cli("setup")
    assert code == 0, out
    assert "ScopeDefinition: registered (Keyword)" in out
    assert "ScopeStatus: registered (Keyword)" in out
    code, out = cli("setup")  # again: nothing to do
    assert code == 0 and "ScopeStatus: already registered" in out
    code, out = await eventually(listed, lambda r: r[0] == 0, timeout=30)
    assert "no interaction needs a person" in out

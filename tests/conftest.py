"""Session fixtures: one real Temporal dev server for the whole run."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.testing import WorkflowEnvironment

from scope_temporal.names import SEARCH_ATTRIBUTES
from scope_temporal.testing.devserver import DEV_SERVER_ARGS, temporal_cli_path


@pytest.fixture(scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli_path(),
        dev_server_extra_args=list(DEV_SERVER_ARGS),
        search_attributes=SEARCH_ATTRIBUTES,
    )
    try:
        yield env
    finally:
        await env.shutdown()

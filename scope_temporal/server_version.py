"""The oldest Temporal server scope-temporal runs on, and the check a worker makes at start.

A worker asks the server for its version (`GetSystemInfo`) before it polls, and refuses a
server older than `MINIMUM_SERVER_VERSION` with a `ConfigurationError` naming the version
and what needs the newer one, instead of failing later, mid-Interaction, on the first
session message or versioned deploy. docker/docker-compose.yml pins a server at least this
new (tests/unit/test_server_version.py checks both).
"""

from __future__ import annotations

import re

from temporalio.api.workflowservice.v1 import GetSystemInfoRequest, GetSystemInfoResponse
from temporalio.client import Client

from scope_temporal.errors import ConfigurationError

MINIMUM_SERVER_VERSION = (1, 28, 0)
"""The oldest server release the SDK supports."""

NEEDS_MINIMUM = (
    "Worker Versioning with pinned workflows (ScopeWorker(deployment=..., build_id=...)), "
    "and update-with-start (sessions: ScopeClient.session(...).send, scope-temporal chat)"
)
"""What the SDK uses that older servers lack or keep behind dynamic config."""

_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def parse_server_version(text: str) -> tuple[int, int, int] | None:
    """`(major, minor, patch)` of a server version string ("1.28.1", "v1.29.0-rc.1"), or
    None when the string names no version (the server did not say)."""
    match = _VERSION.match(text.strip())
    if match is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def check_server_version(info: GetSystemInfoResponse) -> None:
    """Refuse a server older than `MINIMUM_SERVER_VERSION`; a server that reports no
    version is let through (nothing proves it too old).

    Raises:
        ConfigurationError: the server reports an older version (code
            `interaction.configuration.invalid`), naming it and what needs more.
    """
    version = parse_server_version(info.server_version)
    if version is not None and version < MINIMUM_SERVER_VERSION:
        wanted = ".".join(map(str, MINIMUM_SERVER_VERSION))
        raise ConfigurationError(
            f"The Temporal server runs {info.server_version}; scope-temporal needs "
            f"{wanted} or newer for {NEEDS_MINIMUM}. Upgrade the server (docker/"
            "docker-compose.yml pins a supported one), or use `scope-temporal dev`."
        )


async def ensure_supported_server(client: Client) -> None:
    """Ask the server for its version (`GetSystemInfo`) and check it.

    Raises:
        ConfigurationError: as `check_server_version`.
    """
    info = await client.workflow_service.get_system_info(GetSystemInfoRequest())
    check_server_version(info)

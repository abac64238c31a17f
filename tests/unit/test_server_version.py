"""The oldest Temporal server the SDK runs on is declared once, a worker refuses an older
one at start (against a fake `GetSystemInfo` reply), and the compose file pins a server,
admin tools and UI that support everything the docs describe."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from temporalio.api.workflowservice.v1 import GetSystemInfoResponse

from scope_temporal import ConfigurationError, ScopeWorker
from scope_temporal.server_version import (
    MINIMUM_SERVER_VERSION,
    check_server_version,
    ensure_supported_server,
    parse_server_version,
)

REPO = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((REPO / "docker" / "docker-compose.yml").read_text())
DYNAMIC = yaml.safe_load((REPO / "docker" / "dynamicconfig" / "development-sql.yaml").read_text())
MINIMUM_UI = (2, 38, 0)  # Worker Deployments in the UI (docs/deploy.md walks through them)


class FakeService:
    def __init__(self, version: str) -> None:
        self.version = version
        self.asked = 0

    async def get_system_info(self, request: Any) -> GetSystemInfoResponse:
        self.asked += 1
        return GetSystemInfoResponse(server_version=self.version)


def fake_client(version: str) -> Any:
    return SimpleNamespace(workflow_service=FakeService(version))


@pytest.mark.parametrize("text", ["1.27.2", "v1.20.0", "1.27.99-rc.1"])
def test_a_server_older_than_the_minimum_is_refused_naming_version_and_feature(
    text: str,
) -> None:
    with pytest.raises(ConfigurationError) as refused:
        check_server_version(GetSystemInfoResponse(server_version=text))
    message = str(refused.value)
    assert text in message and "1.28.0 or newer" in message
    assert "Worker Versioning" in message and "update-with-start" in message
    assert refused.value.code == "interaction.configuration.invalid"


@pytest.mark.parametrize("text", ["1.28.0", "1.31.0", "1.32.0", "2.0.0", ""])
def test_a_supported_server_or_one_that_names_no_version_is_let_through(text: str) -> None:
    check_server_version(GetSystemInfoResponse(server_version=text))


async def test_the_worker_asks_the_server_before_it_polls_and_refuses_an_old_one() -> None:
    client = fake_client("1.27.2")
    worker = ScopeWorker.__new__(ScopeWorker)  # only what the start touches first
    worker.client = client
    worker.worker = worker._adopter = None  # polling would fail on these: never reached
    with pytest.raises(ConfigurationError, match=r"runs 1\.27\.2"):
        await worker.__aenter__()
    with pytest.raises(ConfigurationError, match=r"runs 1\.27\.2"):
        await worker.run()
    assert client.workflow_service.asked == 2
    await ensure_supported_server(fake_client("1.28.0"))  # and lets a supported one through


def _tag(service: str) -> tuple[int, int, int]:
    image = COMPOSE["services"][service]["image"]
    default = image.rsplit(":-", 1)[1].rstrip("}")  # "${TEMPORAL_VERSION:-1.31.0}"
    version = parse_server_version(default)
    assert version is not None, image
    return version


def test_the_compose_file_pins_a_supported_server_set_up_by_admin_tools() -> None:
    services = COMPOSE["services"]
    assert services["temporal"]["image"].startswith("temporalio/server:")
    assert _tag("temporal") >= MINIMUM_SERVER_VERSION
    assert services["temporal-schema"]["image"].startswith("temporalio/admin-tools:")
    assert _tag("temporal-schema") == _tag("temporal") == _tag("register")
    assert services["temporal"]["depends_on"]["temporal-schema"] == {
        "condition": "service_completed_successfully"
    }
    assert not any("auto-setup" in str(s.get("image", "")) for s in services.values())
    assert _tag("temporal-ui") >= MINIMUM_UI


def test_the_compose_servers_dynamic_config_turns_on_what_the_sdk_uses() -> None:
    for key in (
        "frontend.enableUpdateWorkflowExecution",
        "frontend.enableExecuteMultiOperation",
        "system.enableDeploymentVersions",
        "frontend.workerVersioningWorkflowAPIs",
    ):
        assert DYNAMIC[key] == [{"value": True, "constraints": {}}], key

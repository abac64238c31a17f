"""docker/: the compose file validates, and the worker image runs `scope-temporal worker`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker" / "docker-compose.yml"


def _compose_available() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(
    not _compose_available(),
    reason="`docker compose` (the compose plugin of the docker client) is not installed here",
)
def test_compose_file_validates() -> None:
    done = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), "config", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout)
    services = config["services"]
    assert set(services) == {"postgresql", "temporal", "register", "temporal-ui", "worker"}
    assert services["temporal"]["image"].startswith("temporalio/auto-setup:")
    assert services["temporal"]["environment"]["DB"] == "postgres12"
    assert services["temporal-ui"]["image"].startswith("temporalio/ui:")
    worker = services["worker"]
    assert worker["build"]["dockerfile"] == "docker/Dockerfile"
    assert Path(worker["build"]["context"]) == REPO
    assert worker["environment"]["TEMPORAL_ADDRESS"] == "temporal:7233"


def test_compose_file_names_the_services_and_the_worker_image() -> None:
    text = COMPOSE.read_text()
    for needle in (
        "image: temporalio/auto-setup:",
        "image: temporalio/ui:",
        "postgres",
        "dockerfile: docker/Dockerfile",
        "SCOPE_TASK_QUEUE: scope",
        "--name ScopeDefinition --type Keyword --name ScopeStatus --type Keyword",
    ):
        assert needle in text
    assert (REPO / "docker" / "dynamicconfig" / "development-sql.yaml").is_file()


def test_the_image_serves_the_reference_app_with_the_cli() -> None:
    dockerfile = (REPO / "docker" / "Dockerfile").read_text()
    assert 'CMD ["scope-temporal", "worker"]' in dockerfile
    for folder in ("scope_temporal", "workflows", "activities"):
        assert f"COPY {folder} ./{folder}" in dockerfile
    ignore = [
        line
        for line in (REPO / "docker" / "Dockerfile.dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert ignore[0] == "**" and "!activities/**" in ignore

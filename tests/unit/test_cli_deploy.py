"""docker/: the compose file validates, and the worker image runs `scope-temporal worker`."""

from __future__ import annotations

import json
import re
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
    assert set(services) == {
        "postgresql",
        "temporal-schema",
        "temporal",
        "register",
        "temporal-ui",
        "worker",
    }
    # the schema is set up by admin-tools before the server starts (no auto-setup image)
    assert services["temporal-schema"]["image"].startswith("temporalio/admin-tools:")
    assert services["temporal"]["depends_on"]["temporal-schema"]["condition"] == (
        "service_completed_successfully"
    )
    assert services["temporal"]["image"].startswith("temporalio/server:")
    assert services["temporal"]["environment"]["DB"] == "postgres12"
    assert services["temporal-ui"]["image"].startswith("temporalio/ui:")
    worker = services["worker"]
    assert worker["build"]["dockerfile"] == "docker/Dockerfile"
    assert Path(worker["build"]["context"]) == REPO
    assert worker["environment"]["TEMPORAL_ADDRESS"] == "temporal:7233"


@pytest.mark.skipif(
    not _compose_available(),
    reason="`docker compose` (the compose plugin of the docker client) is not installed here",
)
def test_compose_observability_profile_validates() -> None:
    profile = ["--profile", "observability"]
    done = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), *profile, "config", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    services = json.loads(done.stdout)["services"]
    assert {"jaeger", "prometheus", "worker-otel"} <= set(services)
    traced = services["worker-otel"]
    assert traced["build"]["args"]["EXTRAS"] == "[otel]"
    assert traced["command"] == ["scope-temporal", "worker", "--otel", "--metrics", "0.0.0.0:9464"]
    assert traced["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://jaeger:4318"
    assert traced["environment"]["TEMPORAL_ADDRESS"] == "temporal:7233"  # from `worker`


def test_compose_observability_profile_is_opt_in() -> None:
    """Without Docker: the profile's services are all marked, the worker's `extends` names
    the plain worker, and Prometheus scrapes the traced worker's metrics port."""
    text = COMPOSE.read_text()
    for service in ("worker-otel", "jaeger", "prometheus"):
        block = re.split(r"\n  \S", text.split(f"\n  {service}:\n", 1)[1], maxsplit=1)[0]
        assert 'profiles: ["observability"]' in block, service
    assert "extends:\n      service: worker" in text
    assert "--otel" in text and '"0.0.0.0:9464"' in text
    scrape = (REPO / "docker" / "prometheus.yml").read_text()
    assert 'targets: ["worker-otel:9464"]' in scrape


def test_compose_storage_is_shared_by_the_workers_and_minio_is_opt_in() -> None:
    """Without Docker: every worker replica offloads to one volume its user may write, and
    the MinIO services run only with the `storage` profile."""
    text = COMPOSE.read_text()
    assert "SCOPE_STORAGE: /payloads" in text and "- payloads:/payloads" in text
    assert "chown scope /payloads" in (REPO / "docker" / "Dockerfile").read_text()
    for service in ("minio", "minio-bucket"):
        block = re.split(r"\n  \S", text.split(f"\n  {service}:\n", 1)[1], maxsplit=1)[0]
        assert 'profiles: ["storage"]' in block, service
    assert "mc mb --ignore-existing local/scope-payloads" in text


def test_compose_file_names_the_services_and_the_worker_image() -> None:
    text = COMPOSE.read_text()
    for needle in (
        "image: temporalio/server:",
        "image: temporalio/admin-tools:",
        "image: temporalio/ui:",
        "postgres",
        "dockerfile: docker/Dockerfile",
        "SCOPE_TASK_QUEUE: scope",
        "--name ScopeDefinition --type Keyword --name ScopeStatus --type Keyword",
        # workers by role, and a tool pool on its own task queue
        'profiles: ["pools"]',
        'command: ["scope-temporal", "worker", "--role", "workflows"]',
        "SCOPE_TASK_QUEUE: scope-tools",
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

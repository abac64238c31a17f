"""Worker Versioning options: both names or neither; the workflows are pinned."""

from __future__ import annotations

import pytest
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion

from scope_temporal import ConfigurationError
from scope_temporal.versioning import pinned_deployment


def test_a_version_pins_the_workflows_it_serves() -> None:
    config = pinned_deployment("agents", "2f9c1e0")
    assert config is not None
    assert config.version == WorkerDeploymentVersion("agents", "2f9c1e0")
    assert config.use_worker_versioning
    assert config.default_versioning_behavior == VersioningBehavior.PINNED


def test_without_a_version_the_worker_is_unversioned() -> None:
    assert pinned_deployment(None, None) is None


@pytest.mark.parametrize(
    ("deployment", "build_id"), [("agents", None), (None, "7"), ("", "7"), ("agents", "")]
)
def test_half_a_version_is_refused(deployment: str | None, build_id: str | None) -> None:
    with pytest.raises(ConfigurationError, match="both a deployment name and a build id"):
        pinned_deployment(deployment, build_id)


def test_a_deployment_name_with_a_dot_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"holds a '\.'"):
        pinned_deployment("agents.eu", "7")

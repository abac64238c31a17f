"""The README's "Use it from your app" program runs as written against a real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

ROOT = Path(__file__).resolve().parents[2]


def readme_block(heading: str) -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index(heading) :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, f"no python block under {heading}"
    return match.group(1)


async def test_use_it_from_your_app_runs_as_written(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    script = tmp_path / "app.py"
    script.write_text(readme_block("## Use it from your app"))
    env = {**os.environ, "TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host}
    result = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "web-1 restarted; on-call paged. (2 model calls)" in result.stdout

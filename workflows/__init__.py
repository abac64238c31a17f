"""The reference app: what a user of scope-temporal writes.

`workflows/` holds the agents (Definitions), `activities/` the tools and models. This module
is the app entry point the worker loads (`scope-temporal worker --app workflows`, the
default): it exposes `definitions`, `tools`, `mcp_servers` and `build_models()`. The SDK
never imports it.
"""

from activities import mcp_servers, tools
from activities.models import build_models
from workflows.ops import ops, require_root_cause
from workflows.summarizer import summarizer

definitions = [ops, summarizer]

DEMO_PROMPT = (
    "checkout is returning 502 errors since 09:12 UTC. Investigate, fix it if it is safe, "
    "and report the root cause."
)

__all__ = [
    "DEMO_PROMPT",
    "build_models",
    "definitions",
    "mcp_servers",
    "ops",
    "require_root_cause",
    "summarizer",
    "tools",
]

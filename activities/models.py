"""The reference app's models: the offline planner, or a real model from the environment.

`build_models()` is what the worker calls. With none of the variables below set it serves
the offline rule-based planner; set one and the same app talks to an OpenAI-compatible
endpoint, with no code change:

- `OPENAI_API_KEY`: use OpenAI (model `SCOPE_MODEL`, default gpt-4o-mini);
- `SCOPE_MODEL_BASE_URL` (+ `SCOPE_MODEL`): any OpenAI-compatible server (vLLM, Ollama,
  llama.cpp server...).

Both stream their replies, which `scope-temporal run` shows as they arrive. Keys stay on
the worker: they never enter a workflow's input or history.
"""

from __future__ import annotations

import os

from activities.planner import LABEL, plan
from scope_temporal import Model, ScriptedModel


def build_models() -> dict[str, Model]:
    """Models by the name the Definitions use (`model="default"`)."""
    base_url = os.environ.get("SCOPE_MODEL_BASE_URL") or None
    name = os.environ.get("SCOPE_MODEL") or None
    if os.environ.get("OPENAI_API_KEY") or base_url or name:
        from scope_temporal import OpenAIChatModel

        chosen = name or "gpt-4o-mini"
        real = OpenAIChatModel(chosen, base_url=base_url, stream=True)
        real.label = f"OpenAI-compatible model {chosen} at {base_url or 'api.openai.com'}"  # type: ignore[attr-defined]
        return {"default": real}
    planner = ScriptedModel(plan, stream_delay=0.01)  # replies stream word by word
    planner.label = LABEL  # type: ignore[attr-defined]
    return {"default": planner}

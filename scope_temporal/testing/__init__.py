"""Test kit shipped with the SDK: run agents without Temporal, script models, and serve
a real chat-completions endpoint on loopback (`ChatCompletionsServer`)."""

from scope_temporal.models.scripted import ScriptedModel
from scope_temporal.testing.local import LocalRun, LocalRunner
from scope_temporal.testing.model_server import (
    ChatCompletionsServer,
    ReceivedRequest,
    refused_base_url,
    unreachable_base_url,
)
from scope_temporal.testing.model_steps import (
    CutStream,
    Drop,
    ErrorReply,
    Hang,
    Paced,
    RawReply,
    RawStream,
    Step,
)

__all__ = [
    "ChatCompletionsServer",
    "CutStream",
    "Drop",
    "ErrorReply",
    "Hang",
    "LocalRun",
    "LocalRunner",
    "Paced",
    "RawReply",
    "RawStream",
    "ReceivedRequest",
    "ScriptedModel",
    "Step",
    "refused_base_url",
    "unreachable_base_url",
]

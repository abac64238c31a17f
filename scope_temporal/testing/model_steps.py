"""What `ChatCompletionsServer` answers to one request: the steps of its script.

A `Response` (built with `scope_temporal.models.reply`) is answered as the client asked:
one chat-completion JSON body, or, for `"stream": true`, server-sent events in chunked
transfer encoding (the role, the text word by word, each tool call's id and name then its
arguments in two pieces, the finish reason, a usage chunk when `stream_options.
include_usage` is set, and `[DONE]`), as vLLM, llama.cpp and OpenAI send them.

The other steps are the ways a real endpoint fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scope_temporal.chat import FinishReason, Response

__all__ = [
    "CutStream",
    "Drop",
    "ErrorReply",
    "Hang",
    "Paced",
    "RawReply",
    "RawStream",
    "Step",
    "completion_body",
    "sse_event",
    "stream_chunks",
]


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error with an OpenAI error body:
    `{"error": {"message": ..., "type": ..., "param": null, "code": ...}}`."""

    status: int
    message: str = "error"
    type: str = "invalid_request_error"
    code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra response headers, e.g. `{"Retry-After": "2"}`."""

    def body(self) -> dict[str, Any]:
        error = {"message": self.message, "type": self.type, "param": None, "code": self.code}
        return {"error": error}


@dataclass(frozen=True)
class RawReply:
    """Exactly these bytes with this status (a garbled body, an HTML error page...)."""

    status: int = 200
    body: bytes | str = b""
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RawStream:
    """Server-sent events exactly as given (a mapping is sent as JSON), then `[DONE]`
    unless `done` is false; the stream ends properly either way."""

    events: Sequence[str | Mapping[str, Any]]
    done: bool = True


@dataclass(frozen=True)
class Paced:
    """`response`, with `delay` seconds before each streamed piece (before the whole
    body when not streamed): a host can watch the text arrive."""

    response: Response
    delay: float


@dataclass(frozen=True)
class CutStream:
    """The first `after` pieces of `response`'s stream, then the connection closes with
    the chunked body unfinished (a server that died mid-reply). Not streamed: the
    headers and half the body."""

    response: Response
    after: int = 1


@dataclass(frozen=True)
class Hang:
    """Read the whole request, then never answer (until the server stops)."""


@dataclass(frozen=True)
class Drop:
    """Read the whole request, then close the connection without a byte of answer."""


Step = Response | ErrorReply | RawReply | RawStream | Paced | CutStream | Hang | Drop
"""One scripted answer."""


def completion_body(response: Response, model: str) -> dict[str, Any]:
    """`response` as a non-streamed chat-completion body."""
    message: dict[str, Any] = {"role": "assistant", **_content(response)}
    calls = response.message.tool_calls
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in calls
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": response.model or model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(response)}],
    }
    if response.usage is not None:
        body["usage"] = _usage(response)
    return body


def stream_chunks(response: Response, model: str, *, include_usage: bool) -> list[dict[str, Any]]:
    """`response` as the chat-completion chunks of a stream (without `[DONE]`)."""
    name = response.model or model

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-loopback",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": name,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    content = _content(response)
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [
        chunk({"content": word}) for word in re.findall(r"\S+\s*|\s+", content["content"] or "")
    ]
    if content.get("refusal"):
        chunks.append(chunk({"refusal": content["refusal"]}))
    for index, call in enumerate(response.message.tool_calls):
        head = {"index": index, "id": call.id, "type": "function"}
        chunks.append(
            chunk({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
        )
        half = len(call.arguments) // 2
        for piece in (call.arguments[:half], call.arguments[half:]):
            chunks.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    chunks.append(chunk({}, _finish(response)))
    if include_usage and response.usage is not None:
        chunks.append({**chunk({}), "choices": [], "usage": _usage(response)})
    return chunks


def _content(response: Response) -> dict[str, Any]:
    text = response.message.text or None
    if response.finish_reason is FinishReason.refusal:
        return {"content": None, "refusal": text}
    return {"content": text}


def _finish(response: Response) -> str:
    # A refusal travels as the message's `refusal` field with an ordinary stop.
    reason = response.finish_reason
    return "stop" if reason is FinishReason.refusal else reason.value


def _usage(response: Response) -> dict[str, int]:
    assert response.usage is not None
    used = response.usage
    return {
        "prompt_tokens": used.input_tokens,
        "completion_tokens": used.output_tokens,
        "total_tokens": used.input_tokens + used.output_tokens,
    }


def sse_event(data: str | Mapping[str, Any]) -> bytes:
    """One server-sent event carrying `data` (a mapping is sent as JSON)."""
    text = data if isinstance(data, str) else json.dumps(data)
    return f"data: {text}\n\n".encode()

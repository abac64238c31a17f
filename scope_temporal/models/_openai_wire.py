"""The chat-completions wire format: our values to request JSON, response JSON to ours.

Pure functions, no I/O and no runtime import of `openai` (its TypedDicts are used for
type checking only), so the mapping is testable on its own.

Inbound JSON is validated here rather than trusted: the `openai` client builds its
response objects without validation, so a body missing `choices` would otherwise turn
into attribute errors or, worse, a made-up empty reply. Anything structurally wrong
raises `InvalidModelResponse`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scope_temporal.chat import (
    FinishReason,
    Message,
    Options,
    Response,
    TextPart,
    ToolCall,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from scope_temporal.models.errors import InvalidModelResponse
from scope_temporal.models.protocol import ToolDefinition

if TYPE_CHECKING:
    from openai.types.chat import (
        ChatCompletionFunctionToolParam,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
    )

__all__ = [
    "StreamAccumulator",
    "finish_reason",
    "options_to_wire",
    "parse_completion",
    "to_wire_messages",
    "to_wire_tools",
]

_FINISH_REASONS: Mapping[str, FinishReason] = {
    "stop": FinishReason.stop,
    "tool_calls": FinishReason.tool_calls,
    # Deprecated name for the same thing; some servers still send it.
    "function_call": FinishReason.tool_calls,
    "length": FinishReason.length,
    "content_filter": FinishReason.content_filter,
    "refusal": FinishReason.refusal,
}


# --- outbound ------------------------------------------------------------------------


def to_wire_messages(messages: tuple[Message, ...]) -> list[ChatCompletionMessageParam]:
    """Convert messages to chat-completions messages, in order.

    A tool message becomes one `tool` message per result (the wire format has no batch);
    `is_error` has no wire field, the result's content already tells the model.
    An assistant message carries its text (null when it only calls tools) and its calls
    with their raw argument text.

    Raises:
        ValueError: a part the role cannot carry on the wire (e.g. a tool call in a user
            message); nothing is silently dropped.
    """
    wire: list[ChatCompletionMessageParam] = []
    for index, message in enumerate(messages):
        if message.role == "tool":
            _only(message, index, ToolResultPart)
            wire.extend(
                {"role": "tool", "tool_call_id": r.call_id, "content": r.content}
                for r in message.tool_results
            )
        elif message.role == "assistant":
            _only(message, index, TextPart, ToolCallPart)
            wire.append(_assistant(message))
        elif message.role == "system":
            _only(message, index, TextPart)
            wire.append({"role": "system", "content": message.text})
        else:
            _only(message, index, TextPart)
            wire.append({"role": "user", "content": message.text})
    return wire


def to_wire_tools(tools: tuple[ToolDefinition, ...]) -> list[ChatCompletionFunctionToolParam]:
    """Convert the tool manifest to `function` tools, in order."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]


def options_to_wire(options: Options) -> dict[str, Any]:
    """The options that are set (None dropped), extra provider options included."""
    return options.model_dump(exclude_none=True)


def _assistant(message: Message) -> ChatCompletionMessageParam:
    calls: list[ChatCompletionMessageFunctionToolCallParam] = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments},
        }
        for c in message.tool_calls
    ]
    if not calls:
        return {"role": "assistant", "content": message.text}
    return {"role": "assistant", "content": message.text or None, "tool_calls": calls}


def _only(message: Message, index: int, *kinds: type[BaseModel]) -> None:
    for part in message.parts:
        if not isinstance(part, kinds):
            raise ValueError(
                f"message {index} ({message.role}) holds a {part.kind!r} part, "
                "which the chat-completions format cannot carry in that role"
            )


# --- inbound -------------------------------------------------------------------------


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Function(_Wire):
    name: str
    arguments: str


class _ToolCall(_Wire):
    id: str
    function: _Function


class _Message(_Wire):
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(_Wire):
    message: _Message
    finish_reason: str | None = None


class _Usage(_Wire):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class _Completion(_Wire):
    choices: list[_Choice] = Field(min_length=1)
    model: str | None = None
    usage: _Usage | None = None


def finish_reason(raw: str | None) -> FinishReason:
    """Map a wire finish reason; unknown or missing reasons become `other`."""
    return _FINISH_REASONS.get(raw or "", FinishReason.other)


def parse_completion(body: str | bytes) -> Response:
    """Parse a non-streamed chat-completions body into a Response (first choice).

    A `refusal` on the message makes the finish reason `refusal` and, when there is no
    other content, the refusal text becomes the message text.

    Raises:
        InvalidModelResponse: the body is not JSON or is not a chat completion.
    """
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise InvalidModelResponse(f"model response is not JSON: {_excerpt(body)}") from exc
    try:
        completion = _Completion.model_validate(data)
    except ValidationError as exc:
        raise InvalidModelResponse(
            f"model response is not a chat completion ({_errors(exc)}): {_excerpt(body)}"
        ) from exc
    choice = completion.choices[0]
    calls = [
        ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments)
        for c in choice.message.tool_calls or ()
    ]
    return _response(
        choice.message.content,
        choice.message.refusal,
        calls,
        finish_reason(choice.finish_reason),
        completion.usage,
        completion.model,
    )


def _response(
    content: str | None,
    refusal: str | None,
    calls: list[ToolCall],
    reason: FinishReason,
    usage: _Usage | None,
    model: str | None,
) -> Response:
    if refusal:
        reason = FinishReason.refusal
    return Response(
        message=Message.assistant(content or refusal, calls),
        finish_reason=reason,
        usage=None if usage is None else _usage(usage),
        model=model,
    )


def _usage(usage: _Usage) -> Usage:
    return Usage(input_tokens=usage.prompt_tokens or 0, output_tokens=usage.completion_tokens or 0)


def _errors(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()
    )


def _excerpt(body: str | bytes, limit: int = 200) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    return repr(text if len(text) <= limit else text[:limit] + "...")


# --- streaming -----------------------------------------------------------------------


class _FunctionDelta(_Wire):
    name: str | None = None
    arguments: str | None = None


class _ToolCallDelta(_Wire):
    index: int
    id: str | None = None
    function: _FunctionDelta | None = None


class _Delta(_Wire):
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None


class _ChunkChoice(_Wire):
    index: int = 0
    delta: _Delta = _Delta()
    finish_reason: str | None = None


class _Chunk(_Wire):
    choices: list[_ChunkChoice] = []
    model: str | None = None
    usage: _Usage | None = None


class _PendingCall:
    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.arguments: list[str] = []


class StreamAccumulator:
    """Folds streamed chunks (first choice only) into one Response.

    Text and refusal deltas are concatenated; tool-call deltas are grouped by their
    `index` (the id and name arrive once, argument fragments are concatenated in
    arrival order); the last finish reason, model name and usage seen win.
    """

    def __init__(self) -> None:
        self._content: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, _PendingCall] = {}
        self._finish: str | None = None
        self._model: str | None = None
        self._usage: _Usage | None = None

    def feed(self, chunk: Mapping[str, object]) -> str:
        """Add one decoded chunk; returns the message text it added (for live display).

        Raises:
            InvalidModelResponse: the chunk is not a chat-completion chunk.
        """
        try:
            parsed = _Chunk.model_validate(chunk)
        except ValidationError as exc:
            raise InvalidModelResponse(
                f"stream chunk is not a chat-completion chunk ({_errors(exc)}): {chunk!r}"
            ) from exc
        self._model = parsed.model or self._model
        self._usage = parsed.usage or self._usage
        added = ""
        for choice in parsed.choices:
            if choice.index == 0:
                self._add(choice)
                added += choice.delta.content or ""
        return added

    def _add(self, choice: _ChunkChoice) -> None:
        delta = choice.delta
        if delta.content:
            self._content.append(delta.content)
        if delta.refusal:
            self._refusal.append(delta.refusal)
        for fragment in delta.tool_calls or ():
            call = self._calls.setdefault(fragment.index, _PendingCall())
            call.id = fragment.id or call.id
            if fragment.function is not None:
                call.name = fragment.function.name or call.name
                call.arguments.append(fragment.function.arguments or "")
        if choice.finish_reason is not None:
            self._finish = choice.finish_reason

    def result(self) -> Response:
        """The accumulated Response.

        Raises:
            InvalidModelResponse: the stream never reported a finish reason (it was cut
                short), or a tool call never received its id or name.
        """
        if self._finish is None:
            raise InvalidModelResponse("model stream ended without a finish reason")
        calls: list[ToolCall] = []
        for index in sorted(self._calls):
            pending = self._calls[index]
            if pending.id is None or pending.name is None:
                raise InvalidModelResponse(
                    f"streamed tool call at index {index} has no "
                    f"{'id' if pending.id is None else 'name'}"
                )
            calls.append(
                ToolCall(id=pending.id, name=pending.name, arguments="".join(pending.arguments))
            )
        return _response(
            "".join(self._content) or None,
            "".join(self._refusal) or None,
            calls,
            finish_reason(self._finish),
            self._usage,
            self._model,
        )

"""What an Interaction produces: its Output, its Artifacts, or a classified Failure."""

from __future__ import annotations

import json
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from scope_temporal.chat import Message, Response, ToolResult, Usage
from scope_temporal.errors import ArtifactDecodeError, FailureKind, kind_of

T = TypeVar("T")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Artifact(_Frozen):
    """The typed output of one successful Delegate call."""

    delegate: str
    """The Delegate binding's name (what the model called)."""
    ref: str
    """ToolCallRef of the call that produced it."""
    process_id: str
    """Workflow id of the delegate child."""
    text: str
    """The delegate's final text (what its parent's model saw)."""
    data: Any = None
    """The output parsed as JSON and validated against the child's output schema, if it has one."""

    def decode(self, type_: type[T]) -> T:
        """The artifact as `type_` (a pydantic model, dataclass, TypedDict or any type
        pydantic validates), from `data`, or from `text` parsed as JSON when the child
        Definition has no output schema. The artifact itself is left as it is.

        Raises:
            ArtifactDecodeError: the text is not JSON, or the value does not fit `type_`;
                `.field` names the first offending field (a dotted path, "" for the whole).
        """
        value = self.data
        if value is None:
            try:
                value = json.loads(self.text)
            except json.JSONDecodeError as error:
                raise ArtifactDecodeError(
                    f"Artifact of delegate {self.delegate!r} ({self.ref}) is not JSON "
                    f"({error.msg} at position {error.pos}); its text stays in `.text`.",
                    field="",
                ) from None
        try:
            return TypeAdapter(type_).validate_python(value)
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"])
            raise ArtifactDecodeError(
                f"Artifact of delegate {self.delegate!r} ({self.ref}) does not decode into "
                f"{getattr(type_, '__name__', type_)}: {field or 'the value'}: {first['msg']}. "
                "The raw value stays in `.data` / `.text`.",
                field=field,
            ) from None


class TokenUsage(_Frozen):
    """Tokens the model calls of an Interaction tree reported, per model.

    Keyed by the model's name as Definitions bind it (`Definition(model="default")`, a
    fallback model's name), delegates' calls included. A call whose provider reported no
    usage adds nothing; an unknown outcome adds nothing (nobody knows what it cost).
    """

    models: dict[str, Usage] = {}
    """Tokens per model name."""

    @property
    def input_tokens(self) -> int:
        return sum(u.input_tokens for u in self.models.values())

    @property
    def output_tokens(self) -> int:
        return sum(u.output_tokens for u in self.models.values())

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, model: str, usage: Usage | None) -> TokenUsage:
        """This usage plus one call's `usage` of `model`."""
        if usage is None or (usage.input_tokens == 0 and usage.output_tokens == 0):
            return self
        before = self.models.get(model, Usage())
        total = Usage(
            input_tokens=before.input_tokens + max(usage.input_tokens, 0),
            output_tokens=before.output_tokens + max(usage.output_tokens, 0),
        )
        return TokenUsage(models={**self.models, model: total})

    def plus(self, other: TokenUsage | None) -> TokenUsage:
        """The sum of both (e.g. a delegate's usage added to its parent's)."""
        total = self
        for model, usage in (other.models if other is not None else {}).items():
            total = total.add(model, usage)
        return total

    def __str__(self) -> str:
        """`1,234 tokens (1,000 in, 234 out)`, per model when there are several."""
        text = (
            f"{self.total_tokens:,} tokens ({self.input_tokens:,} in, {self.output_tokens:,} out)"
        )
        if len(self.models) > 1:
            text += ": " + ", ".join(
                f"{name} {u.input_tokens + u.output_tokens:,}" for name, u in self.models.items()
            )
        return text


class Output(_Frozen):
    """The accepted result of an Interaction."""

    source: Literal["model_response", "direct_tool_results"]
    model_response: Response | None = None
    """The final model response (source `model_response`)."""
    direct_tool_results: tuple[ToolResult, ...] | None = None
    """The batch's results in call order (source `direct_tool_results`)."""
    model_calls: int
    """Model responses consumed, including any settled by the host."""
    artifacts: tuple[Artifact, ...] = ()
    data: Any = None
    """The final text parsed and validated against the Definition's output schema, if any."""
    approved_tools: tuple[str, ...] = ()
    """Tools approved for the session when it completed (pre-approved, or approved with
    `remember`): what a session passes to its next turn (see `ApprovalPolicy`)."""
    usage: TokenUsage = TokenUsage()
    """Tokens used by every model call of the tree (delegates included), per model."""

    @property
    def text(self) -> str:
        """The final text: the model's reply, or the direct results joined by newlines."""
        if self.model_response is not None:
            return self.model_response.message.text
        return "\n".join(r.content for r in self.direct_tool_results or ())


class Failure(_Frozen):
    """Why a Process failed: a stable code, its kind and a human-readable message."""

    code: str
    kind: FailureKind
    message: str
    usage: TokenUsage | None = None
    """For an Interaction: the tokens its tree used before it failed (None: none reported)."""

    @classmethod
    def of(cls, code: str, message: str, *, usage: TokenUsage | None = None) -> Failure:
        return cls(code=code, kind=kind_of(code), message=message, usage=usage)


class CompletionCandidate(_Frozen):
    """What the completion validator judges. Pure data; the validator must be deterministic."""

    source: Literal["model_response", "direct_tool_results"]
    output_text: str
    model_response: Response | None = None
    direct_tool_results: tuple[ToolResult, ...] | None = None
    context: tuple[Message, ...]
    """The working context that led to the candidate, without the candidate itself (the
    final reply, or the direct results' tool message): judge the output against what
    was asked and done before it."""
    artifacts: tuple[Artifact, ...] = ()


class CompletionDecision(_Frozen):
    """Accept the candidate, or reject it with feedback the model sees as a user message."""

    accepted: bool
    feedback: str | None = None

    @classmethod
    def accept(cls) -> CompletionDecision:
        return cls(accepted=True)

    @classmethod
    def reject(cls, feedback: str) -> CompletionDecision:
        if not feedback:
            raise ValueError("A rejection needs feedback for the model.")
        return cls(accepted=False, feedback=feedback)

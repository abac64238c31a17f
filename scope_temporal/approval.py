"""Approval policies: which tool calls need someone's approval before their body runs.

A Definition's `approval=ApprovalPolicy(...)` is a frozen declaration, part of its digest.
The Interaction's pure machine applies it to every admitted tool call, before anything
runs, in this order:

1. The call's tool is exempt, or neither its permission nor its name is listed: it runs.
2. The policy's `approver` (a pure function, like the completion validator: it runs in
   workflow code) may approve or deny the call by its arguments, or say `ask`.
3. `ask`: a tool approved earlier "for the session" (an answer with `remember`, or a
   name the host passed in as pre-approved) runs without asking again.
4. Otherwise the call's ToolCall Process opens an **approval wait** (answered like any
   input wait, with `{"decision": "approve" | "deny", "reason": ..., "remember": ...}`),
   or, with `otherwise="deny"`, the call is denied without asking anyone.

A denied call is a model-visible *rejected* result carrying the reason; its body never
runs. An approved call runs once. Pure and workflow-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from scope_temporal.code_digest import Unfingerprintable, code_fingerprint, state_fingerprint
from scope_temporal.errors import DefinitionError
from scope_temporal.frozen import Frozen
from scope_temporal.tools.spec import PERMISSIONS, Permission, ToolSpec

Otherwise = Literal["ask", "deny"]
"""What happens to a call that needs approval when neither the approver nor an earlier
approval decided it: `ask` a person (an approval wait), or `deny` it without asking."""

Decider = Literal["person", "approver", "remembered", "policy"]
"""Who decided a call's approval: a person answering its approval wait, the policy's
approver hook, an approval remembered for the tool, or the policy itself
(`otherwise="deny"`)."""


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ApprovalRequest(_Value):
    """What an approver hook judges: one admitted call (its arguments fit the schema)."""

    definition: str
    """The Definition of the Interaction making the call."""
    tool: str
    permission: Permission
    arguments: dict[str, Any]
    """The call's arguments, parsed (they matched the tool's schema)."""
    call_id: str
    """The model's id for the call."""
    ref: str
    """ToolCallRef of the call (`<interaction id>/<model call seq>/<call index>`)."""


class ApprovalDecision(_Value):
    """An approver hook's verdict: `approve(...)`, `deny(reason)` or `ask()` a person."""

    decision: Literal["approve", "deny", "ask"]
    reason: str = ""
    """Why (a denial's reason is what the model reads)."""

    @classmethod
    def approve(cls, reason: str = "") -> ApprovalDecision:
        """The call runs, without asking anyone."""
        return cls(decision="approve", reason=reason)

    @classmethod
    def deny(cls, reason: str) -> ApprovalDecision:
        """The call is refused (a model-visible rejected result); its body never runs."""
        if not reason:
            raise ValueError("A denial needs a reason: the model reads it.")
        return cls(decision="deny", reason=reason)

    @classmethod
    def ask(cls) -> ApprovalDecision:
        """Not for the hook to decide: an earlier approval, or a person, decides."""
        return cls(decision="ask")


Approver = Callable[[ApprovalRequest], ApprovalDecision]
"""Decides calls before a person is asked; runs in workflow code, so pure and plain."""


class ApprovalRecord(_Value):
    """How one call's approval was decided (in the snapshot's `ResultEntry.approval`)."""

    decision: Literal["approve", "deny"]
    by: Decider
    reason: str = ""
    remember: bool = False
    """An approval to remember for the tool (for later calls, and the session's turns)."""
    answer_id: str | None = None
    """The answer that decided it, when a person did."""


class ApprovalPolicy(Frozen):
    """Which tool calls of a Definition need approval before they run (see the module).

    Args:
        require: permissions whose calls need approval, e.g. `("write", "exec")`.
        tools: tools whose calls need approval whatever their permission.
        exempt: tools whose calls never need approval (e.g. a harmless write).
        approver: a pure function deciding calls before a person is asked (see
            `ApprovalRequest` / `ApprovalDecision`). It runs in workflow code, on every
            replay: a deterministic, plain (not async) function of the request. One that
            raises, is async or returns anything but an `ApprovalDecision` fails the
            Interaction as a host failure (`interaction.host.failed`) naming it. Its
            code is part of the Definition's digest, like the completion validator's,
            and so is its state: a callable object's attributes, a bound method's
            instance, the objects in a partial's arguments or a closure, read as data
            when the policy is built (`code_digest.state_fingerprint`).
        otherwise: what happens when neither the approver nor an earlier approval
            decided: `ask` a person (an approval wait) or `deny` without asking.

    The framework's task tools (`task_status`, `task_output`, `task_cancel`) act only on
    the Interaction's own background tasks and are exempt unless named in `tools`.

    Raises:
        DefinitionError: an unknown permission, a tool both required and exempt, an
            invalid `otherwise`, or an approver bound to an object whose state cannot be
            read as data (a lock, a client). (Tool names are checked against the
            Definition.)
    """

    def __init__(
        self,
        *,
        require: Iterable[str] = (),
        tools: Iterable[str] = (),
        exempt: Iterable[str] = (),
        approver: Approver | None = None,
        otherwise: Otherwise = "ask",
    ) -> None:
        required = frozenset(require)
        unknown = sorted(required - PERMISSIONS)
        if unknown:
            raise DefinitionError(
                f"ApprovalPolicy: unknown permissions {unknown}; use read, write, exec."
            )
        named, spared = frozenset(tools), frozenset(exempt)
        both = sorted(named & spared)
        if both:
            raise DefinitionError(f"ApprovalPolicy: {both} are both required and exempt.")
        if otherwise not in ("ask", "deny"):
            raise DefinitionError(
                f"ApprovalPolicy: otherwise must be 'ask' or 'deny', not {otherwise!r}."
            )
        if approver is not None and not callable(approver):
            raise DefinitionError(f"ApprovalPolicy: approver {approver!r} is not callable.")
        self.require: frozenset[str] = required
        self.tools: frozenset[str] = named
        self.exempt: frozenset[str] = spared
        self.approver = approver
        self.otherwise: Otherwise = otherwise
        self._approver_state = None if approver is None else _state_of(approver)
        self._freeze()

    @classmethod
    def deny_writes(
        cls,
        *,
        exempt: Iterable[str] = (),
        approver: Approver | None = None,
        otherwise: Otherwise = "ask",
    ) -> ApprovalPolicy:
        """Write and exec calls are denied unless allowed: by `approver`, by an earlier
        approval for the tool, or by a person answering the call's approval wait (with
        `otherwise="deny"`, by nobody else). The one-line grant:
        `Definition(..., approval=ApprovalPolicy.deny_writes())`."""
        return cls(require=("write", "exec"), exempt=exempt, approver=approver, otherwise=otherwise)

    def check_bound(self, definition: str, tool_names: Iterable[str]) -> None:
        """Raise DefinitionError if the policy names a tool `definition` does not bind."""
        unbound = sorted((self.tools | self.exempt) - set(tool_names))
        if unbound:
            raise DefinitionError(
                f"Definition {definition!r}: its approval policy names {unbound}, which it "
                "does not bind as tools (approval applies to tool calls, not to delegates)."
            )

    def applies_to(self, spec: ToolSpec, *, framework: bool = False) -> bool:
        """Whether calls of `spec` need approval (`framework`: one of the task tools)."""
        if spec.name in self.tools:
            return True
        if spec.name in self.exempt or framework:
            return False
        return spec.permission in self.require

    def declaration(self) -> dict[str, Any]:
        """The policy as JSON for the Definition's digest (the approver by its code, and
        by its state when it is bound to objects: a plain function's entry is what it
        always was, so recorded digests stay valid)."""
        approver = self.approver
        described: dict[str, Any] | None = None
        if approver is not None:
            described = {"name": callable_name(approver), "code": code_fingerprint(approver)}
            if self._approver_state is not None:
                described["state"] = self._approver_state
        return {
            "require": sorted(self.require),
            "tools": sorted(self.tools),
            "exempt": sorted(self.exempt),
            "otherwise": self.otherwise,
            "approver": described,
        }

    def __repr__(self) -> str:
        return (
            f"ApprovalPolicy(require={sorted(self.require)}, tools={sorted(self.tools)}, "
            f"exempt={sorted(self.exempt)}, otherwise={self.otherwise!r})"
        )


def _state_of(approver: Approver) -> str | None:
    """The approver's state fingerprint, or the refusal of an approver whose state the
    digest cannot cover (two of them could decide differently under one digest)."""
    try:
        return state_fingerprint(approver, "approver")
    except Unfingerprintable as error:
        raise DefinitionError(
            f"ApprovalPolicy: the approver {callable_name(approver)} cannot be part of the "
            f"Definition's digest: {error}, so a changed approver could not be told from the "
            "one running Interactions recorded. Pass a plain function, or an approver whose "
            "state is plain data (str, int, float, bool, None, lists, dicts, sets, enums, and "
            "objects or dataclasses made of them); keep clients and locks out of it (an "
            "approver is pure: it does no I/O)."
        ) from error


def callable_name(function: object) -> str:
    """`module.qualname` of a function (a callable object by its type)."""
    qualname = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{getattr(function, '__module__', '?')}.{qualname}"


__all__ = [
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRecord",
    "ApprovalRequest",
    "Approver",
    "Decider",
    "Otherwise",
    "callable_name",
]

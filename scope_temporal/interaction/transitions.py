"""The one machine style, shared by every Process's machine (after h11's `_state.py`).

1. A machine declares, as data, each event's legal phases and, for each, the phases the
   event may lead to (`Table`). An event in any other phase is refused with an error
   that names both; a transition that ends elsewhere is a bug.
2. A transition runs on a draft of the state and commits only when it returns normally
   in a legal successor phase: a refused input (`ScopeError`) leaves the state as it was.
3. It fails closed: any other exception is a bug in the machine, which then ends in its
   terminal failed state (`interaction.state.invalid`) and refuses further input; the
   exception surfaces as a `ProtocolError` with that code (a workflow fails with it; it
   never becomes a workflow-task failure that Temporal retries).
4. Only a machine changes its state, and only inside `_apply`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar, cast

from pydantic import BaseModel

from scope_temporal.errors import STATE_INVALID, ProtocolError, ScopeError

S = TypeVar("S", bound=BaseModel)
P = TypeVar("P", bound=str)
E = TypeVar("E", bound=str)
T = TypeVar("T")

Table = Mapping[E, Mapping[P, frozenset[P]]]
"""event -> {phase the event is legal in -> the phases it may lead to}."""


class IllegalTransition(Exception):
    """A transition ended in a phase its table does not allow (a bug in the machine)."""


class Machine(ABC, Generic[S, P, E]):
    """A Process's state machine: its state, changed only by `_apply`."""

    TABLE: Table[Any, Any]
    """The machine's legal (phase, event) pairs and successors."""

    def __init__(self, state: S) -> None:
        self._state = state

    @staticmethod
    def _phase(state: S) -> P:
        """The state's phase: its `phase` field."""
        return cast(P, vars(state)["phase"])

    @property
    def state(self) -> S:
        """A copy of the whole state (safe to serialise or keep; what continue-as-new
        carries)."""
        return self._state.model_copy(deep=True)

    @property
    def phase(self) -> P:
        return self._phase(self._state)

    @abstractmethod
    def _refusal(self, event: E, phase: P) -> ScopeError:
        """The error for `event` in a phase where it is not legal."""

    @staticmethod
    @abstractmethod
    def _crash(state: S, message: str) -> None:
        """End `state` in the terminal failed state (`interaction.state.invalid`)."""

    def _apply(self, event: E, change: Callable[[S], T]) -> T:
        """Run `change` on a draft of the state for `event` (see the module docstring)."""
        before = self._phase(self._state)
        successors: frozenset[P] | None = self.TABLE[event].get(before)
        if successors is None:
            raise self._refusal(event, before)
        draft = draft_of(self._state)
        try:
            result = change(draft)
            after = self._phase(draft)
            if after not in successors:
                raise IllegalTransition(
                    f"{event} in phase {before} led to {after}, not to one of {sorted(successors)}"
                )
        except ScopeError:
            raise
        except Exception as exc:
            self._crash(self._state, f"internal error in the {type(self).__name__}: {exc!r}")
            raise ProtocolError(str(exc), code=STATE_INVALID) from exc
        self._state = draft
        return result


def same(*phases: P) -> dict[P, frozenset[P]]:
    """A row of an event that leaves each of `phases` as it is."""
    return {phase: frozenset({phase}) for phase in phases}


def draft_of(state: S) -> S:
    """A copy of `state` that a transition may change freely without touching `state`.

    Frozen values (messages, results, requests) are immutable, so they are shared, not
    copied; only the containers and the unfrozen models around them are new. A transition
    therefore costs time in the number of entries, not in the bytes of the conversation.
    """
    return _copy_model(state)


def _copy_model(model: S) -> S:
    if model.model_config.get("frozen"):
        return model
    copied = model.model_copy()  # a new __dict__ (and fields set), the values shared
    fields = copied.__dict__
    for name, value in fields.items():
        if isinstance(value, BaseModel | list | dict):
            fields[name] = _copy_value(value)
    return copied


def _copy_value(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return _copy_model(value)
    if isinstance(value, list):
        # the states' lists are typed, so homogeneous: one look at the first entry tells
        # whether the entries are immutable (shared) or need copying one by one
        if not value or _immutable(value[0]):
            return list(value)
        return [_copy_value(item) for item in value]
    if isinstance(value, dict):
        return {key: _copy_value(item) for key, item in value.items()}
    return value  # str, int, bool, None, tuples of frozen values


def _immutable(value: Any) -> bool:
    if isinstance(value, BaseModel):
        return bool(value.model_config.get("frozen"))
    return isinstance(value, str | int | float | bool | None)


__all__ = ["IllegalTransition", "Machine", "Table", "draft_of", "same"]

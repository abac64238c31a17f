"""`ModelRetry`: when a model call is sent again, and how long the Interaction waits first.

A model call that provably did not run (`ModelUnavailable`: no connection, a rate limit,
an overload) is retried as a **new** model Effect after a durable timer; one that may have
run (an unknown outcome) is never retried, unless the Definition opts in with
`ambiguous=`: a model call has no side effect beyond its cost, so a team may choose to
pay twice rather than wait for a person.

Pure and deterministic (no clock, no randomness: the jitter derives from the Effect's
id), so the Interaction's workflow computes every wait the same way on replay.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from scope_temporal.errors import DefinitionError
from scope_temporal.frozen import Frozen

__all__ = [
    "DEFAULT_MODEL_RETRY",
    "ModelRetry",
    "check_model_options",
    "model_options_declaration",
]


class ModelRetry(Frozen):
    """How an Interaction retries its model calls (`Definition(model_retry=...)`).

    Args:
        attempts: calls of one model for one model call (the first included) while the
            provider answers "not now" (`ModelUnavailable`); then the next of the
            Definition's `fallback_models` is tried, or the Interaction fails with
            `interaction.model.unavailable`. 1 turns retries off.
        initial_interval: the wait before the first retry.
        backoff_coefficient: each further wait is this many times the previous one.
        maximum_interval: the longest wait the backoff reaches.
        max_retry_after: the longest `Retry-After` honoured. A provider asking for more is
            not waited for: the model counts as exhausted (next fallback, or fail).
        jitter: each backoff wait is lengthened by up to this fraction, derived from the
            Effect's id (so many Interactions rate-limited together do not retry in step,
            and a replay waits exactly as the first run did). 0 turns it off.
        ambiguous: automatic re-sends of a model call whose outcome is **unknown** (a
            timeout, a lost worker, a 500, a cut stream), each after a backoff wait and
            recorded as superseding the unknown one. 0 (the default) leaves every unknown
            to the host. Never applies to tool calls.

    Every field is part of the Definition's digest. A retry keeps the model call's
    number (`model #3`) and gets its own Effect id (`<id>/model/3/retry/1`, ...); retries
    do not count against `max_model_calls`.

    Raises:
        DefinitionError: attempts below 1, a negative `ambiguous`, a wait that is not
            positive, a coefficient below 1, or a jitter outside [0, 1].
    """

    def __init__(
        self,
        *,
        attempts: int = 5,
        initial_interval: timedelta = timedelta(seconds=1),
        backoff_coefficient: float = 2.0,
        maximum_interval: timedelta = timedelta(seconds=60),
        max_retry_after: timedelta = timedelta(minutes=5),
        jitter: float = 0.1,
        ambiguous: int = 0,
    ) -> None:
        if type(attempts) is not int or attempts < 1:
            raise DefinitionError(f"ModelRetry: attempts must be an int >= 1, not {attempts!r}.")
        if type(ambiguous) is not int or ambiguous < 0:
            raise DefinitionError(f"ModelRetry: ambiguous must be an int >= 0, not {ambiguous!r}.")
        for label, wait in (
            ("initial_interval", initial_interval),
            ("maximum_interval", maximum_interval),
        ):
            if not isinstance(wait, timedelta) or wait <= timedelta(0):
                raise DefinitionError(f"ModelRetry: {label} must be a positive timedelta.")
        if not isinstance(max_retry_after, timedelta) or max_retry_after < timedelta(0):
            raise DefinitionError("ModelRetry: max_retry_after must be a timedelta >= 0.")
        if maximum_interval < initial_interval:
            raise DefinitionError("ModelRetry: maximum_interval is shorter than initial_interval.")
        if not 1.0 <= float(backoff_coefficient) <= 100.0:
            raise DefinitionError("ModelRetry: backoff_coefficient must be between 1 and 100.")
        if not 0.0 <= float(jitter) <= 1.0:
            raise DefinitionError("ModelRetry: jitter must be between 0 and 1.")
        self.attempts = attempts
        self.initial_interval = initial_interval
        self.backoff_coefficient = float(backoff_coefficient)
        self.maximum_interval = maximum_interval
        self.max_retry_after = max_retry_after
        self.jitter = float(jitter)
        self.ambiguous = ambiguous
        self._freeze()

    def backoff(self, retry: int, key: str) -> timedelta:
        """The wait before retry number `retry` (1, 2, ...) of the Effect `key` names."""
        exponent = min(max(retry - 1, 0), 64)
        base = self.initial_interval.total_seconds() * self.backoff_coefficient**exponent
        seconds = min(base, self.maximum_interval.total_seconds())
        if self.jitter:
            fraction = int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") / 2**32
            seconds *= 1 + self.jitter * fraction
        return timedelta(milliseconds=max(round(seconds * 1000), 1))  # a timer, never 0

    def declaration(self) -> dict[str, Any]:
        return {
            "attempts": self.attempts,
            "initial_interval": str(self.initial_interval),
            "backoff_coefficient": self.backoff_coefficient,
            "maximum_interval": str(self.maximum_interval),
            "max_retry_after": str(self.max_retry_after),
            "jitter": self.jitter,
            "ambiguous": self.ambiguous,
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModelRetry) and self.declaration() == other.declaration()

    def __hash__(self) -> int:
        return hash(tuple(self.declaration().items()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v}" for k, v in self.declaration().items())
        return f"ModelRetry({fields})"


DEFAULT_MODEL_RETRY = ModelRetry()
"""What a Definition retries with unless told otherwise: 5 attempts per model, waits of
1 s doubling up to 60 s, `Retry-After` honoured up to 5 minutes, no automatic re-send of
an unknown outcome."""


def check_model_options(
    name: str,
    model: str,
    retry: object,
    fallbacks: Sequence[str],
    max_total_tokens: int | None,
) -> None:
    """Check a Definition's model options (`model_retry`, `fallback_models`,
    `max_total_tokens`).

    Raises:
        DefinitionError: naming the Definition and the option at fault.
    """
    if not isinstance(retry, ModelRetry):
        raise DefinitionError(f"Definition {name!r}: model_retry must be a ModelRetry.")
    if isinstance(fallbacks, str) or any(not isinstance(f, str) or not f for f in fallbacks):
        raise DefinitionError(
            f"Definition {name!r}: fallback_models must be a sequence of model names."
        )
    if len(set(fallbacks)) != len(fallbacks) or model in fallbacks:
        raise DefinitionError(
            f"Definition {name!r}: fallback_models {list(fallbacks)} must name distinct "
            f"models other than {model!r}."
        )
    if max_total_tokens is not None and (type(max_total_tokens) is not int or max_total_tokens < 1):
        raise DefinitionError(
            f"Definition {name!r}: max_total_tokens must be a positive int, or None."
        )


def model_options_declaration(
    retry: ModelRetry, fallbacks: Sequence[str], max_total_tokens: int | None
) -> dict[str, Any]:
    """The model options' part of a Definition's declaration: only the options set, so
    a Definition that uses none keeps the digest it had before they existed (and its
    running Interactions replay)."""
    optional: dict[str, Any] = {}
    if retry != DEFAULT_MODEL_RETRY:
        optional["model_retry"] = retry.declaration()
    if fallbacks:
        optional["fallback_models"] = list(fallbacks)
    if max_total_tokens is not None:
        optional["max_total_tokens"] = max_total_tokens
    return optional

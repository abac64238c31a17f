"""Who needs a person: the statuses people search for, and how a tree's add up.

A Process needs a person when it holds an input wait (an answer or an approval) or an
unknown Effect, or when a Process below it does. Each child Process (a Tool call, a
Delegate, a background task) tells the Process that started it what it needs, as data
(`AttentionReport`: the latest of a numbered series), so an Interaction's own status can
say it for its whole tree: that is what the `ScopeStatus` search attribute and the
current details show.

Rules:
 1. A Process's status for people is its lifecycle status (`completed`, `failed`,
    `canceled`) once it has ended; before that `unknown` if it or anything below holds an
    unknown Effect, else `waiting_input` if it or anything below waits for an answer,
    else `paused` or `running`.
 2. What a child needs is what its own status for people says (`unknown`,
    `waiting_input`), or nothing.
 3. A report counts only if it is newer than the last one of its sender (reports may
    arrive out of order) and only while its sender is a live child: an ended Tool call
    or Delegate needs nothing any more.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict

ScopeStatus = Literal[
    "running", "waiting_input", "unknown", "paused", "completed", "failed", "canceled"
]
"""What the `ScopeStatus` search attribute holds: an Interaction's status for people."""
Attention = Literal["waiting_input", "unknown"]
"""What a Process needs from a person."""

SCOPE_STATUSES: tuple[ScopeStatus, ...] = (
    "running",
    "waiting_input",
    "unknown",
    "paused",
    "completed",
    "failed",
    "canceled",
)
NEEDS_A_PERSON: tuple[ScopeStatus, ...] = ("waiting_input", "unknown")
"""The statuses of a run that cannot go on until a person acts."""

_RANK: dict[Attention, int] = {"waiting_input": 1, "unknown": 2}
_ENDED = ("completed", "failed", "canceled")


class AttentionReport(BaseModel):
    """Signal `scope.attention`: a child Process tells its parent what it needs now."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    process_id: str
    """The child that reports (a Tool call, a Delegate, a background task)."""
    attention: Attention | None
    """What it (or a Process below it) needs from a person; None: nothing any more."""
    seq: int
    """1, 2, ... per sender: a parent keeps only the newest report."""
    source: str = ""
    """The Process that actually waits or holds the unknown (the sender or one below)."""


def most(needs: Iterable[Attention | None]) -> Attention | None:
    """The most pressing need: an unknown Effect blocks more than an open question."""
    found: Attention | None = None
    for need in needs:
        if need is not None and (found is None or _RANK[need] > _RANK[found]):
            found = need
    return found


def scope_status(lifecycle: str, paused: bool, need: Attention | None) -> ScopeStatus:
    """Rule 1: the status for people from the lifecycle status and what is needed."""
    if lifecycle in _ENDED:
        return lifecycle  # type: ignore[return-value]  # checked just above
    if need is not None:
        return need
    return "paused" if paused else "running"


def attention_of(status: ScopeStatus) -> Attention | None:
    """Rule 2: what a Process in `status` needs from a person."""
    return status if status in NEEDS_A_PERSON else None  # type: ignore[return-value]


class Reports:
    """What the children of one Process reported (rule 3); carried by continue-as-new.

    Args:
        carried: the reports a previous run kept (its background tasks' only: no Tool
            call or Delegate is running at a continue-as-new).

    Which senders are live is the caller's to say (`live`); a sender that is not live
    needs nothing, whatever it reported last.
    """

    def __init__(self, carried: Iterable[AttentionReport] = ()) -> None:
        self._latest: dict[str, AttentionReport] = {r.process_id: r for r in carried}

    def record(self, report: AttentionReport, *, live: bool) -> bool:
        """Keep `report` if it is newer than its sender's last; True if it counts now
        (its sender is live), so what is needed may have changed. One from a sender not
        live yet is kept (a child's first report may overtake the news of its start)."""
        last = self._latest.get(report.process_id)
        if last is not None and last.seq >= report.seq:
            return False
        self._latest[report.process_id] = report
        return live

    def need(self, live: Collection[str]) -> Attention | None:
        """What the live children need, the most pressing first (rule 3)."""
        return most(r.attention for p, r in self._latest.items() if p in live)

    def needing(self, live: Collection[str]) -> Mapping[str, AttentionReport]:
        """The live children's reports that need something, by sender, in sender order."""
        return {
            p: r for p, r in sorted(self._latest.items()) if r.attention is not None and p in live
        }

    def carried(self, live: Collection[str]) -> tuple[AttentionReport, ...]:
        """The reports of the live children (what a next run keeps)."""
        return tuple(r for p, r in sorted(self._latest.items()) if p in live)


class Reporter:
    """What one Process told its parent so far; it tells again only on a change."""

    def __init__(self, told: AttentionReport | None = None) -> None:
        self.told = told

    def next(
        self, process_id: str, attention: Attention | None, source: str
    ) -> AttentionReport | None:
        """The report to send now, or None if the parent already knows."""
        told = self.told
        if told is None and attention is None:
            return None
        if told is not None and (told.attention, told.source) == (attention, source):
            return None
        seq = 1 if told is None else told.seq + 1
        self.told = AttentionReport(
            process_id=process_id, attention=attention, seq=seq, source=source
        )
        return self.told


__all__ = [
    "NEEDS_A_PERSON",
    "SCOPE_STATUSES",
    "Attention",
    "AttentionReport",
    "Reporter",
    "Reports",
    "ScopeStatus",
    "attention_of",
    "most",
    "scope_status",
]

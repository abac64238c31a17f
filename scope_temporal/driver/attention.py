"""Who needs a person, as the drivers track and tell it (rules: `interaction.attention`).

Each Process tells the Interaction that started it (`report_to`) what it needs from a
person, and an Interaction keeps its `ScopeStatus` current for its whole tree, right
after each change of its own state.

Why this is replay-safe. A replay must issue the same commands in the same order; a
report (a signal) and an upsert are commands. Neither is ever issued from a signal or
update handler: a replay may apply an update's acceptance before or after the other
inputs of its workflow task (measured: a delegate that upserted from a signal handler in
the workflow task that accepted a resolve update failed replay with "Update machine does
not handle this event: UpsertWorkflowSearchAttributes"). Handlers only mark the change;
the Interaction's drive loop (and a Tool call's teller) issue the commands when they wake,
after every input of the workflow task is applied, from the state then. Runs recorded
before this existed carry `RunSettings.attention == False` and children started without
`report_to`: they replay as they ran.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from scope_temporal.driver.model_calls import details_line
from scope_temporal.driver.transport import Host, InteractionTransport
from scope_temporal.interaction.attention import (
    Attention,
    AttentionReport,
    Reporter,
    Reports,
    ScopeStatus,
    attention_of,
    most,
    scope_status,
)
from scope_temporal.interaction.machine import InteractionMachine

_SAYS: dict[Attention, str] = {
    "waiting_input": "waits for an answer",
    "unknown": "holds an unknown outcome; resolve it",
}


class Teller:
    """What one Process told the Interaction that started it; tells again on a change.

    Args:
        report_to: that Interaction (None: tell nobody, e.g. a run recorded before).
        told: the last report sent (carried by continue-as-new).
    """

    def __init__(self, report_to: str | None, told: AttentionReport | None = None) -> None:
        self.report_to = report_to
        self._reporter = Reporter(told)

    @property
    def told(self) -> AttentionReport | None:
        return self._reporter.told

    def tell(self, transport: Host, process_id: str, need: Attention | None, source: str) -> None:
        if self.report_to is None:
            return
        report = self._reporter.next(process_id, need, source if need is not None else "")
        if report is not None:
            transport.report(self.report_to, report)


class TreeStatus:
    """An Interaction's status for people, for its tree.

    Args:
        machine: the Interaction's machine.
        transport: where the status is recorded and reports are sent.
        live: the ids of the children whose reports count now (running Tool calls and
            Delegates, and the background tasks of its calls).
        carried: the reports its background tasks sent to a previous run.
        recorded: the ScopeStatus last recorded (the client sets `running` at start).
        track: record the ScopeStatus search attribute (registered on the server).
    """

    def __init__(
        self,
        machine: InteractionMachine,
        transport: InteractionTransport,
        live: Callable[[], Collection[str]],
        *,
        carried: tuple[AttentionReport, ...],
        recorded: ScopeStatus | None,
        track: bool,
        teller: Teller,
    ) -> None:
        self._machine = machine
        self._transport = transport
        self._live = live
        self._reports = Reports(carried)
        self.recorded: ScopeStatus = recorded or "running"
        self._track = track
        self.teller = teller
        self.on = False
        """Whether this run shows who needs a person (its recorded settings say so)."""
        self._lifecycle = "running"  # what a run recorded before last recorded

    def current(self) -> ScopeStatus:
        machine = self._machine
        own: Attention | None = "unknown" if machine.holds_unknown else None
        need = most([own, self._reports.need(self._live())])
        lifecycle = machine.status
        return scope_status(lifecycle, machine.paused, need)

    def heard(self, report: AttentionReport) -> bool:
        """A child's report; True if it counts (newer, from a live child)."""
        return self._reports.record(report, live=report.process_id in self._live())

    def update(self) -> None:
        """After a change: record the ScopeStatus if it changed, tell the parent."""
        if not self.on:
            return
        machine = self._machine
        status = self.current()
        if status != self.recorded:
            self.recorded = status
            if self._track:
                self._transport.record_status(machine.definition.name, status)
        if not machine.done:
            need = attention_of(status)
            self.teller.tell(self._transport, machine.process_id, need, self._source())

    def _source(self) -> str:
        if self._machine.holds_unknown:
            return self._machine.process_id
        needing = self._reports.needing(self._live())
        need = self._reports.need(self._live())
        for sender, report in needing.items():
            if report.attention == need:
                return report.source or sender
        return ""

    def show(self) -> None:
        """Show the live status: the details line (who needs a person, if anyone).

        A run recorded before this existed (`on` False) records its ScopeStatus here as
        it did then: only the lifecycle (pause/resume are signals, and the end), never
        `waiting`, whose moment an update could move on replay.
        """
        machine = self._machine
        self._transport.show(details_line(machine, self.current(), self._note()))
        if self.on:
            return
        lifecycle = "running" if machine.status == "waiting" else machine.status
        if lifecycle != self._lifecycle:
            self._lifecycle = lifecycle
            if self._track:
                self._transport.record_status(machine.definition.name, lifecycle)

    def _note(self) -> str:
        """What the details line says about who needs a person."""
        if self._machine.holds_unknown:
            return " · needs a person: the model call's outcome is unknown; resolve it"
        needing = self._reports.needing(self._live())
        if not needing:
            return ""
        said = "; ".join(
            f"`{r.source or sender}` {_SAYS[r.attention]}"
            for sender, r in needing.items()
            if r.attention is not None
        )
        return f" · needs a person: {said}"

    def carried(self) -> tuple[AttentionReport, ...]:
        """What a next run keeps: the reports of children still live."""
        return self._reports.carried(self._live())


__all__ = ["Teller", "TreeStatus"]

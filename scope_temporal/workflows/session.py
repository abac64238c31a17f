"""Workflow `scope.Session`. Everything here runs inside the workflow: deterministic.

A thin shell around `SessionDriver` (the same driver `LocalRunner` runs): it opens the
machine (new, or from the state continue-as-new carried), reads each update's raw
payload, and hands everything else to the driver with `SessionTemporalTransport`. Its workflow
id is the session id; each turn is a child `scope.Interaction` `<session id>/turn/<n>`.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RawValue

from scope_temporal import errors, names
from scope_temporal.driver.session import SessionDriver
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.session import SessionMachine
from scope_temporal.interaction.session_values import SendReceipt, SessionSnapshot
from scope_temporal.outputs import Failure
from scope_temporal.payloads import (
    ContextPage,
    ContextPageRequest,
    SessionEndInput,
    SessionInput,
    SessionSend,
    SteerInput,
    SteerTaken,
)
from scope_temporal.run_context import check_run_context
from scope_temporal.workflows import inputs, serving
from scope_temporal.workflows.outcomes import failure_error, refused_as_update, scope_workflow
from scope_temporal.workflows.session_transport import SessionTemporalTransport
from scope_temporal.workflows.task_commands import CommandsInTask, refuse_update_after_commands

T = TypeVar("T", bound=BaseModel)


@scope_workflow(names.SESSION_WORKFLOW)
class SessionWorkflow(CommandsInTask):
    """One session: a conversation of turns of one registered Definition."""

    @workflow.init
    def __init__(self, input: SessionInput) -> None:
        served = serving.current()
        self._refusal: Failure | None = None
        if input.state is not None:
            machine = SessionMachine(input.state)
        else:
            context = None
            try:
                if input.context is not None:
                    context = check_run_context(input.context)
            except ScopeError as error:  # only a raw start sends one: the client checks
                self._refusal = Failure.of(error.code, error.message)
            machine = SessionMachine.start(
                workflow.info().workflow_id, input.definition, context, input.approved_tools
            )
        self._driver = SessionDriver(
            machine,
            SessionTemporalTransport(),
            input,
            limit=served.payload_limit,
            definition=served.lookup(machine.definition),
        )

    @workflow.run
    async def run(self, input: SessionInput) -> SessionSnapshot:
        if self._refusal is not None:
            raise failure_error(self._refusal)
        return await self._driver.run()

    @workflow.update(name=names.SESSION_SEND)
    async def send(self, raw: RawValue) -> SendReceipt:
        with refused_as_update():
            input = inputs.decode(raw, SessionSend, "session send")
            duplicate = self._driver.validate_send(input)
            if duplicate is not None:
                return await self._driver.duplicate(duplicate)
            return await self._driver.send(input)

    @send.validator
    def _validate_send(self, raw: RawValue) -> None:
        refuse_update_after_commands()
        with refused_as_update():
            if self._refusal is not None:
                raise errors.refusal(self._refusal.code, self._refusal.message)
            self._check_served()
            input = inputs.decode(raw, SessionSend, "session send")
            if self._driver.validate_send(input) is None:
                self._driver.check_room(input)  # a validator never runs on replay

    def _check_served(self) -> None:
        """Refuse a message this worker cannot run a turn for (validators only: the
        session stays, and takes messages once a worker serves its Definition)."""
        served = serving.current()
        definition = self._driver.machine.definition
        if served.lookup(definition) is None:
            raise errors.UnknownDefinition(
                f"No Definition {definition!r} is registered on task queue "
                f"{workflow.info().task_queue!r} (known: {served.names}); the message was not "
                "taken. Register it on the worker."
            )

    @workflow.signal(name=names.SESSION_STEER_TAKEN)
    def steer_taken(self, raw: RawValue) -> None:
        """The running turn's answer to a steer (see `SessionDriver.steer_taken`)."""
        input = _from_the_tree(raw, SteerTaken, "steer answer")
        if input is not None:
            self._driver.steer_taken(input)

    @workflow.signal(name=names.SESSION_NOTICE)
    def notice(self, raw: RawValue) -> None:
        """A background task of a turn ended or asks for input (see `SessionDriver.notice`)."""
        input = _from_the_tree(raw, SteerInput, "notification")
        if input is not None:
            self._driver.notice(input)

    @workflow.update(name=names.SESSION_END)
    def end(self, raw: RawValue = inputs.NO_PAYLOAD) -> None:
        input = inputs.decode_optional(raw, SessionEndInput, "session end")
        self._driver.end(input or SessionEndInput())

    @end.validator
    def _validate_end(self, raw: RawValue = inputs.NO_PAYLOAD) -> None:
        refuse_update_after_commands()
        with refused_as_update():
            inputs.decode_optional(raw, SessionEndInput, "session end")
            refusal = self._driver.end_refusal()
            if refusal is not None:
                raise refusal

    @workflow.query(name=names.SESSION_SNAPSHOT_QUERY)
    def snapshot(self) -> SessionSnapshot:
        return self._driver.snapshot()

    @workflow.query(name=names.CONTEXT_QUERY)
    def context_page(self, input: ContextPageRequest) -> ContextPage:
        """Transcript messages by range: a turn's base, for a worker whose cache missed it."""
        return self._driver.context_page(input)


def _from_the_tree(raw: RawValue, model: type[T], what: str) -> T | None:
    """A signal the session's own tree sends, or None (logged) when it is malformed: no
    host sent it, so there is nobody to refuse it to."""
    try:
        return inputs.decode(raw, model, what)
    except ScopeError as error:
        workflow.logger.warning("a %s was refused: %s", what, error)
        return None

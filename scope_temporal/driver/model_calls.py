"""The model calls of one Interaction run, as the driver makes them.

One `scope.model` call per model Effect, never retried by the engine: a retry (of a call
that provably did not run, or of an unknown one the host or the Definition chose to send
again) is a new Effect the machine asks for, after a durable timer (`WaitRetry`) when it
says so. A call that succeeds costs one activity and nothing else. What crosses the engine carries
the messages that are new since the previous call and a reference to the rest (see
`scope_temporal.context_refs`), so history grows per round by what the round added. The
worker rebuilds the exact request; on a cache miss it asks for the prefix (the
`scope.context` query), which `page` answers. A session's turn refers to its base (the
session's transcript) the same way, and `page` answers only for the turn's own messages.
The model's reply, which the next call sends back, is referred to as well: the worker
that answered keeps it after the messages it was sent (`remember_reply`), and the
history holds it already as that call's result. A call that returns no data is unknown.
"""

from __future__ import annotations

from collections.abc import Sequence

from scope_temporal import errors
from scope_temporal.chat import Message
from scope_temporal.context_refs import EMPTY_REF, ContextChain, ContextRef
from scope_temporal.driver.inputs import oversized
from scope_temporal.driver.transport import InteractionTransport, Lost
from scope_temporal.interaction.effects import (
    CallModel,
    ModelEffectRequest,
    ModelOutcome,
    ModelResponded,
    ModelUnknown,
    WaitRetry,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.mcp.binding import listings_of
from scope_temporal.payloads import ContextPage, ContextPageRequest, ModelActivityInput


def model_summary(model_call_seq: int, model: str, retry: int = 0) -> str:
    """What the UI shows for one model call (`model #3: gpt-4o`, `... · retry 2`)."""
    summary = f"model #{model_call_seq}: {model}"
    return summary if retry == 0 else f"{summary} · retry {retry}"


def retry_summary(wait: WaitRetry) -> str:
    """What the UI shows for the timer before a retry: `model #3 · retry 2 after 429`."""
    return f"model #{wait.model_call_seq} · retry {wait.retry} after {wait.reason}"


def details_line(machine: InteractionMachine, status: str = "", needs: str = "") -> str:
    """The live one-line status (the Temporal UI's current details): `status` (default
    the machine's), then `needs`, what a person is needed for, if anything."""
    status = status or machine.status
    if needs:
        note = needs
    elif machine.status == "waiting":
        note = " · waiting: the model call's outcome is unknown; resolve it"
    elif machine.retry_reason is not None:
        note = f" · model call not run ({machine.retry_reason}); retrying after a wait"
    elif machine.active_children:
        note = f" · running {len(machine.active_children)} call(s)"
    else:
        note = ""
    limit = machine.max_model_calls
    usage = machine.usage
    tokens = f" · tokens {usage.total_tokens:,}" if usage.models else ""
    return (
        f"**{status}** · definition `{machine.definition.name}` · model calls "
        f"{machine.model_calls}/{limit if limit is not None else '∞'}{tokens}{note}"
    )


class ModelCaller:
    """Runs the model Effects of one Interaction run and answers `scope.context`.

    Args:
        context_sent: how many leading messages of the context the previous model call
            sent (carried by continue-as-new; 0 for a new Interaction).
        seed: a turn's base, which its messages follow.
        resumed: carried by continue-as-new with `context_sent`: the carried context,
            and the chain digest of its first `context_sent` messages (`carried_digest`).
            The first call then refers to them instead of sending them again, and
            nothing is hashed to restore them. None: that call sends the whole context.
    """

    def __init__(
        self,
        context_sent: int = 0,
        seed: ContextRef = EMPTY_REF,
        resumed: tuple[Sequence[Message], str] | None = None,
    ) -> None:
        # the messages of the latest model call, with their chain digests (and its reply)
        self._sent = ContextChain(seed)
        self._context_sent = context_sent
        if resumed is not None and 0 < context_sent <= len(resumed[0]):
            self._sent = ContextChain.resumed(seed, resumed[0][:context_sent], resumed[1])
        # the latest call was answered unreduced: `_sent` ends with its reply
        self._replied = False

    @property
    def context_sent(self) -> int:
        return self._context_sent

    def carried_digest(self, context: Sequence[Message]) -> str | None:
        """The chain digest of the first `context_sent` messages, for the next run, when
        they are exactly the first messages of `context` (the state it carries); None
        when they are not (a reducer or the host replaced the context since) or none
        was sent. Compared by identity: the loop shares its immutable messages."""
        count = self._context_sent
        sent = self._sent.messages
        if not 0 < count <= min(len(sent), len(context)):
            return None
        if any(a is not b for a, b in zip(sent[:count], context[:count], strict=True)):
            return None
        return self._sent.ref(count).digest

    async def call(
        self,
        machine: InteractionMachine,
        effect: CallModel,
        transport: InteractionTransport,
        limit: int,
        *,
        events_to: str,
    ) -> ModelOutcome | None:
        """Run one model Effect and settle it on the machine (unknown if no data came back).

        Returns:
            The outcome fed to the machine (None when none was: the request was refused,
            or the Interaction ended meanwhile).
        """
        request = effect.request
        # Only what is new crosses the engine; the whole conversation may outgrow a
        # payload (the model's own context window is its bound), a single new message may
        # not. Checked with the previous reply among the new messages, as before replies
        # were referred to: a replay decides as the run it replays did.
        payload = self.payload(machine, request, events_to)
        seed = request.base.ref if request.base is not None else EMPTY_REF
        if seed != self._sent.seed:  # a turn's first call, or its base was replaced
            self._sent = ContextChain(seed)
            self._context_sent = 0
        kept = self._sent.sync(request.messages)
        sent_before = min(kept, self._context_sent)
        held = min(kept, self._context_sent + 1) if self._replied else sent_before
        self._context_sent, self._replied = len(request.messages), False
        refused = oversized(
            payload,
            f"The new messages for model {request.model!r} (#{request.model_call_seq})",
            limit,
            "A steer or tool result this large cannot be recorded; send less, or configure "
            "storage= on the worker and client.",
        )
        if refused is not None:
            machine.fail(errors.PAYLOAD_TOO_LARGE, refused)
            return None
        if held > sent_before:  # the previous reply, by reference
            payload = self._input(machine, request, self._sent.ref(held), events_to)
        # the call's text follows its model_started event in the stream
        await transport.flush_events()
        # raises CancelledError when the Interaction is being cancelled (the driver ends it)
        result = await transport.run_model(
            payload,
            request,
            timeout=machine.definition.model_timeout,
            summary=model_summary(request.model_call_seq, request.model, retry_number(request)),
        )
        if isinstance(result, Lost):
            result = ModelUnknown(effect_id=request.effect_id, diagnostic=result.diagnostic)
        if machine.done:
            return None
        machine.on_model(result)
        if isinstance(result, ModelResponded) and result.messages_sent is None:
            # what the worker remembers after the messages it was sent (`remember_reply`)
            self._sent.extend([result.response.message])
            self._replied = True
        if machine.retry_reason is not None and isinstance(result, ModelUnknown):
            return None  # an unknown re-sent at once is not held: the next attempt shows
        if machine.retry_reason is None:
            transport.record_outcome(request, result)
        return result

    def payload(
        self, machine: InteractionMachine, request: ModelEffectRequest, events_to: str
    ) -> ModelActivityInput:
        """The `scope.model` input for `request` after the calls made so far, as its size
        is checked (changes nothing): its messages since the previous call's (the previous
        reply among them), and a reference to the rest."""
        seed = request.base.ref if request.base is not None else EMPTY_REF
        same_seed = seed == self._sent.seed  # else a turn's first call, or a replaced base
        kept = self._sent.common(request.messages) if same_seed else 0
        prefix = self._sent.ref(min(kept, self._context_sent)) if same_seed else seed
        return self._input(machine, request, prefix, events_to)

    @staticmethod
    def _input(
        machine: InteractionMachine,
        request: ModelEffectRequest,
        prefix: ContextRef,
        events_to: str,
    ) -> ModelActivityInput:
        return ModelActivityInput.of(
            request,
            prefix=prefix,
            advertised=machine.advertised,
            heartbeat=machine.definition.model_heartbeat_timeout,
            events_to=events_to,
        ).model_copy(update={"mcp_tools": listings_of(machine.definition)})

    async def wait(
        self, machine: InteractionMachine, effect: WaitRetry, transport: InteractionTransport
    ) -> None:
        """Wait before the next attempt of a model call, then let it go out."""
        # raises CancelledError when the Interaction is being cancelled (the driver ends it)
        await transport.sleep(effect.delay, summary=retry_summary(effect))
        if not machine.done:
            machine.retry_due(effect.effect_id)

    def page(self, query: ContextPageRequest) -> ContextPage:
        """Messages [start, end) of the latest model call (and its reply), at most about
        `max_bytes` (for a turn: counted after its base, which the session answers for)."""
        return context_page(self._sent.messages, query)


def context_page(messages: Sequence[Message], query: ContextPageRequest) -> ContextPage:
    """Messages [start, end) of `messages`, at most about `max_bytes` (at least one)."""
    page: list[Message] = []
    size = 0
    for message in messages[query.start : query.end]:
        if page and size >= query.max_bytes:
            break
        page.append(message)
        size += len(message.model_dump_json())
    return ContextPage(messages=tuple(page), end=query.start + len(page))


def retry_number(request: ModelEffectRequest) -> int:
    """Which retry of its model call a request is (0: the first attempt)."""
    _, marker, number = request.effect_id.rpartition("/retry/")
    return int(number) if marker and number.isdigit() else 0


__all__ = [
    "ModelCaller",
    "context_page",
    "details_line",
    "model_summary",
    "retry_number",
    "retry_summary",
]

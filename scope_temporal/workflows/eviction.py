"""Eviction: a worker dropping a run from its cache is not the run ending. Runs inside the
workflow.

A worker evicts a run it caches (its cache is full, it shuts down, a task failed) while the
run goes on: its next workflow task replays it from history, on this worker or another.
temporalio ends the evicted copy in one of two ways. Inside the workflow's loop, it cancels
the copy's tasks (an `asyncio.CancelledError` no cancellation request caused; from then on
every command raises the SDK's eviction error). A copy dropped without that is closed when
it is garbage collected (`GeneratorExit`, outside any workflow loop, where no `workflow.*`
call works). Neither is the run ending: what a run does when it is cancelled or ends
(cancelling its machine and its children, its last events, its stream's readers served)
must not run in an evicted copy.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow


def evicted(error: BaseException) -> bool:
    """Whether `error`, ending a workflow's coroutine, is its worker evicting it.

    `GeneratorExit` and the SDK's eviction error are not `Exception`s: they are evictions.
    An `asyncio.CancelledError` is one when the worker is evicting the run now."""
    if not isinstance(error, asyncio.CancelledError):
        return not isinstance(error, Exception)
    return not workflow.in_workflow() or being_evicted()


def being_evicted() -> bool:
    """Whether the worker is evicting this run now (what cancelled its tasks, if anything).

    temporalio has no public question for it, and neither "no cancellation requested" nor
    "replaying" tells it apart: a replay cancels a driver's own tasks as the run did. But
    while it evicts a run, and only then, it refuses every workflow action with its
    eviction error (outside queries and update validators, where no driver runs): setting
    the current details to what they are, which changes nothing and issues no command, is
    the cheapest action to ask with.
    """
    try:
        workflow.set_current_details(workflow.get_current_details())
    except BaseException as error:  # the SDK's eviction error is not an Exception
        if isinstance(error, Exception):
            raise
        return True
    return False


__all__ = ["being_evicted", "evicted"]

"""Exponential backoff: the waits between the attempts of a call that is retried.

One schedule for the worker's state-log reads and writes (:mod:`stream.worker.durability`),
its output re-sends (:mod:`stream.worker.outputs`) and the model judge's requests
(:mod:`stream.adapters.compaction.model_judge`). What is retried, how often and what is
final stays with each caller.
"""

from __future__ import annotations

from collections.abc import Iterator


def backoff(first: float, cap: float) -> Iterator[float]:
    """``first``, then twice the last wait each time, never more than ``cap``; endless."""
    delay = min(first, cap)
    while True:
        yield delay
        delay = min(delay * 2, cap)

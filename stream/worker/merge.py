"""The order of a partition number's two input topics (DESIGN.md §4 [v2.1] *Across the two topics*).

Records are applied in the order of (record timestamp, topic — ``compaction-events``
before ``artifact-events`` —, offset): :func:`stream.order.comes_first`, the definition
``replay --from-kafka`` uses too. :class:`TopicMerge` is Kafka Streams' timestamp synchronization
(``max.task.idle.ms``) over it: one topic's records wait while the other's are at the
broker but not yet received, so a late worker's fetched backlog of one topic is not
applied before the other's (a 1 MB fetch holds thousands of artifacts but few
checkpoints, and a context's events would wait for a ``seq`` that sits in the other
topic until ``CG_SEQ_GAP_LIMIT`` declared a gap that is not there). Held records are not
in the state: a crash or rebalance re-reads them.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from stream.order import comes_first, timestamp

__all__ = ["HELD_MAX", "TopicMerge", "comes_first", "timestamp"]

#: Records one partition number may hold for the other input topic before they go on anyway.
HELD_MAX = 20_000


class TopicMerge:
    """The merge buffer of one partition number: the records received and not yet
    released (``held``), since when (``held_since``, monotonic), and per topic the next
    offset after those received (``fetched``)."""

    def __init__(self, topics: tuple[str, str]) -> None:
        self.topics = topics  # (compaction-events, artifact-events)
        self.held: dict[str, deque[Any]] = {}
        self.held_since = 0.0
        self.fetched: dict[str, int] = {}

    def received(self, messages: Iterable[Any]) -> None:
        """``messages`` (offset order per topic) have arrived."""
        fetched = self.fetched
        for m in messages:
            fetched[m.topic] = m.offset + 1

    def waiting(self, now: float, max_idle: float) -> bool:
        """Have records been held for ``max_idle`` seconds?"""
        return bool(self.held) and now - self.held_since >= max_idle

    def release(self, messages: Sequence[Any], caught_up: Callable[[str], bool], *,
                force: bool = False) -> list[Any]:
        """The records that may be applied now, in order, of those held and ``messages``:
        while both topics have some, by :func:`comes_first`; one topic's records go on
        alone only when the other is ``caught_up`` (every record the broker had at the
        last fetch received), when ``force``\\ d (the worker received nothing for
        ``CG_MAX_IDLE``: nothing more is on its way), or past :data:`HELD_MAX` records."""
        held = self.held
        first, second = self.topics
        if not held:
            if not messages:
                return []
            topics = {m.topic for m in messages}
            if len(topics) == 1 and caught_up(second if first in topics else first):
                return list(messages)  # the common case: nothing waits
            self.held_since = time.monotonic()
        for m in messages:
            q = held.get(m.topic)
            if q is None:
                q = held[m.topic] = deque()
            q.append(m)
        a, b = held.get(first) or deque(), held.get(second) or deque()
        out: list[Any] = []
        while a and b:
            out.append(a.popleft() if comes_first(a[0], b[0]) else b.popleft())
        if force or len(a) + len(b) > HELD_MAX:
            out.extend(a)
            out.extend(b)
            a.clear()
            b.clear()
        elif a and caught_up(second):
            out.extend(a)
            a.clear()
        elif b and caught_up(first):
            out.extend(b)
            b.clear()
        held.clear()
        if a:
            held[first] = a
        if b:
            held[second] = b
        if held and out:
            self.held_since = time.monotonic()
        return out

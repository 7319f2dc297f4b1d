"""The input order across the two topics (DESIGN.md §4 [v2.1] *Across the two topics*).

The records of one partition number are applied in the order of (record timestamp,
topic — ``compaction-events`` before ``artifact-events`` —, offset). This module is the
one definition: the worker's merge (:mod:`stream.worker.merge`) and ``replay
--from-kafka`` (:mod:`stream.offline.forensics`) both use it, so live = forensic replay also for
events without ``seq`` (``seq`` stays the exact order, applied by the engine).
A record is anything with ``timestamp`` (ms; None or 0 when it has none), ``topic``,
``partition`` and ``offset``.
"""

from __future__ import annotations

from typing import Any

#: Rank of each input topic on equal timestamps: the checkpoints' topic first.
CHECKPOINTS, ARTIFACTS = 0, 1


def timestamp(record: Any) -> int:
    """A record's timestamp (ms; 0 when it has none)."""
    return getattr(record, "timestamp", None) or 0


def comes_first(checkpoint: Any, artifact: Any) -> bool:
    """Is the ``compaction-events`` record applied before the ``artifact-events`` one?
    (Timestamp order; on equal timestamps the checkpoint first.)"""
    return timestamp(checkpoint) <= timestamp(artifact)


def order_key(record: Any, rank: int) -> tuple[int, int, int, int]:
    """The sort key of ``record`` read from the input topic of ``rank``
    (:data:`CHECKPOINTS` or :data:`ARTIFACTS`): (timestamp, rank, partition, offset).
    Two heads of one partition number compare as :func:`comes_first`; partition numbers
    are independent (a context stays on one), the partition only makes the
    interleaving of their outputs deterministic."""
    return (timestamp(record), rank, record.partition, record.offset)


def input_ranks(compaction_topic: str, artifact_topic: str) -> dict[str, int]:
    """topic name -> its rank in :func:`order_key`."""
    return {compaction_topic: CHECKPOINTS, artifact_topic: ARTIFACTS}

"""Every topic and table of checkpoint-guard, declared once.

All topics are keyed by the UTF-8 ``context_id`` and have ``settings.partitions``
partitions: a context's input events, its table keys and its changelog records then
all live on one partition number (DESIGN.md §2). Input topics must be co-partitioned;
the worker refuses to start otherwise (:mod:`stream.agents`).

Why every table key starts with the context id: a faust table write goes to the
changelog partition of the *event being processed*, and a RocksDB read sees only that
partition's database (DESIGN.md §7.1). Keys are JSON arrays ``[context_id, ...]``
(see :mod:`stream.tables`), so a context's state is only read and written while one of
its own events is processed.

No topic name string appears anywhere else in the code: use these objects or
``settings.*_topic``.
"""

from __future__ import annotations

from stream.app import app, settings
from stream.domain.state import TABLES

_raw = {"key_serializer": "raw", "value_serializer": "raw", "partitions": settings.partitions}

#: key: context_id; value: checkpoint JSON (DESIGN.md §3). Written by compaction
#: pipelines (or ``stream ingest``); read by the ``validate`` agent.
compaction_events = app.topic(settings.compaction_topic, **_raw)

#: key: context_id; value: artifact JSON. Written by artifact stores / ingest; read by
#: the ``validate`` agent.
artifact_events = app.topic(settings.artifact_topic, **_raw)

#: The agent's channel: both input topics, one stream (co-partitioned).
input_events = app.topic(settings.compaction_topic, settings.artifact_topic, **_raw)

#: key: context_id; value: alert JSON (open/resolved transitions). Read by monitoring,
#: remediation workers and forensics (``replay --verify``).
checkpoint_alerts = app.topic(settings.alerts_topic, **_raw)

#: key: context_id; value: verdict JSON, one per applied checkpoint. Optional consumers.
checkpoint_verdicts = app.topic(settings.verdicts_topic, **_raw)

#: key: compact JSON ``["<context_id>","<node_id>"]``; value: node-status JSON (DESIGN.md
#: §4 Node status), written to the partition number of the context's input. Compacted:
#: a reader holds the current status of every node (agent runtimes: may I recover?).
checkpoint_status = app.topic(settings.status_topic, **_raw)

#: key: the original key (or none); value: dead-letter JSON (original bytes base64,
#: source topic/partition/offset, one-line reason). Read by operators.
dead_letters = app.topic(settings.deadletter_topic, **_raw)

#: The engine's state (see stream.domain.state for each table's key and value).
#: key: JSON array starting with context_id; value: JSON-ready; changelog topics
#: ``<app_id>-<name>-changelog`` (faust creates them, same partition count).
tables = {
    name: app.Table(
        name,
        default=None,
        partitions=settings.partitions,
        help=f"engine state: {name}",
    )
    for name in TABLES
}

#: key: ``[context_id]``; value: ``{"event_id", "writes": {table: [[key, value, deleted]]}}``
#: — the last event's whole write set, written (and acknowledged) before its keys, so a
#: crash between keys is rolled forward on restart (stream.tables).
journal = app.Table("journal", default=None, partitions=settings.partitions, help="write-ahead journal")

# The topics we create ourselves (faust creates only its changelogs) are listed, with
# their cleanup policy, in stream.kafka_clients.project_topics (`topics create`).

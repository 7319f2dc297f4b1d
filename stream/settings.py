"""The one configuration object of checkpoint-guard.

Every setting comes from the environment (prefix ``CG_``, e.g. ``CG_BROKER``) or a
``.env`` file in the working directory; nothing else in the project reads
``os.environ``. The object is frozen: build a new one (``Settings(**overrides)``)
instead of mutating it. Secrets are :class:`pydantic.SecretStr`, so they never show
up in ``repr()``, logs or error messages.

The table of settings with their defaults is in the README ("Settings").
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: The source checkout (or the site-packages directory of an installed package).
PROJECT_ROOT = Path(__file__).resolve().parent.parent
#: The user's own data directory for checkpoint-guard (XDG: ``$XDG_DATA_HOME`` or
#: ``~/.local/share/checkpoint-guard``): default worker state, local broker, demo.
USER_DATA_DIR = platformdirs.user_data_path("checkpoint-guard")
#: The user's cache directory (``$XDG_CACHE_HOME`` or ``~/.cache/checkpoint-guard``):
#: the local broker's resolved jars.
USER_CACHE_DIR = platformdirs.user_cache_path("checkpoint-guard")
#: Broker URL schemes faust accepts for Kafka (``kafka://`` is the documented one).
BROKER_SCHEMES = ("kafka", "aiokafka")


class Settings(BaseSettings):
    """Frozen settings, read from ``CG_*`` environment variables.

    Sizes are in bytes, times in seconds unless the name says otherwise.
    """

    model_config = SettingsConfigDict(
        env_prefix="CG_", env_file=".env", extra="ignore", frozen=True
    )

    # --- Kafka -------------------------------------------------------------------
    broker: str = Field(
        "kafka://127.0.0.1:9092",
        description="Bootstrap servers, faust style: kafka://host:port[;host:port].",
    )
    app_id: str = Field("checkpoint-guard", description="faust app id = consumer group id.")
    partitions: int = Field(4, ge=1, description="Partition count of every topic and table.")
    replication_factor: int = Field(1, ge=1, description="Replication factor of topics we create.")
    create_topics: bool = Field(
        True,
        description="The worker and remediate create the topics only they use (the state logs, faust's leader "
        "topic) when missing; false: they never send CreateTopics (no create ACL needed) and refuse to start "
        "when one is missing (`topics create` or the chart's Strimzi KafkaTopics make them).",
    )
    compaction_topic: str = "compaction-events"
    artifact_topic: str = "artifact-events"
    alerts_topic: str = "checkpoint-alerts"
    verdicts_topic: str = "checkpoint-verdicts"
    status_topic: str = Field(
        "checkpoint-status",
        description="Node status (compacted; key [context_id, node_id]): may an agent recover from a node?",
    )
    deadletter_topic: str = "guard-deadletter"
    processing_guarantee: Literal["at_least_once"] = Field(
        "at_least_once",
        description="Only at-least-once is supported (DESIGN.md §7.6: exactly_once has open bugs).",
    )

    producer_linger_ms: int = Field(
        5, ge=0, le=1000,
        description="How long the worker's producer waits to fill a batch of outputs (ms). 5 ms cut the CPU per "
        "event by a sixth (bench/bench_floor.py) for at most 5 ms more latency.",
    )
    producer_compression: Literal["lz4", "zstd", "gzip", "snappy", "none"] = Field(
        "lz4",
        description="Compression of the worker's output and state-log batches. lz4 cut the bytes the worker "
        "writes to its sockets several times over for a few µs per batch (bench part 3: output-heavy streams); "
        "every Kafka client reads it.",
    )
    producer_lz4_level: int = Field(
        1, ge=0, le=16,
        description="lz4 level of those batches. aiokafka compresses at 9 (LZ4HC) and offers no setting: 7x the "
        "CPU of level 1 for about 13% fewer bytes (py-spy of the worker on bench part 2's synthetic stream: a "
        "tenth of its CPU). 1-2: fast lz4; 3 and up: LZ4HC.",
    )
    session_timeout: float = Field(
        60.0, ge=6, le=3600,
        description="Seconds a worker that stopped heart-beating (kill -9, network split) stays in the "
        "consumer group before its partitions move to the others (faust broker_session_timeout).",
    )
    batch_max: int = Field(
        500, ge=1,
        description="Most events the worker takes from the stream at once (stream.take_events): one "
        "pass of the engine, then their outputs are sent together (commits are per CG_COMMIT_INTERVAL).",
    )
    batch_within: float = Field(
        0.005, gt=0, le=10,
        description="Seconds the worker waits for a batch to fill before processing what it has "
        "(bounds the latency batching adds).",
    )

    commit_interval: float = Field(
        1.0, gt=0, le=300,
        description="Seconds between state commits (outputs acked -> one state-log record per partition -> "
        "group offsets). Between commits writes are cached and deduplicated per key; a crash re-processes "
        "at most this much input (and re-sends identical outputs).",
    )
    commit_max_events: int = Field(
        10_000, ge=1,
        description="A partition commits early once this many events were processed since its last commit.",
    )
    max_idle: float = Field(
        0.5, ge=0, le=60,
        description="The two input topics are merged by record timestamp per partition number (Kafka Streams' "
        "max.task.idle.ms), so a context's checkpoints and artifacts are applied in about the order they were "
        "produced, not one topic's backlog first: records of one topic wait while the other's are at the broker "
        "but not yet received, until the worker has received nothing for this many seconds.",
    )
    fetch_max_wait_ms: int = Field(
        100, ge=0, le=60_000,
        description="How long the broker may hold a fetch waiting for data (faust hard-codes 1500 ms; a long "
        "wait delays the last events of a burst).",
    )
    state_chunk_bytes: int = Field(
        1 << 20, ge=64 << 10,
        description="A state commit over this many bytes is split into chunks closed by a marker (restore "
        "applies chunks only with their marker).",
    )
    state_cache_entries: int = Field(
        50_000, ge=100,
        description="Decoded state values kept in memory per table and partition (the rest is read from RocksDB).",
    )
    snapshot_min_entries: int = Field(
        1_000_000, ge=1000,
        description="A partition writes a snapshot of its state once its state log holds more entries than "
        "this and than the state itself since the last snapshot; the log before a snapshot is deleted.",
    )

    # --- security (SSL / SASL) ---------------------------------------------------
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] = "PLAIN"
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_cafile: Path | None = None
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_password: SecretStr | None = None

    # --- state ---------------------------------------------------------------------
    data_dir: Path = Field(
        USER_DATA_DIR / "worker",
        description="faust datadir; the state's RocksDB files are under <data_dir>/state/. One worker per "
        "directory (a lock file enforces it).",
    )

    # --- web -----------------------------------------------------------------------
    web_host: str = Field("127.0.0.1", description="Web views bind here; loopback unless told otherwise.")
    web_port: int = Field(6066, ge=1, le=65535)
    web_canonical_url: str | None = Field(
        None,
        description="URL the other workers use to reach this worker's web views (faust canonical_url; "
        "node-status requests are forwarded there). Default http://<web_host>:<web_port>; set it "
        "when web_host is 0.0.0.0 or behind NAT.",
    )
    web_forward_timeout: float = Field(
        5.0, gt=0, description="Seconds to wait for the owning worker when forwarding a node-status request."
    )
    metrics_enabled: bool = Field(
        True, description="Maintain the Prometheus metrics served at /metrics (false: the agent skips them)."
    )

    # --- rules and limits (DESIGN.md §3, §4) --------------------------------------------
    # Input limits are enforced where bytes become events (stream.wire.decode_event), so
    # the worker, `replay` and `replay --from-kafka` dead-letter exactly the same messages;
    # the reason names the setting (e.g. "referents: 10001 items, limit is 10000
    # (CG_MAX_REFERENTS)"). The real trajectories (`python -m stream ingest`) stay far
    # below every default: at most 8.6 kB per event, 18 referents, 4 children,
    # 14 constraints, 91-character ids, 24-character constraints.
    seq_gap_limit: int = Field(
        1000, ge=0, le=100_000,
        description="Waiting events per context before a sequence_gap. It also bounds the seq buffer: "
        "after every event at most this many events of a context wait (the engine declares the gap and "
        "drains as soon as one more would wait), so a context buffers at most seq_gap_limit x "
        "max_message_bytes. At most 100,000: the waiting seqs are one table record, which must stay "
        "well under max_output_bytes.",
    )
    max_message_bytes: int = Field(1 << 20, ge=1, description="Bigger messages/lines are dead-lettered.")
    max_id_chars: int = Field(
        1024, ge=1, le=1 << 20,
        description="Longest id in characters: event_id, context_id, node_id, artifact_id, each child "
        "and referent. Longer: dead letter.",
    )
    max_referents: int = Field(10_000, ge=0, description="Most referents one checkpoint may list; more: dead letter.")
    max_children: int = Field(10_000, ge=0, description="Most children one checkpoint may list; more: dead letter.")
    max_constraints: int = Field(
        10_000, ge=0,
        description="Most entries in each constraint list (negative_constraints, raw_negative_constraints); "
        "more: dead letter. An informational list (instructions, raw_instructions) over it is treated as absent.",
    )
    max_constraint_chars: int = Field(
        4096, ge=1, le=1 << 20,
        description="Longest constraint in characters: a string constraint, an object's id, and the key "
        "either becomes (NFKC can lengthen a text). Longer: dead letter (informational lists: absent).",
    )
    max_json_depth: int = Field(
        201, ge=1, le=201,
        description="Deepest JSON nesting accepted (objects and arrays, the message itself included); "
        "deeper: dead letter. 201 is also the most the parser reads.",
    )
    max_seq: int = Field(
        (1 << 63) - 1, ge=0, le=(1 << 63) - 1,
        description="Largest seq accepted (the int64 range every Kafka client can carry); larger: dead letter.",
    )
    max_ledger: int = Field(
        10_000, ge=0,
        description="Most raw constraint keys, and most children, one node's ledger holds (every version of "
        "the node ever applied, DESIGN.md §4); a version that would take it past either is dead-lettered at "
        "apply time with the reason 'ledger full: ...'.",
    )
    max_output_bytes: int = Field(
        16 << 20, ge=1 << 20,
        description="Largest record the worker writes (alerts, dead letters, state-log fragments); the topics "
        "we create get max.message.bytes = this.",
    )

    # --- remediation worker (python -m stream remediate, stream/remediation/) --------------
    remediation_group: str = Field(
        "checkpoint-guard-remediation",
        description="Consumer group of the remediation worker; also names its compacted state topic "
        "<group>-state and its transactional id <group>-tx.",
    )
    remediation_topic: str = Field("remediation-requests", description="Remediation requests (key: context_id).")
    remediation_handlers: str = Field(
        "stream.remediation:TopicPublisher",
        description="Comma-separated dotted paths (module:factory) of remediation handlers; the default "
        "publishes every request to remediation_topic.",
    )

    # --- the local broker the project starts (DESIGN.md §6) -------------------------------
    kafka_version: str = Field("4.1.1", description="org.apache.kafka:kafka_2.13 version of the local broker.")
    kafka_home: Path = Field(USER_DATA_DIR / "kafka", description="Local broker run dir (logs, pid).")
    kafka_cache: Path = Field(USER_CACHE_DIR / "kafka", description="Resolved broker jars.")
    kafka_port: int = Field(9092, ge=1, le=65535, description="Local broker PLAINTEXT port.")
    kafka_controller_port: int = Field(9093, ge=1, le=65535, description="Local broker CONTROLLER port.")
    kafka_heap: str = Field("512m", description="Local broker -Xmx/-Xms.")
    test_bootstrap: str | None = Field(
        None,
        description="Tests only (CG_TEST_BOOTSTRAP=host:port): use this running broker instead of "
        "starting a fresh local one (tests/conftest.py).",
    )

    # --- the rules judge (ingest openhands|claude-code, the default judge) --------------------
    judge_precision: Literal["precise", "balanced", "recall"] = Field(
        "precise",
        description="The rules judge's precision / recall trade-off (--judge-precision): precise alerts only on "
        "structural drops read by strong cues (default); balanced adds the rest of the cues and every unmatched "
        "drop; recall also alerts on the rules of long messages a summary only describes, on partial restatements "
        "and on rule files not re-injected after a compaction. Measured per level in docs/REAL_LOGS.md.",
    )

    # --- the model judge (ingest openhands|claude-code --judge model) ----------------------
    judge_backend: Literal["anthropic", "openai", "claude-cli"] = Field(
        "claude-cli",
        description="Where the model judge asks: the Anthropic Messages API, an OpenAI-compatible Chat "
        "Completions endpoint (OpenAI, Ollama, llama.cpp server, vLLM), or the local claude CLI (print mode, "
        "the user's own login).",
    )
    judge_model: str | None = Field(
        None,
        description="Model id. Default: claude-sonnet-4-5 (anthropic), the CLI's own default (claude-cli); "
        "required for openai (e.g. gpt-4.1-mini, qwen2.5:14b).",
    )
    judge_url: str | None = Field(
        None,
        description="Base URL. Default https://api.anthropic.com (anthropic; /v1/messages is appended) or "
        "https://api.openai.com/v1 (openai; /chat/completions is appended; Ollama: http://localhost:11434/v1).",
    )
    judge_api_key: SecretStr | None = Field(
        None, description="API key of the judge's endpoint (sent to CG_JUDGE_URL, whatever host that is)."
    )
    anthropic_api_key: SecretStr | None = Field(
        None, validation_alias="ANTHROPIC_API_KEY",
        description="ANTHROPIC_API_KEY: used by the anthropic backend when CG_JUDGE_API_KEY is unset and "
        "CG_JUDGE_URL is Anthropic's own.",
    )
    openai_api_key: SecretStr | None = Field(
        None, validation_alias="OPENAI_API_KEY",
        description="OPENAI_API_KEY: used by the openai backend when CG_JUDGE_API_KEY is unset and "
        "CG_JUDGE_URL is OpenAI's own.",
    )
    judge_timeout: float = Field(120.0, gt=0, le=3600, description="Seconds one judge request may take.")
    judge_retries: int = Field(
        3, ge=0, le=20,
        description="Retries of a failed judge request (timeout, connection error, HTTP 408/409/429/5xx, an "
        "invalid answer); never for a refused key or a bad request.",
    )
    judge_backoff: float = Field(
        1.0, ge=0, le=60,
        description="Seconds before the first retry; doubled each time (the server's retry-after when longer), "
        "at most 60.",
    )
    judge_max_tokens: int = Field(4096, ge=256, le=65_536, description="Most tokens one judge answer may have.")
    judge_cache_dir: Path = Field(
        USER_DATA_DIR / "judge-cache",
        description="The judge's answers by request hash: re-ingesting the same logs makes no new call and "
        "gives byte-identical events. Delete it to ask again.",
    )
    judge_claude_bin: str = Field("claude", description="The claude CLI of the claude-cli backend (name or path).")
    judge_price_input: float | None = Field(
        None, ge=0,
        description="USD per million input tokens, for the cost in the ingest summary (the claude CLI reports "
        "its own cost; without a price the HTTP backends' cost is 'unknown').",
    )
    judge_price_output: float | None = Field(None, ge=0, description="USD per million output tokens (see above).")

    # --- logs ------------------------------------------------------------------------
    log_format: Literal["text", "json"] = Field(
        "text",
        description="text: faust's log lines; json: one JSON object per line (time, level, logger, "
        "message, and topic/partition/offset/context_id where known), without faust's banner.",
    )

    # --- the Claude Code hook (checkpoint-guard hook claude-code; docs/HOOK.md) ---------
    hook_dir: Path = Field(
        USER_DATA_DIR / "claude-code",
        description="The Claude Code hook's per-session cursors, its spool of events not yet sent, its log.",
    )
    hook_budget: float = Field(
        5.0, gt=0, le=600,
        description="Hard time budget of one hook call (s): past it the call commits nothing, exits 0 and "
        "leaves the work to a detached catch-up process. Raise it for a model judge.",
    )
    hook_kafka: bool = Field(
        True, description="Produce the hook's events to CG_BROKER when it answers (false: spool only, no network)."
    )
    hook_connect_timeout: float = Field(
        1.0, gt=0, le=60,
        description="How long a hook call waits for the broker before it keeps the events in the spool (s); "
        "an unreachable broker is then skipped for 30 s.",
    )
    hook_context_chars: int = Field(
        4000, ge=200, le=10_000,
        description="Most characters the hook hands back to Claude Code after a compaction (Claude Code "
        "itself caps a hook's additionalContext at 10,000).",
    )
    hook_summary_wait: float = Field(
        2.0, ge=0, le=60,
        description="After a compaction, how long the hook waits for Claude Code to write the summary into "
        "the transcript (s; the file is written asynchronously).",
    )

    @field_validator("broker")
    @classmethod
    def _broker_has_scheme(cls, v: str) -> str:
        """``host:port[;host:port]`` with an optional ``kafka://`` scheme; nothing else."""
        v = v.strip()
        if not v:
            raise ValueError("empty; expected kafka://host:port[;host:port]")
        url = v if "://" in v else f"kafka://{v}"
        for part in url.replace(";", ",").split(","):
            scheme, sep, address = part.strip().rpartition("://")
            if sep and scheme not in BROKER_SCHEMES:
                raise ValueError(
                    f"scheme {scheme}:// is not Kafka's; use kafka://host:port[;host:port] (e.g. kafka://127.0.0.1:9092)"
                )
            host, colon, port = address.rpartition(":")
            if not address or "/" in address or (colon and not port.isdigit()) or (colon and not host):
                raise ValueError(f"{part.strip()!r} is not host:port; use kafka://host:port[;host:port]")
        return url

    @property
    def bootstrap_servers(self) -> str:
        """``host:port,host:port`` for aiokafka (the faust URL without its scheme)."""
        return ",".join(part.split("://", 1)[-1] for part in self.broker.replace(";", ",").split(","))

    @property
    def input_topics(self) -> tuple[str, str]:
        return (self.compaction_topic, self.artifact_topic)

    @property
    def output_topics(self) -> tuple[str, str, str, str]:
        return (self.alerts_topic, self.verdicts_topic, self.status_topic, self.deadletter_topic)

    @property
    def state_topic(self) -> str:
        """The worker's state log (docs/DURABILITY.md): ``<app_id>-state``, one partition
        per input partition number."""
        return f"{self.app_id}-state"

    @property
    def state_dir(self) -> Path:
        """The worker's local state: one RocksDB per partition number, ``<data_dir>/state/p<NNNNN>``
        (:func:`stream.worker.store.partition_path`)."""
        return Path(self.data_dir) / "state"

    @property
    def max_request_bytes(self) -> int:
        """Producer request / topic ``max.message.bytes``: a record of ``max_output_bytes``
        plus its key (two ids at most) and the batch framing."""
        return self.max_output_bytes + (64 << 10)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once from the environment)."""
    return Settings()

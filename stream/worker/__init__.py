"""The worker: validates every checkpoint on Kafka (the imperative shell around the engine).

==================  =========================================================================
``app``             ``build(settings)``: the host and the runtime, wired; ``create_app``
``host``            the :class:`~stream.worker.host.Host` protocol: what the worker needs of
                    its framework (group, stream, callbacks, timers, web, CLI)
``compat``          :class:`~stream.worker.compat.FaustHost`: the Host on faust, and every
                    private faust / mode / aiokafka name (pinned by a test)
``runtime``         the batch handler's shell: partitions, topic merge, outputs, the timer
``handler``         the batch handler's pure core: decode -> engine -> outputs
``merge``           the order of a partition's two input topics (timestamp synchronization)
``outputs``         output delivery: records, sends, acknowledgements, the size fail-safe
``durability``      coverage, the commit protocol, restore, fencing, snapshots (one object)
``statelog``        the state log's record format and replay (pure)
``store``           one partition's state: RocksDB + write cache + read cache
``gaps``            input records faust did not deliver, read back
``web``             /healthz, /readyz, /metrics, /nodes
``metrics``         Prometheus metrics from the engine's outputs
``service``         the start-up checks (data-dir lock, web port, topics)
``preflight``       data-dir lock and web-port check (no framework; ``reset`` uses the lock)
==================  =========================================================================

Offline tools (replay, forensics, ingest) never import this package: it needs faust.
"""

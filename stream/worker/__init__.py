"""The worker: a faust app whose one agent validates every checkpoint (the imperative shell).

==================  =========================================================================
``app``             ``create_app(settings)``: topics, the agent, the commit timer, hooks
``runtime``         the batch handler's shell: partitions, order, gaps, outputs, commits
``handler``         the batch handler's pure core: decode -> engine -> outputs
``durability``      the commit protocol, restore, fencing and snapshots (one object)
``statelog``        the state log's record format and replay (pure)
``store``           one partition's state: RocksDB + write cache + read cache
``gaps``            input records faust did not deliver, read back
``compat``          every private faust name (inline delivery, batch stream, commits)
``web``             /healthz, /readyz, /metrics, /nodes
``metrics``         Prometheus metrics from the engine's outputs
``service``         the faust Worker (topic checks at start)
``preflight``       data-dir lock and web-port check (no faust; ``reset`` uses the lock)
==================  =========================================================================

Offline tools (replay, forensics, ingest) never import this package: it needs faust.
"""

"""The worker: validates every checkpoint on Kafka (the imperative shell around the engine).

More (the module notes): docs/DURABILITY.md, section ``stream/worker/__init__.py``.
"""

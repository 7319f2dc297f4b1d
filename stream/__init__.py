"""checkpoint-guard: catch hierarchical context compaction turning into silent data loss.

Layout (arrows point inward, to the pure domain):

* ``stream.domain``   — the decision engine: plain Python, no framework imports.
* ``stream.wire``     — codecs at the edge: pydantic models for every topic's JSON.
* ``stream.worker``   — the worker: one batch handler over both input topics, state in
  RocksDB + the state log (``stream.app`` builds it for ``faust -A stream.app``).
* ``stream.adapters`` — agent runs (``simulated/``) and compaction logs -> input events.
* ``stream.client`` / ``stream.hook`` — a pipeline's client; the Claude Code hook.
* ``stream.remediation`` — the reference remediation service (alerts -> requests).
* ``stream.cli`` / ``stream.commands`` — the ``checkpoint-guard`` command (click; only
  ``worker`` loads faust). ``stream.devtools`` — the local Kafka, the end-to-end demo.
* ``stream.native``   — the engine and the worker's per-event path compiled with mypyc,
  used only while the build matches the sources (``make native``; ``CG_NATIVE=0``: off).
"""

from stream import native as _native

__version__ = "0.1.0"

_native.install()

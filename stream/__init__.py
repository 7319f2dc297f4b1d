"""checkpoint-guard: catch hierarchical context compaction turning into silent data loss.

Layout (arrows point inward, to the pure domain):

* ``stream.domain``   — the decision engine: plain Python, no framework imports.
* ``stream.wire``     — codecs at the edge: pydantic models for every topic's JSON.
* ``stream.app``      — the faust app: topics and tables, declared once.
* ``stream.agents``   — the one thin agent: decode -> engine -> send -> write state.
* ``stream.adapters`` — real trajectories / compaction logs -> input events.
* ``stream.cli`` / ``stream.commands`` — the ``checkpoint-guard`` command (click; only
  ``worker`` loads faust).
* ``stream.devtools`` — local development: the single-node Kafka the project starts
  itself, the end-to-end demo.
"""

__version__ = "0.1.0"

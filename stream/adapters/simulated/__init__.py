"""The simulated family: real agent trajectories played through a simulated compaction.

Reads mini-swe-agent and tau-bench runs into the neutral model (:mod:`.model`) through the
format registry (:mod:`.formats`), then writes what a hierarchical compactor would publish
(:mod:`.simulator`). Plain Python: no faust, no aiokafka. Its public names are
:mod:`stream.adapters`'; usage: docs/ADAPTERS.md.
"""

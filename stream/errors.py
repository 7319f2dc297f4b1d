"""The one error root of checkpoint-guard, and what an operator does about each leaf.

::

    GuardError                     anything this project raises on purpose
    ├── InvalidEvent               a message/line breaks the wire contract (DESIGN.md §3).
    │                              Never fatal: the message goes to the dead-letter topic
    │                              (offline: stderr) with this one-line reason. Fix the
    │                              producer; re-process from the dead-letter topic.
    ├── ConfigurationError         settings or topics are inconsistent (e.g. input topics
    │                              not co-partitioned). Fatal at start; fix the config or
    │                              re-create the topics, then start again.
    ├── HandlerFailed              a remediation handler raised; its batch's transaction was
    │                              aborted and `remediate` exits 1. Fix the handler, restart:
    │                              the batch is retried.
    ├── AdapterError               a trajectory / log file could not be read (named in the
    │                              one-line message); the other files still run. Fix or
    │                              drop that file.
    └── KafkaLocalError            the local broker (``python -m stream kafka``) could not
                                   be resolved, started or stopped (java/mvn missing, port
                                   taken, broker died). Read the one-line message and the
                                   broker log tail it quotes.

Violations of the compaction rules are *not* exceptions: they are alert values the
engine returns.
"""

from __future__ import annotations


class GuardError(Exception):
    """Root of every error checkpoint-guard raises on purpose."""


class InvalidEvent(GuardError, ValueError):
    """An input message breaks the wire contract; ``str(exc)`` is the one-line reason."""


class ConfigurationError(GuardError):
    """Settings or topics are inconsistent; fatal at start, the message says what to fix."""

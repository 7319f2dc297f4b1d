"""The one error root of checkpoint-guard (:class:`GuardError`) and :func:`describe`.

Violations of the compaction rules are *not* exceptions: they are alert values the engine
returns. :func:`describe` is the one place that turns any exception a command meets into
its one line and exit code (the contract: docs/OPERATIONS.md §12). Every error class, and
what an operator does about each: docs/ERRORS.md.
"""

from __future__ import annotations


class GuardError(Exception):
    """Root of every error checkpoint-guard raises on purpose."""


class InvalidEvent(GuardError, ValueError):
    """An input message breaks the wire contract; ``str(exc)`` is the one-line reason."""


class ConfigurationError(GuardError):
    """Settings or topics are inconsistent; fatal at start, the message says what to fix."""


class DurabilityError(GuardError):
    """The worker cannot make its state or outputs durable: it stops (exit 70) without
    committing; a restart re-processes from the last commit."""


class StateWriteError(DurabilityError):
    """The state log refused a record for good: grant the worker access to
    ``<CG_APP_ID>-state`` or keep CG_STATE_CHUNK_BYTES below its max.message.bytes."""


class RestoreFailed(DurabilityError):
    """A partition's state could not be restored (cause chained): fix the cause, or
    ``checkpoint-guard reset`` a damaged local RocksDB, then restart."""


class OutputRejected(DurabilityError):
    """The broker refused an output record for a reason no input causes: grant the worker
    Write on the topic named, or restart it after lowering a topic's max.message.bytes."""
class KafkaUnavailable(GuardError):
    """The pipeline client (:mod:`stream.client`) could not reach Kafka, or the broker refused
    it (aiokafka's error chained); ``str(exc)`` is the one line: what failed, at which bootstrap
    server, and the fix (:func:`stream.kafka_errors.aiokafka_line`)."""


class UsageError(GuardError):
    """The command line names something the command cannot use; exit 2, the message says
    what to give instead."""


#: Exit codes of every command (docs/OPERATIONS.md §12).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


_JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean",
               type(None): "null"}


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type (``null``, ``array``, ...), for "must be a JSON
    object, got ..." messages: the user wrote JSON, not Python."""
    return _JSON_TYPES.get(type(value), type(value).__name__)


def describe(exc: BaseException) -> tuple[str, int]:
    """``(one line: what went wrong; the fix, exit code)`` for an exception a command
    did not handle itself — never a traceback, never a library's raw line.

    Ctrl-C is 130; our own errors carry their line (2 for :class:`UsageError`, else 1);
    aiokafka's errors become :func:`stream.kafka_errors.aiokafka_line`'s line; an
    ``OSError`` names the path; anything else is a bug: its traceback is written to
    a file the line names.
    """
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl-C) before it finished; run it again to finish", EXIT_INTERRUPTED
    if isinstance(exc, UsageError):
        return str(exc), EXIT_USAGE
    if isinstance(exc, GuardError):
        return str(exc), EXIT_FAILED
    if type(exc).__module__.split(".")[0] == "aiokafka":
        from stream.kafka_errors import aiokafka_line
        from stream.settings import get_settings

        return aiokafka_line(get_settings(), exc), EXIT_FAILED
    if isinstance(exc, OSError):
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot use{where}: {exc.strerror or exc}; check the path, its permissions and free space", EXIT_FAILED
    if isinstance(exc, MemoryError):
        return "out of memory; give the process more memory or feed it less input at once", EXIT_FAILED
    return _internal_error(exc), EXIT_FAILED


def _internal_error(exc: BaseException) -> str:
    """A bug: its traceback goes to ``<cache>/last-error.txt``, the line says where."""
    import traceback

    from stream.settings import USER_CACHE_DIR

    text = "".join(traceback.format_exception(exc))
    target = USER_CACHE_DIR / "last-error.txt"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        where = f"the traceback is in {target}"
    except OSError:
        where = "the traceback could not be saved"
    first = " ".join(str(exc).split())[:200]
    return (f"internal error {type(exc).__name__}{': ' + first if first else ''} (a bug of checkpoint-guard; "
            f"{where}): please report it")

"""Remediation handlers: what is done with each request (``CG_REMEDIATION_HANDLERS``).

A handler must not block the batch's transaction (60 s): slow work goes to a queue, keyed by
``request_id``. The contract and an example handler: docs/REMEDIATION.md "Handlers".
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from stream.errors import ConfigurationError, GuardError

if TYPE_CHECKING:  # pragma: no cover
    from aiokafka import AIOKafkaProducer

    from stream.settings import Settings
    from stream.wire import RemediationRequest



class HandlerFailed(GuardError):
    """A remediation handler raised; the batch's transaction was aborted (see module doc)."""


class HandlerContext:
    """What a handler factory receives: the settings, and :meth:`send` to publish to
    Kafka inside the batch's transaction.

    ``producer`` is the worker's transactional producer itself; prefer :meth:`send`,
    whose delivery the worker checks before it commits (aiokafka can commit a
    transaction whose batch failed, so unchecked sends could be lost).
    """

    def __init__(self, settings: Settings, producer: AIOKafkaProducer) -> None:
        self.settings = settings
        self.producer = producer
        self._deliveries: list[Any] = []

    async def send(self, topic: str, value: bytes, *, key: bytes | None = None) -> None:
        """Enqueue one record in the batch's transaction (the worker awaits its delivery)."""
        self._deliveries.append(await self.producer.send(topic, value, key=key))

    async def delivered(self) -> None:
        """Wait until every record sent since the last call is acknowledged; raise the
        first delivery error (the worker then aborts the transaction)."""
        pending, self._deliveries = self._deliveries, []
        if pending:
            await asyncio.gather(*pending)


@runtime_checkable
class RemediationHandler(Protocol):
    """Acts on remediation requests. Built by a factory ``factory(context: HandlerContext)``.

    ``handle`` may be sync or ``async``; it is called once per request, in order, inside
    the batch's transaction. Raising aborts the batch and stops the worker. An optional
    ``close()`` (sync or async) is called on shutdown.
    """

    def handle(self, request: RemediationRequest) -> None | Awaitable[None]: ...


class TopicPublisher:
    """The built-in handler: each request to ``CG_REMEDIATION_TOPIC``, keyed by its
    ``context_id``, inside the worker's transaction."""

    def __init__(self, context: HandlerContext) -> None:
        self._context = context
        self.topic = context.settings.remediation_topic

    async def handle(self, request: RemediationRequest) -> None:
        from stream.wire import encode_remediation_request

        # Only enqueued here: the worker waits for every delivery before it commits.
        await self._context.send(self.topic, encode_remediation_request(request),
                                 key=request.context_id.encode("utf-8"))


def load_handlers(spec: str, context: HandlerContext) -> list[tuple[str, RemediationHandler]]:
    """Build the handlers of ``spec`` (comma-separated ``module:factory`` or ``module.factory``).

    Raises ConfigurationError naming the path when it does not import, is not callable
    or builds an object without ``handle``.
    """
    handlers: list[tuple[str, RemediationHandler]] = []
    for path in (p.strip() for p in spec.split(",")):
        if not path:
            continue
        module_name, sep, attr = path.partition(":")
        if not sep:
            module_name, _, attr = path.rpartition(".")
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ConfigurationError(
                f"remediation handler {path!r} does not load ({type(exc).__name__}: {exc}); "
                "fix CG_REMEDIATION_HANDLERS (module:factory, comma-separated)"
            ) from None
        if not callable(factory):
            raise ConfigurationError(f"remediation handler {path!r} is not a class or function")
        handler = factory(context)
        if not callable(getattr(handler, "handle", None)):
            raise ConfigurationError(f"remediation handler {path!r} built an object without handle(request)")
        handlers.append((path, handler))
    if not handlers:
        raise ConfigurationError("CG_REMEDIATION_HANDLERS names no handler")
    return handlers


async def maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value

"""What the worker needs from the framework that hosts it: the :class:`Host` protocol.

The runtime, the durability object and the web views reach the framework only through
this protocol; :class:`stream.worker.compat.FaustHost` implements it on faust-streaming
(the only module that touches faust). No framework import here.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol


@dataclass(frozen=True)
class Request:
    """A web request: the route's path parameters (decoded), headers, the raw path."""

    params: Mapping[str, str]
    headers: Mapping[str, str] = field(default_factory=dict)
    raw_path: str = "/"


@dataclass(frozen=True)
class Response:
    """A web response (also what :meth:`Host.http_get` returns)."""

    status: int
    body: bytes
    content_type: str = "application/json"

    @classmethod
    def json(cls, obj: Any, status: int = 200) -> Response:
        return cls(status, json.dumps(obj).encode("utf-8"), "application/json; charset=utf-8")


Handler = Callable[[Request], Awaitable[Response]]


class Host(Protocol):
    """The framework's side of the worker: group membership, the input stream, assignment
    callbacks, timers, web routes, the start-up and the CLI."""

    # --- group membership
    def generation(self) -> int:
        """The consumer group generation of the current assignment."""

    @property
    def rebalancing(self) -> bool:
        """A rebalance is in progress."""

    @property
    def url(self) -> str:
        """This worker's canonical URL (advertised to the group)."""

    def owner_url(self, topic: str, partition: int) -> str | None:
        """The canonical URL of the group member assigned ``topic``/``partition`` (None: nobody)."""

    def highwater(self, topic: str, partition: int) -> int | None:
        """The high watermark of an input partition at the consumer's last fetch (None: unknown)."""

    async def commit_offsets(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit the group's offsets (next offset per input partition) of partitions still
        assigned here; raises on failure."""

    # --- the input stream and the callbacks
    def consume(self, handle: Callable[[Sequence[Any]], Awaitable[None]],
                on_end: Callable[[BaseException], None]) -> None:
        """Deliver the input topics' records to ``handle`` in batches (records with ``topic``,
        ``partition``, ``offset``, ``key``, ``value``, ``timestamp``); ``on_end(exc)`` if the
        stream ends or fails while the worker runs."""

    def on_assigned(self, callback: Callable[[Iterable[Any]], Awaitable[None]]) -> None:
        """``callback(topic partitions)`` after each assignment."""

    def on_revoked(self, callback: Callable[[Iterable[Any]], Awaitable[None]]) -> None:
        """``callback(topic partitions)`` before partitions are taken away."""

    def every(self, seconds: float, callback: Callable[[], Awaitable[None]]) -> None:
        """Call ``callback`` every ``seconds`` while the worker runs."""

    # --- start-up and stop
    def before_start(self, check: Callable[[Host], None]) -> None:
        """``check(host)`` before anything starts (it may exit the process with one line)."""

    def on_start(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Awaited once, before the first record is consumed."""

    def on_stop(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Awaited on a graceful stop, before the consumer closes."""

    def web_address(self) -> tuple[str, int] | None:
        """Where the web server will bind (after the CLI's options), None when it is off."""

    # --- web
    def route(self, path: str, handler: Handler) -> None:
        """Serve GET ``path`` (``{name}`` segments become :attr:`Request.params`)."""

    async def http_get(self, url: str, headers: Mapping[str, str], timeout: float) -> Response:
        """GET another worker's view; raises :class:`ConnectionError` when it cannot be reached."""

    # --- the CLI
    def main(self, argv: list[str], *, quiet: bool = False) -> NoReturn:
        """Run the worker command line (``worker`` and its options) and exit."""

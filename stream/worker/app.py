"""The worker, built from settings: :func:`build` (the host, wired) and :func:`create_app`.

Nothing is built at import time: ``python -m stream worker`` and ``faust -A stream.app
worker`` (a shim) call them. The host (:class:`~stream.worker.compat.FaustHost`) runs one
agent over both input topics (co-partitioned: partition ``p`` of each belongs to the same
worker, DESIGN.md §2), a commit timer, the rebalance callbacks and the web views;
everything else is in :class:`~stream.worker.runtime.Runtime`.

Topics (all keyed by the UTF-8 ``context_id``; names from the settings):

More (the module notes): docs/DURABILITY.md, section ``stream/worker/app.py``.
"""

from __future__ import annotations

from typing import Any

from stream.settings import Settings, get_settings
from stream.worker import compat, service, web
from stream.worker.compat import FaustHost, broker_credentials
from stream.worker.runtime import Runtime, stop_now

__all__ = ["broker_credentials", "build", "create_app"]


def build(settings: Settings | None = None) -> tuple[FaustHost, Runtime]:
    """The worker's host and runtime for ``settings``, wired (module docstring)."""
    s = settings or get_settings()
    host = compat.FaustHost(s)
    runtime = Runtime(host, s)
    host.consume(runtime.handle, on_end=lambda exc: stop_now(exc))
    host.every(max(0.05, min(s.commit_interval, s.max_idle or s.commit_interval) / 2), runtime.tick)
    host.on_revoked(runtime.on_revoked)
    host.on_assigned(runtime.on_assigned)
    host.before_start(service.preflight(s))
    host.on_start(service.first_start(s, runtime))
    host.on_stop(runtime.stop)
    web.install(host, runtime, s)
    return host, runtime


def create_app(settings: Settings | None = None) -> Any:
    """The worker's faust app (what ``faust -A`` runs) for ``settings``."""
    return build(settings)[0].app

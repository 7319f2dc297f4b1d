"""``faust -A stream.app worker`` and the CLI's ``worker``: the worker built from the
process settings (:func:`stream.worker.app.build` — importing this module builds it).
"""

from __future__ import annotations

from stream.settings import get_settings
from stream.worker.app import broker_credentials, build, create_app

settings = get_settings()
host, runtime = build(settings)
app = host.app

# kept under its old name for callers of the previous layout
faust_broker_credentials = broker_credentials

__all__ = ["app", "broker_credentials", "create_app", "faust_broker_credentials", "host", "runtime", "settings"]

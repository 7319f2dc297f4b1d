"""``faust -A stream.app worker`` and the CLI's commands: the worker app, built from the
process settings (:func:`stream.worker.app.create_app` — importing this module builds it).
"""

from __future__ import annotations

from stream.settings import get_settings
from stream.worker.app import broker_credentials, create_app

settings = get_settings()
app = create_app(settings)

# kept under its old name for callers of the previous layout
faust_broker_credentials = broker_credentials

__all__ = ["app", "broker_credentials", "create_app", "faust_broker_credentials", "settings"]

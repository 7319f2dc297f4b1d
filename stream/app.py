"""``faust -A stream.app worker`` and the CLI's commands: the worker built from the
process settings (:func:`stream.worker.app.build` — importing this module builds it).

faust's other commands do not apply to this app, so here they refuse with one line that
names checkpoint-guard's own command (README "Using it"): ``agents`` / ``tables`` /
``models`` describe faust agents, tables and records the worker does not use (one agent
over both input topics; state in RocksDB + the state log, not faust tables; pydantic
messages); ``send`` would bypass the input validation; ``reset`` / ``clean-versions``
delete faust table state the worker does not have.
"""

from __future__ import annotations

from stream.settings import get_settings
from stream.worker import compat
from stream.worker.app import broker_credentials, build, create_app

#: faust command -> why it does not apply, and what to run instead.
FAUST_COMMANDS = {
    "agents": "the worker has one agent (validate, over both input topics); `checkpoint-guard worker -h` "
              "describes it",
    "tables": "the worker keeps no faust tables (its state is RocksDB + the state log <CG_APP_ID>-state, "
              "docs/DURABILITY.md); `checkpoint-guard explain CONTEXT NODE` shows a node's state",
    "model": "messages are pydantic models, not faust records; `checkpoint-guard schema DIR` writes their JSON Schemas",
    "models": "messages are pydantic models, not faust records; `checkpoint-guard schema DIR` writes their "
              "JSON Schemas",
    "send": "it would send unvalidated records; use `checkpoint-guard ingest ... --to-kafka` or stream.client.Guard "
            "(validated, keyed by context_id)",
    "reset": "the worker's state is not in faust tables; `checkpoint-guard reset` deletes a stopped worker's "
             "local state (restored from the state log)",
    "clean-versions": "the worker keeps no faust version directories; `checkpoint-guard reset` / "
                      "`checkpoint-guard clean` delete local state",
    "livecheck": "the app defines no LiveCheck; `checkpoint-guard replay --from-kafka --verify` checks a "
                 "deployment end to end",
}


settings = get_settings()
host, runtime = build(settings)
app = host.app
compat.refuse_faust_commands(FAUST_COMMANDS)

# kept under its old name for callers of the previous layout
faust_broker_credentials = broker_credentials

__all__ = ["FAUST_COMMANDS", "app", "broker_credentials", "create_app", "faust_broker_credentials", "host", "runtime",
           "settings"]

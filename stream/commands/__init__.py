"""CLI commands of checkpoint-guard, registered on the faust app's click CLI.

Each module adds one command (or one group of sub-actions) with ``@app.command``.
Commands that do not need a running faust worker override ``__call__`` via
:func:`stream.commands._base.sync_command` so they start fast and own their exit code.
"""

import importlib
import pkgutil

for _mod in pkgutil.iter_modules(__path__):
    if not _mod.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod.name}")

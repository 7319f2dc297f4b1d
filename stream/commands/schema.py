"""``python -m stream schema [DIR]`` — JSON Schemas of every message, for non-Python consumers."""

from __future__ import annotations

import json
from pathlib import Path

from stream.commands._base import argument, command, fail
from stream.wire import json_schemas


@command(argument("directory", required=False, default=None, type=str))
def schema(directory: str | None) -> int:
    """Write the JSON Schemas of input events, alerts, verdicts, node status records, dead letters and
    remediation requests.

    With DIR, writes DIR/<name>.schema.json (input-event, alert, verdict, status,
    dead-letter, remediation-request);
    without, prints them all as one JSON object.
    """
    schemas = json_schemas()
    if directory is None:
        print(json.dumps(schemas, indent=2, sort_keys=True))
        return 0
    out = Path(directory)
    if out.exists() and not out.is_dir():
        fail(f"cannot write the schemas into {directory}: it is a file, not a directory; give a directory "
             "(created if missing), or no argument to print them")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"cannot create directory {directory}: {exc.strerror}; give a directory path you can write "
             "(created if missing), or no argument to print them")
    for name, sch in schemas.items():
        try:
            (out / f"{name}.schema.json").write_text(json.dumps(sch, indent=2, sort_keys=True) + "\n")
        except OSError as exc:
            fail(f"cannot write {out / f'{name}.schema.json'}: {exc.strerror}; give a directory path you can write")
        print(out / f"{name}.schema.json")
    return 0

"""The ``model`` judge's disk cache: one JSON file per request, named by its content hash.

The key (:func:`request_key`) is the SHA-256 of the canonical JSON of (backend, model,
prompt version, the request as sent minus secrets), so the same compaction judged again
with the same settings is answered from disk — no call, and byte-identical events. Files
are ``<dir>/<key[:2]>/<key>.json``, written to a temporary name and renamed (a crash
never leaves half a file); one that cannot be read or decoded is a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def request_key(backend: str, model: str | None, prompt_version: str, payload: Any) -> str:
    doc = {"backend": backend, "model": model, "prompt_version": prompt_version, "request": payload}
    canonical = json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class DiskCache:
    """``get``/``put`` JSON objects by key under ``root`` (created on the first ``put``)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            value = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value``; an ``OSError`` (disk full, read-only directory) propagates."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(value, f, ensure_ascii=False, sort_keys=True, indent=1)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

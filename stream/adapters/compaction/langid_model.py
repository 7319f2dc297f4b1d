"""py3langid's model, restricted to the languages we ask about, kept decompressed in the user cache.

py3langid ships its model LZMA-compressed; loading it costs ~0.5 s of CPU per process, which
a hook call (a new process each time) cannot afford. The first load writes the arrays, with the
columns of our languages only, to ``<user cache>/langid/`` (raw bytes, no pickle); later loads
read them back (~0.1 s), after checking the file's SHA-256 and that it was made from this very
model file (its SHA-256 is in the name). The identifier is the one py3langid builds from the same
arrays, so every guess is identical. Any problem with the cache: py3langid's own load.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from array import array
from pathlib import Path
from typing import Any

_MAGIC = b"cg-langid-v1\n"


def default_cache_dir() -> Path:
    from stream.settings import USER_CACHE_DIR

    return USER_CACHE_DIR / "langid"


def _source() -> Path:
    from py3langid.langid import MODEL_DIR, MODEL_FILE

    path = Path(MODEL_FILE)
    return path if path.is_absolute() else Path(MODEL_DIR) / path


def cache_path(langs: tuple[str, ...], cache_dir: Path | None = None, source: Path | None = None) -> Path:
    """The cache file for these languages and the installed model (named by both hashes)."""
    source = source or _source()
    model = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    which = hashlib.sha256(",".join(langs).encode()).hexdigest()[:8]
    return (cache_dir or default_cache_dir()) / f"model-{model}-{which}.bin"


def _identifier(arrays: dict[str, Any], langs: tuple[str, ...]) -> Any:
    from py3langid.langid import LanguageIdentifier

    nextmove, row = array(arrays["nextmove_code"]), array("H")
    nextmove.frombytes(arrays["nextmove"])
    row.frombytes(arrays["row"])
    ident = LanguageIdentifier(arrays["ptc"], arrays["pc"], arrays["classes"], nextmove, arrays["out"],
                               norm_probs=True, tk_row=row)
    ident.set_languages(list(langs))  # as on the full model: the same columns, in the same order
    return ident


def _restricted(langs: tuple[str, ...], source: Path) -> dict[str, Any]:
    """The arrays of py3langid's model, with the columns of ``langs`` only (py3langid's own load)."""
    import numpy as np
    from py3langid.modelio import load_model

    ptc, pc, classes, nextmove, row, out = load_model(source)
    keep = [i for i, c in enumerate(classes) if c in set(langs)]
    return {"ptc": np.ascontiguousarray(np.asarray(ptc)[:, keep]), "pc": np.ascontiguousarray(np.asarray(pc)[keep]),
            "classes": [classes[i] for i in keep], "nextmove": nextmove.tobytes(), "nextmove_code": nextmove.typecode,
            "row": row.tobytes(), "out": list(out)}


def _encode(arrays: dict[str, Any]) -> bytes:
    import numpy as np

    parts = [arrays["ptc"].tobytes(), arrays["pc"].tobytes(), arrays["nextmove"], arrays["row"],
             np.asarray(arrays["out"], dtype="<i4").tobytes()]
    payload = b"".join(parts)
    head = {
        "ptc": [str(arrays["ptc"].dtype), list(arrays["ptc"].shape)],
        "pc": [str(arrays["pc"].dtype), len(arrays["pc"])],
        "classes": arrays["classes"],
        "nextmove_code": arrays["nextmove_code"],
        "sizes": [len(p) for p in parts],
        "sha256": hashlib.sha256(payload).hexdigest(),
    }
    return _MAGIC + json.dumps(head).encode() + b"\n" + payload


def _decode(data: bytes) -> dict[str, Any] | None:
    """The arrays of a cache file, or None if it is not one whole and intact."""
    import numpy as np

    if not data.startswith(_MAGIC):
        return None
    end = data.find(b"\n", len(_MAGIC))
    try:
        head = json.loads(data[len(_MAGIC):end])
        view = memoryview(data)[end + 1:]
        if len(view) != sum(head["sizes"]) or hashlib.sha256(view).hexdigest() != head["sha256"]:
            return None
        chunks, at = [], 0
        for size in head["sizes"]:
            chunks.append(view[at:at + size])
            at += size
        ptc_dtype, ptc_shape = head["ptc"]
        return {"ptc": np.frombuffer(chunks[0], dtype=ptc_dtype).reshape(ptc_shape),
                "pc": np.frombuffer(chunks[1], dtype=head["pc"][0]), "classes": head["classes"],
                "nextmove": chunks[2], "nextmove_code": head["nextmove_code"], "row": chunks[3],
                "out": np.frombuffer(chunks[4], dtype="<i4").tolist()}
    except (ValueError, KeyError, TypeError):
        return None


def load_identifier(langs: tuple[str, ...], cache_dir: Path | None = None) -> Any:
    """py3langid's identifier restricted to ``langs`` (norm_probs), from the cache when it is intact;
    otherwise from py3langid's model, writing the cache for the next process (if it can)."""
    source = _source()
    path: Path | None = None
    arrays = None
    try:
        path = cache_path(langs, cache_dir, source)
        arrays = _decode(path.read_bytes())
    except OSError:
        pass  # no cache yet (or no model file: py3langid's load says so)
    if arrays is not None:
        return _identifier(arrays, langs)
    arrays = _restricted(langs, source)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(_encode(arrays))
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError:
            pass  # a read-only cache: every process loads py3langid's model (slower, the same guesses)
    return _identifier(arrays, langs)

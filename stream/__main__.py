"""``python -m stream`` — faust's CLI with checkpoint-guard's commands added.

``python -m stream worker`` is the faust worker; ``python -m stream --help`` lists
every command.
"""

from __future__ import annotations


def _offline_since(argv: list[str]) -> list[str]:
    """``replay FILE --since FILE2``: offline, ``--since`` is a flag (DESIGN.md §5).

    The option takes an optional TIME for ``--from-kafka``; without that flag, bind it
    to an empty value so click never swallows the following PATH (files must be read
    in the order given).
    """
    if len(argv) > 1 and "replay" in argv[1:] and "--from-kafka" not in argv:
        return [("--since=" if a == "--since" else a) for a in argv]
    return argv


def settings_errors(exc: Exception) -> list[str]:
    """One line per invalid ``CG_*`` setting of a pydantic ``ValidationError``."""
    lines = []
    for err in exc.errors():  # type: ignore[attr-defined]
        name = "CG_" + "_".join(str(p) for p in err.get("loc", ())).upper()
        value = err.get("input")
        shown = f"={value!r}" if isinstance(value, (str, int, float)) and "PASSWORD" not in name else ""
        lines.append(f"checkpoint-guard: error: {name}{shown}: {err.get('msg', 'invalid')}")
    return lines


def main() -> None:
    import sys

    from pydantic import ValidationError

    try:
        from stream.settings import get_settings

        get_settings()
    except ValidationError as exc:  # a bad CG_* variable: one line each, no traceback
        print("\n".join(settings_errors(exc)), file=sys.stderr)
        raise SystemExit(2) from None

    from stream.app import app
    import stream.commands  # noqa: F401  (registers the commands on the app)

    sys.argv = _offline_since(sys.argv)
    app.main()


if __name__ == "__main__":
    main()

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


def main() -> None:
    import sys

    from stream.app import app
    import stream.commands  # noqa: F401  (registers the commands on the app)

    sys.argv = _offline_since(sys.argv)
    app.main()


if __name__ == "__main__":
    main()

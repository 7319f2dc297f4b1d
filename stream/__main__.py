"""``python -m stream`` — faust's CLI with checkpoint-guard's commands added.

``python -m stream worker`` is the faust worker; ``python -m stream --help`` lists
every command.
"""

from __future__ import annotations


def main() -> None:
    from stream.app import app
    import stream.commands  # noqa: F401  (registers the commands on the app)

    app.main()


if __name__ == "__main__":
    main()

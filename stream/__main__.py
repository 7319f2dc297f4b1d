"""``python -m stream`` = the ``checkpoint-guard`` command (:mod:`stream.cli`)."""

from __future__ import annotations

from stream.cli import main

if __name__ == "__main__":
    main()

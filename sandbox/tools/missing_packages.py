"""What to say when ``sandbox`` is imported by a Python without the project's packages.

``python -m sandbox`` imports the package before its ``__main__``, so a bare ``python`` (not
``.venv``'s) would end in a traceback about ``time_machine`` or ``moto``. This module turns that
into one line naming the environment to use. Standard library only: it runs when imports fail.
"""
from __future__ import annotations

import sys
from typing import NoReturn


def advice(missing: ModuleNotFoundError) -> str:
    """One line: which package is missing, and how to run inside the project's environment."""
    return (f"this Python ({sys.executable}) lacks the project's packages (no module named {missing.name!r}); "
            f"use the project's environment: .venv/bin/python -m sandbox ..., or source .venv/bin/activate "
            f"first (make setup creates .venv)")


def refuse(missing: ModuleNotFoundError) -> NoReturn:
    """Stop the import of ``sandbox`` for want of a third-party package, with the advice above.

    Under ``python -m sandbox...`` (Python sets ``sys.argv[0]`` to ``-m`` while it imports the
    package) the advice is the whole output, as any bad input's error is, and the exit code 2.
    Anywhere else (a notebook's kernel, a script) it is the message of the ``ModuleNotFoundError``.
    A missing ``sandbox`` module is a bug of ours, never the environment's, and keeps its traceback.
    """
    if (missing.name or "sandbox").partition(".")[0] == "sandbox":
        raise missing
    if sys.argv[:1] == ["-m"]:
        print(f"error: {advice(missing)}", file=sys.stderr)
        raise SystemExit(2)
    raise ModuleNotFoundError(advice(missing), name=missing.name) from None

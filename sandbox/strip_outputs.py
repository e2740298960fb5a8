"""Keep the course's notebooks clean in git while learners run them.

``make lab`` registers this module as a git *clean filter* for the notebooks (see
``.gitattributes``): git stores and compares each notebook without outputs or execution
counts, so running lessons leaves ``git status`` clean, while the copy on disk keeps what the
learner ran. ``python -m sandbox.strip_outputs FILE...`` strips files in place (``make
reset-notebooks``); with no file it filters stdin to stdout, as git calls it.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def strip(notebook: dict) -> dict:
    """The notebook with every code cell's outputs and execution count removed."""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell.get("metadata", {}).pop("execution", None)
    return notebook


def _dumps(notebook: dict) -> str:
    # nbformat's own layout (indent 1, keys sorted, trailing newline), so a clean file round-trips unchanged
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        sys.stdout.write(_dumps(strip(json.load(sys.stdin))))
        return 0
    for name in paths:
        path = Path(name)
        try:
            path.write_text(_dumps(strip(json.loads(path.read_text()))))
        except (OSError, ValueError) as exc:
            print(f"error: cannot strip {name}: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

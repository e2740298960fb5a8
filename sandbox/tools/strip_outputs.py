"""Keep the course's notebooks clean in git while learners run them.

``make setup`` and ``make lab`` register this module as a git *clean filter* for the notebooks
(``filter.strip-outputs`` in ``.git/config``, used by ``.gitattributes``): git stores and compares
each notebook without what running it wrote (outputs, execution counts, the kernel's
``language_info`` and saved widget state), so running lessons adds nothing to ``git diff`` or a
commit, while the copy on disk keeps what the learner ran. (``git status`` still lists a notebook
whose size changed: git takes a new size for a change without running the filter.)
``python -m sandbox.tools.strip_outputs FILE...`` strips files in place (``make reset-notebooks``); with
no file it filters stdin to stdout, as git calls it. Both ways run the same ``strip``, so a reset
notebook is byte for byte what git stores.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def strip(notebook: dict) -> dict:
    """The notebook as written, without what a kernel run added to it.

    Every code cell loses its outputs, execution count and timings. The notebook's metadata loses
    the widget state a save may store and every ``language_info`` field but the language's name:
    a kernel fills in its version, ``codemirror_mode`` and lexers when it starts, which differ from
    one Python to the next and say nothing about the lesson.
    """
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell.get("metadata", {}).pop("execution", None)
    metadata = notebook.get("metadata", {})
    metadata.pop("widgets", None)
    language = metadata.get("language_info")
    if isinstance(language, dict) and "name" in language:
        metadata["language_info"] = {"name": language["name"]}
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

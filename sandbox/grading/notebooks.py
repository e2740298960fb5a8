"""Exercise notebooks as plain JSON, and nbgrader's markers in their cells.

An exercise is written once, as its solution notebook (``solutions/NN_slug.ipynb``), with the
markers instructors know from nbgrader:

- ``### BEGIN SOLUTION`` ... ``### END SOLUTION``: the answer. The student's copy gets a
  stub in its place, at the same indentation, that raises ``NotImplementedError``;
- ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS``: tests only the grader runs. The
  student's copy drops them.

Two cells are tagged (cell metadata ``tags``): ``answer``, the cell the learner writes (its
code is also the handler file ``exercises/NN_slug.py``), and ``tests``, which holds
``TESTS = [...]``, the tests as data (see ``sandbox.grading.catalog``).
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
ANSWER_TAG, TESTS_TAG = "answer", "tests"
#: Where a notebook keeps what the course knows about its exercise.
METADATA_KEY = "retries_exercise"
_MARKER = re.compile(r"^(\s*)(### (?:BEGIN|END) (?:SOLUTION|HIDDEN TESTS))\s*$")


class MarkerError(ValueError):
    """A cell's markers do not pair up."""


def read(path: str | Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def dumps(notebook: dict[str, Any]) -> str:
    """nbformat's own layout (indent 1, sorted keys, trailing newline), as ``sandbox.tools.strip_outputs`` writes."""
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def source(cell: dict[str, Any]) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else str(text)


def set_source(cell: dict[str, Any], text: str) -> None:
    cell["source"] = text.splitlines(keepends=True)


def tagged(notebook: dict[str, Any], tag: str) -> list[dict[str, Any]]:
    return [c for c in notebook.get("cells", []) if tag in (c.get("metadata") or {}).get("tags", [])]


def exercise_meta(notebook: dict[str, Any]) -> dict[str, Any] | None:
    meta = (notebook.get("metadata") or {}).get(METADATA_KEY)
    return meta if isinstance(meta, dict) else None


def _regions(lines: list[str]) -> list[tuple[int, int, str, str]]:
    """(begin line, end line, kind, indentation) of every marked region, checked to pair up."""
    out, open_ = [], None
    for i, line in enumerate(lines):
        m = _MARKER.match(line)
        if not m:
            continue
        indent, marker = m.groups()
        if marker.startswith("### BEGIN"):
            if open_ is not None:
                raise MarkerError(f"line {i + 1}: {marker} inside another marked region (line {open_[0] + 1})")
            open_ = (i, marker, indent)
        else:
            expected = END_SOLUTION if open_ and open_[1] == BEGIN_SOLUTION else END_HIDDEN
            if open_ is None or marker != expected:
                raise MarkerError(f"line {i + 1}: {marker} without its BEGIN")
            out.append((open_[0], i, "solution" if open_[1] == BEGIN_SOLUTION else "hidden", open_[2]))
            open_ = None
    if open_ is not None:
        raise MarkerError(f"line {open_[0] + 1}: {open_[1]} is never closed")
    return out


def stub_lines(indent: str, exercise: str, markdown: bool = False) -> list[str]:
    """What stands in for a solution in the student's copy."""
    if markdown:
        return [f"{indent}YOUR ANSWER HERE\n"]
    message = f'exercise {exercise}: write this part, then run check(\\"{exercise}\\")'
    return [f"{indent}# YOUR CODE HERE\n", f'{indent}raise NotImplementedError("{message}")\n']


def student_text(text: str, exercise: str, markdown: bool = False) -> str:
    """The student's version of a cell: solutions become stubs, hidden tests go."""
    lines = text.splitlines(keepends=True)
    out, last = [], 0
    for begin, end, kind, indent in _regions(lines):
        out += lines[last:begin]
        if kind == "solution":
            out += stub_lines(indent, exercise, markdown)
        last = end + 1
    out += lines[last:]
    return "".join(out)


def solution_text(text: str, hidden: bool = True) -> str:
    """The cell with its markers removed: solutions kept, hidden tests kept only if ``hidden``."""
    lines = text.splitlines(keepends=True)
    out, last = [], 0
    for begin, end, kind, _ in _regions(lines):
        out += lines[last:begin]
        if kind == "solution" or hidden:
            out += lines[begin + 1:end]
        last = end + 1
    out += lines[last:]
    return "".join(out)


def student_notebook(notebook: dict[str, Any], exercise: str) -> dict[str, Any]:
    """The student's copy of a solution notebook, without outputs."""
    out = copy.deepcopy(notebook)
    for cell in out.get("cells", []):
        set_source(cell, student_text(source(cell), exercise, markdown=cell.get("cell_type") == "markdown"))
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return out



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

Notebooks are read and written here as JSON, not through nbformat: nbformat's import loads jsonschema
and its format checkers (``rfc3987-syntax`` builds a grammar at import), 1.8 s of CPU that a learner's
first ``check()`` or ``mystery()`` and every grading run would pay, for validation and version
conversion that nothing here needs (a submission that is not what we expect is refused with its
reason). The layout written is nbformat's own, so the files are the same either way.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..core.jsonvalues import JsonObject

if TYPE_CHECKING:  # a type only: the grading child reads notebooks without the rest of the grading
    from .shapes import ExerciseMeta

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
ANSWER_TAG, TESTS_TAG = "answer", "tests"
#: Where a notebook keeps what the course knows about its exercise.
METADATA_KEY = "retries_exercise"
_MARKER = re.compile(r"^(\s*)(### (?:BEGIN|END) (?:SOLUTION|HIDDEN TESTS))\s*$")


class MarkerError(ValueError):
    """A cell's markers do not pair up."""


def read(path: str | Path) -> Any:
    """A notebook file's JSON (a submission's undecodable bytes replaced); ValueError if it is not JSON."""
    return loads(Path(path).read_text(errors="replace"))


def loads(text: str | bytes) -> Any:
    """JSON text as data; ValueError if it is not JSON, nesting too deep included (``[[[[...`` 200,000 deep
    makes the decoder raise RecursionError, which would otherwise escape every ``except ValueError``)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8-sig", errors="replace")
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("its JSON is nested too deeply to be a notebook") from None


def problem(notebook: Any) -> str | None:
    """Why parsed JSON is not a notebook this course reads (a student's file may hold any JSON), or None."""
    if not isinstance(notebook, dict):
        kind = ("true or false" if isinstance(notebook, bool) else "a number" if isinstance(notebook, int | float)
                else "a list" if isinstance(notebook, list) else "a string" if isinstance(notebook, str) else "null")
        return f"its JSON is {kind}, not a notebook's object"
    if not isinstance(notebook.get("cells", []), list):
        return "its 'cells' is not a list"
    if not all(isinstance(c, dict) for c in notebook.get("cells", [])):
        return "one of its cells is not an object"
    return None


def dumps(notebook: JsonObject) -> str:
    """nbformat's own layout (indent 1, sorted keys, trailing newline), as ``sandbox.tools.strip_outputs`` writes."""
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def source(cell: JsonObject) -> str:
    """A cell's text; from a student's notebook, only its strings count (any JSON may stand in a cell)."""
    text = cell.get("source", "") if isinstance(cell, dict) else ""
    if isinstance(text, list):
        return "".join(t for t in text if isinstance(t, str))
    return text if isinstance(text, str) else ""


def set_source(cell: JsonObject, text: str) -> None:
    cell["source"] = text.splitlines(keepends=True)


def cells(notebook: Any) -> list[JsonObject]:
    """A notebook's cells that are objects (a student's file may hold anything where cells belong)."""
    found = notebook.get("cells", []) if isinstance(notebook, dict) else []
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def tags(cell: JsonObject) -> list[str]:
    meta = cell.get("metadata")
    found = meta.get("tags", []) if isinstance(meta, dict) else []
    return [t for t in found if isinstance(t, str)] if isinstance(found, list) else []


def tagged(notebook: JsonObject, tag: str) -> list[JsonObject]:
    return [c for c in cells(notebook) if tag in tags(c)]


def exercise_meta(notebook: JsonObject) -> ExerciseMeta | None:
    meta = notebook.get("metadata") if isinstance(notebook, dict) else None
    found = meta.get(METADATA_KEY) if isinstance(meta, dict) else None
    return cast("ExerciseMeta", found) if isinstance(found, dict) else None  # the sandbox's own key


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


def solution_lines(text: str) -> set[int]:
    """The numbers (from 1) of the lines of ``solution_text(text, hidden=False)`` that lie between solution
    markers: the code the learner writes, as against the code the exercise hands out (what mutation testing
    mutates, ``sandbox.tools.mutation``)."""
    lines = text.splitlines(keepends=True)
    out: set[int] = set()
    kept, last = 0, 0
    for begin, end, kind, _ in _regions(lines):
        kept += begin - last
        if kind == "solution":
            out |= set(range(kept + 1, kept + end - begin))
            kept += end - begin - 1
        last = end + 1
    return out


def student_notebook(notebook: JsonObject, exercise: str) -> JsonObject:
    """The student's copy of a solution notebook, without outputs."""
    out = copy.deepcopy(notebook)
    for cell in out.get("cells", []):
        set_source(cell, student_text(source(cell), exercise, markdown=cell.get("cell_type") == "markdown"))
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return out



"""``python -m sandbox.grading.generate`` (``make exercises``): the student versions, from the solutions.

Each exercise is written once, as ``solutions/NN_slug.ipynb``. From it this writes:

- ``exercises/NN_slug.ipynb``: the student's notebook (solutions replaced by stubs that raise
  ``NotImplementedError``, hidden tests dropped, no outputs);
- ``exercises/NN_slug.py``: its answer cell as a file (what the shell checks and the replay
  commands run; ``check()`` in the notebook rewrites it from the learner's cell), with the fingerprint
  of its code, by which ``check()`` knows a file edited by hand and keeps it as ``NN_slug.py.bak``;
- ``solutions/NN_slug.py``: the worked answer as a file, for tests and the command line;
- ``exercises/run_once_kit.py``: ``examples/run_once_improved.py``, which the later exercises import;
- ``sandbox/grading/public_tests.json``: every exercise's public tests, which ``check()`` runs (a learner's
  edits to the notebook's ``TESTS`` list change nothing);
- for a quiz, the timelines it asks about, with the scenario's name removed
  (``exercises/NN_slug/<letter>.json``).

``--check`` writes nothing and exits 1 if any file is missing or out of date (CI runs it).
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import sys
import textwrap
import uuid
from pathlib import Path

from ..vocab import Delivery, RecordType
from . import notebooks as nb
from .catalog import (
    EXERCISES_DIR,
    KIT,
    PUBLIC_TESTS,
    ROOT,
    SOLUTIONS_DIR,
    answer_header,
    answer_text,
    grading_catalogue,
    public_tests_text,
    solution_notebooks,
)

KIT_SOURCE = ROOT / "examples" / "run_once_improved.py"


def _answer_cell(notebook: dict, path: Path) -> str:
    cells = nb.tagged(notebook, nb.ANSWER_TAG)
    if len(cells) != 1:
        raise SystemExit(f"{path}: exactly one cell must be tagged {nb.ANSWER_TAG!r} (found {len(cells)})")
    return nb.source(cells[0])


def outputs(path: Path) -> dict[Path, str]:
    """Every file one solution notebook makes, and its text."""
    notebook = nb.read(path)
    meta = nb.exercise_meta(notebook)
    if meta is None:
        raise SystemExit(f"{path}: no {nb.METADATA_KEY} metadata")
    name = f"{meta['id']}_{meta['slug']}"
    student = nb.student_notebook(notebook, meta["id"])
    student["metadata"][nb.METADATA_KEY] = {k: v for k, v in meta.items() if k != "mysteries"}
    answer = _answer_cell(notebook, path)
    out = {EXERCISES_DIR / f"{name}.ipynb": nb.dumps(student),
           EXERCISES_DIR / f"{name}.py": answer_text(meta, nb.student_text(answer, meta["id"])),
           SOLUTIONS_DIR / f"{name}.py": answer_header(meta, True) + _ended(nb.solution_text(answer, hidden=False))}
    return out


def _ended(text: str) -> str:
    return text.rstrip("\n") + "\n"


def kit_text() -> str:
    """The kit as the exercises ship it: a header that says what exercises 05 to 07 need from it (how to call
    ``run_once``, what it raises), read from the code itself, and that the code is the worked answer to earlier
    and later exercises, then the code."""
    source = KIT_SOURCE.read_text()
    return kit_header(source) + source


#: The keyword arguments of the kit's run_once the exercises use, in words (a test checks each is a parameter).
KIT_ARGUMENTS = {
    "payload": "what makes two requests the same; a repeat of the key with another payload raises "
               "PayloadMismatchError",
    "context": "Lambda's context: the lock lasts as long as the invocation can still run (lock_seconds sets it "
               "instead)",
    "keep_seconds": "how long a COMPLETED result is kept and replayed",
}
#: What the kit's code answers, said before any of it (exercise 05 points learners to this file).
KIT_SPOILER = ("SPOILER below this header: the code is the course's worked answer to exercise 03 (store and "
               "replay), exercise 04 (locks and retention: claim, lock_seconds_for, KEEP_FOR) and the fencing half "
               "of exercise 08 (save and release, conditional on the owner token). Do those first; exercises 05, 06 "
               "and 07 need nothing from this file but what this header says.")


def kit_header(source: str) -> str:
    """How to call the kit's ``run_once`` and what it raises, read from its code (so it cannot drift from it), and
    ``KIT_SPOILER``: comment lines, between rules."""
    tree = ast.parse(source)
    run_once = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run_once")
    errors = [n for n in tree.body if isinstance(n, ast.ClassDef)
              and any(isinstance(b, ast.Name) and b.id.endswith("Error") for b in n.bases)]

    def first_line(node: ast.FunctionDef | ast.ClassDef) -> str:
        return (ast.get_docstring(node) or "").splitlines()[0]

    said = [("run_once_kit.py: the run_once that exercises 05, 06 and 07 import. A copy of "
             "examples/run_once_improved.py, made by `make exercises`; do not edit this copy.", ""),
            ("", ""), ("How to call it:", ""), ("from run_once_kit import run_once", "  "),
            (f"run_once({ast.unparse(run_once.args)})", "  "), (first_line(run_once), "    ")]
    said += [(f"{name}: {what}", "    ") for name, what in KIT_ARGUMENTS.items()]
    said += [("What it raises (import the ones you catch from run_once_kit):", "")]
    said += [(f"{c.name} (a kind of {', '.join(ast.unparse(b) for b in c.bases)}): {first_line(c)}", "  ")
             for c in errors]
    said += [("", ""), (KIT_SPOILER, "")]
    lines: list[str] = []
    for text, indent in said:
        more = indent + "  " if indent else ""  # an item's lines hang under it; a paragraph's do not
        lines += textwrap.wrap(text, 106, initial_indent=indent, subsequent_indent=more) or [""]
    rule = "# " + "-" * 106
    return "\n".join([rule, *(f"# {line}".rstrip() for line in lines), rule, ""]) + "\n"


def every_output() -> dict[Path, str]:
    files: dict[Path, str] = {EXERCISES_DIR / KIT: kit_text(), SOLUTIONS_DIR / KIT: kit_text(),
                              PUBLIC_TESTS: public_tests_text(grading_catalogue())}
    for path in solution_notebooks():
        files.update(outputs(path))
    return files


def mysteries(path: Path) -> dict[Path, str]:
    """A quiz's timelines: the runs it asks about, scrubbed of what would give the answer away."""
    from ..scenarios import run_scenario

    notebook = nb.read(path)
    meta = nb.exercise_meta(notebook) or {}
    out = {}
    for letter, spec in (meta.get("mysteries") or {}).items():
        result = run_scenario(spec["scenario"], f"{ROOT / 'examples' / 'naive_email.py'}:handler",
                              seed=spec.get("seed", 0), settings=spec.get("settings") or {})
        data = scrubbed(result.history.to_dict())
        data["meta"]["title"] = f"Timeline {letter}"
        folder = EXERCISES_DIR / f"{meta['id']}_{meta['slug']}"
        out[folder / f"{letter}.json"] = own_request_ids(nb.dumps(data), data, letter)
    return out


def own_request_ids(text: str, data: dict, letter: str) -> str:
    """A quiz timeline's text with request ids of its own: each id renamed to a UUID made from the letter and
    the id (a hash of both, so the same every time the files are made). The mysteries run from the same seed, so their
    worlds draw the same ids in the same order, and one id would turn up in several timelines, in an exercise
    that asks the learner to compare request ids. Within a timeline, equal ids stay equal (an async retry keeps
    its first invocation's), and different ones stay different. They keep the look of Lambda's (version 4)."""
    ids = sorted({e["request_id"] for e in data["events"] if isinstance(e.get("request_id"), str) and e["request_id"]})
    for old in ids:
        digest = hashlib.sha256(f"retries-will-happen/quiz/{letter}/{old}".encode()).digest()
        text = text.replace(old, str(uuid.UUID(bytes=digest[:16], version=4)))
    return text


#: Delivery marks that name their scenario ("producer re-send"): the quiz asks for what they say. The
#: evidence stays: the producer's sends, the request ids, how each invocation ended.
_NAMING_MARKS = (Delivery.PRODUCER_RESEND, Delivery.SPONTANEOUS_DUPLICATE, Delivery.CALLER_RESEND, Delivery.STALE_COPY)


def scrubbed(data: dict) -> dict:
    """A quiz timeline without what gives its answer away: the scenario's name and settings, each repeat's
    cause ("retry 1", "client retry"), the marks and notes that explain a repeat in words."""
    data["meta"] = {k: v for k, v in data["meta"].items() if k not in ("scenario", "settings")}
    events = []
    for e in data["events"]:
        if e["type"] == RecordType.NOTE or (e["type"] == RecordType.DELIVERY and e.get("what") in _NAMING_MARKS):
            continue
        if e["type"] == RecordType.INVOKE_START:
            e = {**e, "cause": "delivered"}
        if isinstance(e.get("detail"), dict):
            e = {**e, "detail": {k: v for k, v in e["detail"].items() if k not in ("why", "returns")}}
        events.append(e)
    data["events"] = events
    return data


def stale(files: dict[Path, str]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p, text in files.items() if not p.is_file() or p.read_text() != text]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.grading.generate", description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if a student version is out of date")
    args = p.parse_args(argv)
    files = every_output()
    if args.check:
        behind = stale(files)
        missing = [str(p.relative_to(ROOT)) for s in solution_notebooks() for p in mysteries_expected(s)
                   if not p.is_file()]
        for name in behind + missing:
            print(f"out of date: {name}", file=sys.stderr)
        if behind or missing:
            print("run `make exercises` and commit the result", file=sys.stderr)
            return 1
        print(f"{len(files)} generated files are up to date")
        return 0
    for s in solution_notebooks():
        files.update(mysteries(s))
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


def mysteries_expected(path: Path) -> list[Path]:
    meta = nb.exercise_meta(nb.read(path)) or {}
    folder = EXERCISES_DIR / f"{meta.get('id')}_{meta.get('slug')}"
    return [folder / f"{letter}.json" for letter in meta.get("mysteries") or {}]


if __name__ == "__main__":
    sys.exit(main())

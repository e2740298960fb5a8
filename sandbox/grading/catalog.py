"""The exercises and their tests, read from the notebooks (or from a grader's ``tests.json``).

Each exercise notebook keeps its tests in the cell tagged ``tests`` as data, ``TESTS = [...]``:
a list of dicts, one per test. A test belongs to a graded *item* (several tests may share one)
and is one of:

- a scenario run over seeds: ``{"scenario": "async-retry", "seeds": 2, "settings": {...}}``;
- every interleaving of a small concurrent case: ``{"scenario": "concurrent-claims", "exhaustive": true}``;
- a drill, a small world built to test one promise (``sandbox.grading.drills``): ``{"drill": "replay"}``;
- a question: ``{"question": "A", "answer": "sqs-batch-failure"}`` (the grader's, hidden) or
  ``{"question": "A", "answer_salt": "...", "answer_sha256": "..."}`` (a public self-check that does not show
  the answer: ``scoring.answer_hash``, PBKDF2-SHA256 with the salt).

Credit: an item's ``points`` are its weight in the exercise, stated once, on the item's first test (its other
tests, hidden ones included, state none: they earn no points of their own, and a list that repeated them would
read as more points than the exercise has; ``points_gaps`` refuses it). A scenario run over several seeds measures
something graded, the share of its seeds that hold, and gives that share of its item's points (credit per
seed, ``Test.partial``: every seed is run, "3 of 4 seeds held: 1.5 of 2 points", kept to hundredths). The
rest are all or nothing: one broken interleaving of an exhaustive search is a proof of the bug, a drill tests
one promise, a question has one answer. An item scores all its points when every test passes; otherwise
nothing, unless every failed test gives credit per seed, and then the share of its seeds that held.

Common fields: ``item``, ``points``, ``what`` (what passing it verifies, in words), ``expect``
(extra promises checked on each run, ``sandbox.grading.scoring.EXPECTATIONS``), ``campaign``
(a test ``check()`` runs with fresh random seeds, as the grader does with every test).
Hidden tests (between nbgrader's hidden-test markers) reach the grader only: solutions are
read by the grading parent, which sends the child process nothing but the tests to run.
"""
from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .. import paths
from ..core.jsonvalues import JsonObject
from ..errors import BadInput
from ..settings import SettingValue
from . import notebooks as nb
from .shapes import ExerciseJson, ExerciseMeta, ScenarioRunJson, TestJson

ROOT = paths.ROOT
EXERCISES_DIR, SOLUTIONS_DIR = ROOT / "exercises", ROOT / "solutions"
#: Every exercise's public tests, written by ``make exercises`` from the solutions: what ``check()`` runs,
#: whatever a learner does to the ``TESTS = [...]`` list in their notebook.
PUBLIC_TESTS = Path(__file__).with_name("public_tests.json")
#: The module every exercise after 04 imports its run_once from, shipped next to the handler.
KIT = "run_once_kit.py"


@dataclass(frozen=True)
class Test:
    item: str
    points: int | None = None  # the item's points, on its first test only (None: 1 there, nothing on the others)
    what: str = ""
    scenario: str | None = None
    settings: dict[str, SettingValue] = field(default_factory=dict)
    seeds: int = 1
    exhaustive: bool = False
    max_schedules: int = 200
    drill: str | None = None
    question: str | None = None
    answer: str | None = None
    answer_sha256: str | None = None
    answer_salt: str | None = None
    expect: tuple[str, ...] = ()
    campaign: bool = False
    hidden: bool = False

    @property
    def kind(self) -> str:
        if self.question is not None:
            return "question"
        if self.drill is not None:
            return "drill"
        return "exhaustive" if self.exhaustive else "seeds"

    @property
    def partial(self) -> bool:
        """Whether the test gives credit per seed: a scenario over several seeds (see the module's docstring)."""
        return self.kind == "seeds" and self.seeds > 1

    def to_dict(self) -> TestJson:
        """Every field, in their order (as ``asdict`` gives them), the expected verdicts as a list."""
        return {"item": self.item, "points": self.points, "what": self.what, "scenario": self.scenario,
                "settings": dict(self.settings), "seeds": self.seeds, "exhaustive": self.exhaustive,
                "max_schedules": self.max_schedules, "drill": self.drill, "question": self.question,
                "answer": self.answer, "answer_sha256": self.answer_sha256, "answer_salt": self.answer_salt,
                "expect": list(self.expect), "campaign": self.campaign, "hidden": self.hidden}

    @classmethod
    def from_dict(cls, data: TestJson, hidden: bool | None = None) -> "Test":
        # by name, the fields a test states; what else it states is refused below, by name too
        known: dict[str, Any] = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise BadInput(f"test {data.get('item')!r} has unknown fields: {', '.join(unknown)}")
        known["expect"] = tuple(known.get("expect") or ())
        if hidden is not None:
            known["hidden"] = hidden
        return cls(**known)


@dataclass(frozen=True)
class Requirement:
    """One numbered sentence of an exercise's task, and the items that test it (the notebook's metadata holds the
    table; the task text, the grader and the feedback all read it from there)."""

    text: str
    items: tuple[str, ...]


def requirement_gaps(exercise: "Exercise") -> list[str]:
    """What is wrong with an exercise's requirement table: a requirement with no item, an item under none or
    under two, an item named that the exercise does not have (empty: the table is complete)."""
    out = [] if exercise.requirements else [f"exercise {exercise.id} has no requirement table"]
    out += [f"requirement {n} ({r.text}) has no item" for n, r in enumerate(exercise.requirements, 1) if not r.items]
    named = [i for r in exercise.requirements for i in r.items]
    out += [f"item {i} is under two requirements" for i in sorted({i for i in named if named.count(i) > 1})]
    out += [f"item {i} has no requirement" for i in exercise.items if i not in named]
    out += [f"requirement names {i}, which is no item" for i in sorted(set(named) - set(exercise.items))]
    return out


def render_requirements(requirements: tuple[Requirement, ...]) -> str:
    """The requirements as the task text states them: a numbered list (what ``make exercises`` keeps in the cell)."""
    lines = ["**Requirements.** Each is checked by its own tests; the feedback names the one an item checks."]
    return "\n".join(lines + [f"{n}. {r.text}" for n, r in enumerate(requirements, 1)])


@dataclass(frozen=True)
class Exercise:
    id: str
    slug: str
    title: str
    tests: tuple[Test, ...]
    function: str = "handler"  # what the answer cell defines: the handler, or answers() for a quiz
    next: str = ""  # what the next exercise adds, said on success
    preview: ScenarioRunJson | None = None  # a run that shows what this exercise still gets wrong
    kit: bool = False  # the answer imports run_once_kit
    requirements: tuple[Requirement, ...] = ()  # the task's numbered sentences, each with the items that test it

    @property
    def name(self) -> str:
        return f"{self.id}_{self.slug}"

    def requirement_of(self, item: str) -> str:
        """"requirement N: its sentence" for the requirement ``item`` tests ("" when the table names none)."""
        for n, r in enumerate(self.requirements, 1):
            if item in r.items:
                return f"requirement {n}: {r.text}"
        return ""


    @property
    def items(self) -> dict[str, int]:
        """item -> points, in the order the tests name them (an item's points: its first test's)."""
        out: dict[str, int] = {}
        for t in self.tests:
            out.setdefault(t.item, 1 if t.points is None else t.points)
        return out

    @property
    def max_score(self) -> int:
        return sum(self.items.values())

    def public(self) -> "Exercise":
        return Exercise(self.id, self.slug, self.title, tuple(t for t in self.tests if not t.hidden), self.function,
                        self.next, self.preview, self.kit, self.requirements)

    def to_dict(self) -> ExerciseJson:
        return {"id": self.id, "slug": self.slug, "title": self.title, "function": self.function, "next": self.next,
                "preview": self.preview, "kit": self.kit, "tests": [t.to_dict() for t in self.tests],
                "requirements": [{"text": r.text, "items": list(r.items)} for r in self.requirements]}

    @classmethod
    def from_dict(cls, data: ExerciseJson) -> "Exercise":
        return cls(data["id"], data["slug"], data["title"], tuple(Test.from_dict(t) for t in data["tests"]),
                   data.get("function", "handler"), data.get("next", ""), data.get("preview"), data.get("kit", False),
                   requirements_of(data))


def requirements_of(data: ExerciseMeta | ExerciseJson) -> tuple[Requirement, ...]:
    """The requirement table of an exercise's metadata (or of its entry in ``public_tests.json``)."""
    return tuple(Requirement(str(r["text"]), tuple(r["items"])) for r in data.get("requirements") or [])


def answer_header(meta: ExerciseMeta, solution: bool) -> str:
    name = f"{meta['id']}_{meta['slug']}"
    if solution:
        return (f"# Solution to exercise {meta['id']} · {meta['title']}\n"
                f"# The answer cell of solutions/{name}.ipynb.\n"
                f"# Generated by `make exercises`; edit the notebook, not this file.\n")
    return (f"# Exercise {meta['id']} · {meta['title']}\n"
            f"# The answer cell of exercises/{name}.ipynb, as a file: write your answer in that cell.\n"
            f"# check(\"{meta['id']}\") in the notebook saves the cell here, so the shell runs the same code:\n"
            f"#   python -m sandbox.grading check {meta['id']}\n"
            f"# It replaces this file; if you edited the file by hand, it keeps your version as {name}.py.bak.\n")


#: The last header line of a student's answer file: the fingerprint of the code below it, as it was written.
FINGERPRINT = "# fingerprint of the code below, as written: "


def fingerprint(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()[:16]


def answer_text(meta: ExerciseMeta, code: str) -> str:
    """A student's answer file: the header, the code's fingerprint, the code (how check and the generator write it)."""
    code = code.rstrip("\n") + "\n"
    return answer_header(meta, solution=False) + FINGERPRINT + fingerprint(code) + "\n" + code


def written_as_is(text: str) -> bool:
    """Whether an answer file is just as check() or the generator wrote it (its code matches its fingerprint)."""
    _, found, rest = text.partition(FINGERPRINT)
    if not found:
        return False
    mark, _, code = rest.partition("\n")
    return mark == fingerprint(code)


def tests_literal(text: str) -> list[TestJson]:
    """The value of ``TESTS = [...]`` in a tests cell, read as data (never run)."""
    tree = ast.parse(text)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TESTS" for t in node.targets):
            value = ast.literal_eval(node.value)
            if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
                raise BadInput("TESTS must be a list of dicts")
            return value
    raise BadInput("the tests cell has no TESTS = [...]")


def points_gaps(tests: list[Test]) -> list[str]:
    """What is wrong with how a tests list states its items' points: a test that states points for an item an
    earlier test already gave them to (empty: each item's points are stated once, on its first test)."""
    seen: set[str] = set()
    out = []
    for t in tests:
        if t.item in seen and t.points is not None:
            out.append(f"a test of {t.item} states points again ({t.points}): state an item's points once, on its "
                       f"first test; its other tests state none")
        seen.add(t.item)
    return out


def from_notebook(notebook: JsonObject, with_hidden: bool) -> Exercise:
    meta = nb.exercise_meta(notebook)
    if meta is None:
        raise BadInput(f"the notebook has no {nb.METADATA_KEY} metadata")
    tagged = nb.tagged(notebook, nb.TESTS_TAG)
    if not tagged:
        raise BadInput(f"exercise {meta['id']}: no cell is tagged {nb.TESTS_TAG!r}")
    [cell] = tagged
    text = nb.source(cell)
    public = tests_literal(nb.solution_text(text, hidden=False))
    tests = [Test.from_dict(t, hidden=False) for t in public]
    if with_hidden:
        every = tests_literal(nb.solution_text(text, hidden=True))
        tests += [Test.from_dict(t, hidden=True) for t in every[len(public):]]
    return Exercise(meta["id"], meta["slug"], meta["title"], tuple(tests), meta.get("function", "handler"),
                    meta.get("next", ""), meta.get("preview"), bool(meta.get("kit")), requirements_of(meta))


def solution_notebooks(folder: Path = SOLUTIONS_DIR) -> list[Path]:
    return sorted(folder.glob("[0-9][0-9]_*.ipynb"))


@cache
def _public_catalogue() -> dict[str, Exercise]:
    """Every exercise with its public tests (what ``check()`` runs), as ``make exercises`` wrote them in the
    package: never from the learner's notebook, whose ``TESTS = [...]`` cell is theirs to edit."""
    return {e["id"]: Exercise.from_dict(e) for e in json.loads(PUBLIC_TESTS.read_text())["exercises"]}


def public_tests_text(catalogue: dict[str, Exercise]) -> str:
    """``public_tests.json``: the exercises with their public tests only."""
    data = {"exercises": [ex.public().to_dict() for ex in catalogue.values()]}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def exercises() -> dict[str, Exercise]:
    return dict(_public_catalogue())


def exercise(ref: str) -> Exercise:
    """An exercise by its number ("02", "2") or name ("02_claim_the_key"), with its public tests."""
    found = _public_catalogue()
    key = str(ref).split("_")[0].zfill(2)
    if key not in found:
        raise BadInput(f"no exercise {ref!r}; exercises: {', '.join(e.name for e in found.values())}")
    return found[key]


def grading_catalogue(tests_json: Path | None = None) -> dict[str, Exercise]:
    """Every exercise with all its tests, hidden ones included: for the grading parent only."""
    if tests_json is not None:
        data = json.loads(Path(tests_json).read_text())
        return {e["id"]: Exercise.from_dict(e) for e in data["exercises"]}
    out = {}
    for path in solution_notebooks():
        ex = from_notebook(nb.read(path), with_hidden=True)
        gaps = points_gaps(list(ex.tests))  # the course's own lists only: a learner's old copy is not refused
        if gaps:
            raise BadInput(f"{path.name}: {gaps[0]}")
        out[ex.id] = ex
    return out

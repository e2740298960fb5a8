"""``check("02")``: instant feedback on an exercise, in the notebook or from the shell.

In a notebook, ``check`` takes the cell that defines your handler (the cell tagged
``answer``), saves it as ``exercises/NN_slug.py`` so the shell check and the replay command
run the very same code, and then runs the exercise's public tests and a seeded adversarial
campaign (fresh seeds each time, printed so you can replay them) against that file. On a
failure it shows the failing scenario, the seed or schedule, what the checker saw, a hint that
names the flaw, the timeline and the one command that replays it; on success, what was verified
and what the next exercise adds. From the shell: ``python -m sandbox.grading check 02``.
"""
from __future__ import annotations

import inspect
import linecache
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import judge
from .catalog import EXERCISES_DIR, KIT, ROOT, Exercise, exercise
from .catalog import answer_header as generated_header
from .judge import ItemResult, RunInfo, TestResult
from .recorder import MemorySink, Recorder
from .render import check_html, check_text
from .runner import Runner


def answer_header(ex: Exercise) -> str:
    """The first lines of an answer file (the generator writes the same ones)."""
    return generated_header({"id": ex.id, "slug": ex.slug, "title": ex.title}, solution=False)


@dataclass
class CheckResult:
    """What a check found; shows itself as text, or as HTML in Jupyter."""

    exercise: Exercise
    handler: str  # as the replay commands name it
    items: list[ItemResult]
    seconds: float
    campaign_seeds: list[int] = field(default_factory=list)
    preview: str | None = None
    saved_to: str | None = None

    @property
    def passed(self) -> bool:
        return all(i.passed for i in self.items)

    @property
    def score(self) -> int:
        return sum(i.score for i in self.items)

    @property
    def max_score(self) -> int:
        return sum(i.points for i in self.items)

    @property
    def failed(self) -> list[ItemResult]:
        return [i for i in self.items if not i.passed]

    @property
    def hints(self) -> list[str]:
        """The hint codes of every failed item (what the tests of the mutation catalogue assert)."""
        return [code for i in self.failed for code in i.hint_codes]

    def __str__(self) -> str:
        return check_text(self)

    def __repr__(self) -> str:
        return f"<CheckResult {self.exercise.name}: {self.score}/{self.max_score}>"

    def _repr_html_(self) -> str:
        return check_html(self)


# -- where the answer is ---------------------------------------------------------------------------
def _cell_source(func: Any) -> str | None:
    """The whole cell a notebook function was defined in (IPython keeps each cell in linecache)."""
    try:
        filename = inspect.getsourcefile(func) or ""
    except TypeError:
        return None
    lines = linecache.getlines(filename)
    if not lines or Path(filename).is_file():
        return None
    return "".join(lines)


def _answer_target(ex: Exercise) -> Path:
    here = Path.cwd()
    return here / f"{ex.name}.py" if (here / f"{ex.name}.ipynb").is_file() else EXERCISES_DIR / f"{ex.name}.py"


def save_answer(ex: Exercise, cell: str, target: Path) -> None:
    """Write the answer cell as the exercise's file (keeping a copy of a file edited by hand)."""
    text = answer_header(ex) + cell.rstrip("\n") + "\n"
    if target.is_file() and target.read_text() != text and not target.read_text().startswith(answer_header(ex)):
        target.with_suffix(".py.bak").write_text(target.read_text())
    target.write_text(text)
    kit = EXERCISES_DIR / KIT
    if ex.kit and not (target.parent / KIT).exists() and kit.is_file():
        (target.parent / KIT).write_text(kit.read_text())


def locate_answer(ex: Exercise, namespace: dict[str, Any] | None) -> tuple[Path, str | None]:
    """The answer file to check, and where a notebook cell was saved (None if nothing was saved)."""
    func = (namespace or {}).get(ex.function)
    if callable(func):
        cell = _cell_source(func)
        if cell is not None:
            target = _answer_target(ex)
            save_answer(ex, cell, target)
            return target, str(target)
        source = inspect.getsourcefile(func)
        if source and Path(source).is_file():
            return Path(source), None
    return _answer_target(ex), None


def shown_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path.resolve())


# -- running -------------------------------------------------------------------------------------------
def seeds_for(test: Any, campaign: list[int]) -> list[int]:
    """A public test's seeds are 0, 1, ...; a campaign test's are fresh ones, from the campaign's first."""
    start = campaign[0] if test.campaign else 0
    return list(range(start, start + test.seeds))


def run_tests(ex: Exercise, handler_file: Path, shown: str, campaign: list[int],
              watchdog: float | None = None) -> list[TestResult]:
    """Run ``ex``'s tests in this process and judge them (the grader's judge, the recorder's histories)."""
    sink = MemorySink()
    infos: list[RunInfo] = []
    results = []
    spec = f"{handler_file}:{ex.function}"
    with Recorder(sink) as recorder:
        runner = Runner(spec, recorder, infos.append, **({"watchdog": watchdog} if watchdog else {}))
        for index, test in enumerate(ex.tests):
            infos.clear()
            summary = runner.run_test(index, test, seeds_for(test, campaign))
            results.append(judge.judge_test(test, list(infos), sink.history, f"{shown}:{ex.function}", summary))
    return results


def _preview(ex: Exercise, spec: str) -> str | None:
    """What the next exercise fixes, shown on this handler (a run of the exercise's preview scenario)."""
    if not ex.preview:
        return None
    from ..scenarios import run_scenario

    p = ex.preview
    result = run_scenario(p["scenario"], spec, seed=p.get("seed", 0), settings=p.get("settings") or {})
    return f"{p['scenario']} (seed {p.get('seed', 0)}) with your handler: {result.verdict.explain()}"


def check(ref: str, handler: str | None = None, *, campaign_seed: int | None = None) -> CheckResult:
    """Check exercise ``ref`` ("02"): its public tests and a seeded campaign, against your answer.

    ``handler``: a file to check instead (``path/to/file.py``); by default the notebook's answer
    cell (saved as ``exercises/NN_slug.py``), or that file when there is no notebook.
    """
    started = time.perf_counter()
    ex = exercise(ref)
    if handler is not None:
        path, saved = Path(str(handler).rpartition(":")[0] or handler), None
    else:
        path, saved = locate_answer(ex, sys._getframe(1).f_globals)
    shown = shown_path(path)
    base = campaign_seed if campaign_seed is not None else random.randrange(1000, 1_000_000)
    campaign = list(range(base, base + max((t.seeds for t in ex.tests if t.campaign), default=0)))
    items = judge.items(ex, run_tests(ex, path, shown, campaign))
    preview = _preview(ex, f"{path}:{ex.function}") if all(i.passed for i in items) else None
    return CheckResult(ex, f"{shown}:{ex.function}", items, time.perf_counter() - started, campaign, preview, saved)

"""``check("02")``: instant feedback on an exercise, in the notebook or from the shell.

In a notebook, ``check`` takes the cell that defines your handler (the cell tagged
``answer``), saves it as ``exercises/NN_slug.py`` so the shell check and the replay command
run the very same code, and then runs the exercise's public tests and a seeded adversarial
campaign (fresh seeds each time, printed so you can replay them) against that file. On a
failure it shows the failing scenario, the seed or schedule, what the checker saw, a hint that
names the flaw, the timeline and the one command that replays it; on success, what was verified
and what the next exercise adds. From the shell: ``python -m sandbox.grading check 02``.

The answer cell is the one source of truth; the file is its copy. A file edited by hand since check
last wrote it (its code no longer matches the fingerprint in its header) is kept as
``NN_slug.py.bak`` before it is replaced, and the output says so. The tests are the exercise's own
public tests, from the package (``catalog.PUBLIC_TESTS``); a notebook's ``TESTS = [...]`` list that
differs from them changes nothing but a note in the output.
"""
from __future__ import annotations

import inspect
import linecache
import random
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BadInput
from . import notebooks as nb
from . import scoring
from .catalog import EXERCISES_DIR, KIT, ROOT, Exercise, Test, answer_text, exercise, from_notebook, written_as_is
from .recorder import MemorySink, Recorder
from .render import check_html, check_text
from .runner import Runner
from .scoring import ItemResult, RunInfo, TestResult


def answer_file(ex: Exercise, cell: str) -> str:
    """The answer file check writes from a cell (the generator writes the stub's the same way)."""
    return answer_text({"id": ex.id, "slug": ex.slug, "title": ex.title}, cell)


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
    backup: str | None = None  # where the answer file's hand edits were kept before check replaced it
    tests_changed: str | None = None  # how the notebook's TESTS list differs from the exercise's own

    @property
    def passed(self) -> bool:
        return all(i.passed for i in self.items)

    @property
    def score(self) -> float:  # an int unless an item gave partial credit (then scoring.Points)
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


def save_answer(ex: Exercise, cell: str, target: Path) -> Path | None:
    """Write the answer cell as the exercise's file. The cell is the one source of truth and the file its copy;
    a file that is not as check (or ``make exercises``) last wrote it was edited by hand: it is kept first,
    as ``NN_slug.py.bak``, and that path is returned."""
    text = answer_file(ex, cell)
    backup = None
    if target.is_file():
        old = target.read_text(errors="replace")
        if old != text and not written_as_is(old) and not _same_code(old, cell):
            backup = _free_backup(target, old)
            if not backup.is_file():
                backup.write_text(old)
    target.write_text(text)
    kit_beside(ex, target)
    return backup


def kit_beside(ex: Exercise, handler: Path) -> Path | None:
    """An exercise whose answer imports run_once_kit ships the kit in the handler's folder, as a Lambda deployment
    package would (the folder is the task root): put the exercises' kit there if it is missing, and say where."""
    kit, beside = EXERCISES_DIR / KIT, handler.parent / KIT
    if not ex.kit or beside.exists() or not kit.is_file() or not handler.parent.is_dir():
        return None
    beside.write_text(kit.read_text())
    return beside


def _same_code(old: str, cell: str) -> bool:
    """A file that holds the cell's code under a header of comments (or none) loses nothing when it is replaced."""
    lines = old.splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("#")):
        lines.pop(0)
    return "\n".join(lines).strip() == cell.strip()


def _free_backup(target: Path, text: str) -> Path:
    """``NN_slug.py.bak``; if that holds other work, ``NN_slug.py.bak2``, and so on: no backup overwrites another."""
    n = 1
    while True:
        path = target.with_name(target.name + (".bak" if n == 1 else f".bak{n}"))
        if not path.is_file() or path.read_text(errors="replace") == text:
            return path
        n += 1


def locate_answer(ex: Exercise, namespace: Mapping[str, object] | None) -> tuple[Path, str | None, Path | None]:
    """The answer file to check, where a notebook cell was saved (None if nothing was saved) and where a
    hand-edited answer file was kept (None if none was).

    In a notebook, the answer is the cell as it was last run, even if that run failed (an import typo):
    the kernel may still hold the function an earlier run defined, and grading that would grade old code.
    IPython keeps every cell it ran in ``In``; the latest one that defines the function is the answer.
    """
    func = (namespace or {}).get(ex.function)
    cell = _latest_answer_cell(ex, namespace) or (_cell_source(func) if callable(func) else None)
    if cell is not None:
        target = _answer_target(ex)
        backup = save_answer(ex, cell, target)
        return target, str(target), backup
    if callable(func):
        source = inspect.getsourcefile(func)
        if source and Path(source).is_file():
            return Path(source), None, None
    return _answer_target(ex), None, None


def _latest_answer_cell(ex: Exercise, namespace: Mapping[str, object] | None) -> str | None:
    """The last cell the kernel ran that defines the exercise's function at its top level, as it stands."""
    ran = (namespace or {}).get("In")
    if not isinstance(ran, list):
        return None
    pattern = re.compile(rf"^(async\s+)?def\s+{re.escape(ex.function)}\s*\(", re.M)
    for text in reversed(ran):
        if isinstance(text, str) and pattern.search(text):
            return text
    return None


def difference_in_tests(ex: Exercise, local: Any) -> str | None:
    """How a notebook's ``TESTS = [...]`` differs from the exercise's public tests, or None if it does not."""
    if not isinstance(local, list):
        return "it is not a list of tests"
    own = {t.item: t for t in ex.tests}
    mine: dict[str, list[Test]] = {}
    listed = []  # in the notebook's order: an item's tests need not stand together
    for entry in local:
        try:
            test = Test.from_dict(entry, hidden=False)
        except (BadInput, TypeError, AttributeError):
            return f"it holds something that is not a test: {str(entry)[:60]}"
        mine.setdefault(test.item, []).append(test)
        listed.append(test)
    if [t.to_dict() for t in listed] == [t.to_dict() for t in ex.tests]:
        return None
    by_item: dict[str, list[Test]] = {}
    for t in ex.tests:
        by_item.setdefault(t.item, []).append(t)
    says = []
    missing = [i for i in by_item if i not in mine]
    changed = [i for i in by_item if i in mine and mine[i] != by_item[i]]
    added = [i for i in mine if i not in own]
    if missing:
        says.append("it lacks " + ", ".join(missing))
    if changed:
        says.append("it changes " + ", ".join(changed))
    if added:
        says.append("it adds " + ", ".join(added))
    return "; ".join(says) or "its tests are in another order"


def _local_tests(ex: Exercise, namespace: Mapping[str, object] | None) -> Any:
    """The TESTS list the learner sees: the notebook's variable, or its tests cell on disk (from the shell)."""
    if namespace is not None and "TESTS" in namespace:
        return namespace["TESTS"]
    notebook = _answer_target(ex).with_suffix(".ipynb")
    try:
        return [t.to_dict() for t in from_notebook(nb.read(notebook), with_hidden=False).tests]
    except (OSError, ValueError, BadInput, SyntaxError):
        return None  # no notebook, or one too broken to read: nothing to compare


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
            results.append(scoring.judge_test(test, list(infos), sink.history, f"{shown}:{ex.function}", summary))
    return results


def _preview(ex: Exercise, spec: str) -> str | None:
    """What the next exercise fixes, shown on this handler (a run of the exercise's preview scenario)."""
    if not ex.preview:
        return None
    from ..scenarios import run_scenario

    p = ex.preview
    result = run_scenario(p["scenario"], spec, seed=p.get("seed", 0), settings=p.get("settings") or {})
    return (f"Not one of this exercise's tests: the next exercise's case, {p['scenario']} (seed {p.get('seed', 0)}), "
            f"run on your answer to show what that exercise adds. {result.verdict.explain()}")


def check(ref: str, handler: str | None = None, *, campaign_seed: int | None = None,
          watchdog: float | None = None) -> CheckResult:
    """Check exercise ``ref`` ("02"): its public tests and a seeded campaign, against your answer.

    ``handler``: a file to check instead (``path/to/file.py``); by default the notebook's answer
    cell (saved as ``exercises/NN_slug.py``), or that file when there is no notebook. ``watchdog``: real
    seconds an invocation may run without reaching the sandbox (default: the grader's, ``runner.WATCHDOG``).
    """
    started = time.perf_counter()
    ex = exercise(ref)
    namespace = None
    if handler is not None:
        path, saved, backup = Path(str(handler).rpartition(":")[0] or handler), None, None
        kit_beside(ex, path)
    else:
        namespace = sys._getframe(1).f_globals
        path, saved, backup = locate_answer(ex, namespace)
    local = _local_tests(ex, namespace)
    changed = difference_in_tests(ex, local) if local is not None else None
    shown = shown_path(path)
    base = campaign_seed if campaign_seed is not None else random.randrange(1000, 1_000_000)
    campaign = list(range(base, base + max((t.seeds for t in ex.tests if t.campaign), default=0)))
    items = scoring.items(ex, run_tests(ex, path, shown, campaign, watchdog))
    preview = _preview(ex, f"{path}:{ex.function}") if all(i.passed for i in items) else None
    return CheckResult(ex, f"{shown}:{ex.function}", items, time.perf_counter() - started, campaign, preview, saved,
                       shown_path(backup) if backup else None, changed)

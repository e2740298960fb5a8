"""``python -m sandbox.tools.mutation`` (``make mutation``): how many wrong answers each exercise's items catch.

An exercise's tests are only as good as the wrong answers they fail, and the wrong answers a class will
write are not known in advance. Mutation testing stands in for them: it makes many small changes to the
worked answer (a condition dropped, a comparison turned, a string miscased, an argument removed), grades
each changed answer ("mutant") with the exercise's own items, as ``check()`` and the grader do, and counts
the mutants that fail at least one item ("killed"). A mutant that passes every item is a wrong answer that
would earn full marks, unless it cannot change whether the answer is right ("equivalent"): it does the same,
or differs only where the task leaves the choice to the answer (a message's words, which 2xx status, a longer
margin).

Only the learner's code is mutated: the lines between the solution markers of the answer cell
(``sandbox.grading.notebooks.solution_lines``), not the imports, the helpers and the stub around them that the
exercise hands out, nor the kit (``run_once_kit.py``). ``solutions/NN_slug.py`` is that cell as a file.

The mutants are mutmut's (pinned in requirements-dev.txt), made with its own visitor and operators
(``mutmut.mutation``), one mutant per change, applied to the answer file. Why mutmut, not cosmic-ray: these
answers are calls to DynamoDB whose meaning sits in keyword arguments and strings (``ConditionExpression``,
``ConsistentRead=True``, ``"#owner = :me"``, the ``"idempotency-key"`` header, ``"itemIdentifier"``). mutmut
mutates exactly those: it drops each argument or sets it to None, and wraps, lowers and uppercases each
string; cosmic-ray changes neither strings nor arguments, so its mutants would miss most of what a learner
gets wrong here. mutmut is also the lighter install (libcst; cosmic-ray brings aiohttp, SQLAlchemy and
GitPython for its distributed runner, which nothing here needs). Its own runner is not used: it runs pytest
once per mutant through trampolines in a copy of the project; here each mutant is graded in a process forked
from one that has the sandbox loaded, about a second each, two at a time, and each is stopped after a timeout
(a mutant may loop). A mutant that times out, or breaks the grader, counts as killed and is marked so.

Which survivors are accepted is written beside each solution, in ``solutions/NN_slug.mutants.toml``:
``[[equivalent]]`` entries (left out of the score) and ``[[survivor]]``
entries (a wrong answer the items do not catch yet, with the test that is missing; counted against the
score). Each names its mutant by operator, the line it changes (as text) and the change, with ``occurrence``
when the same change appears more than once, never by a number that shifts when the code does. The run fails
when a survivor is listed nowhere, when a listed mutant does not exist or is now killed (the list must be
kept true), or when an exercise scores under ``--fail-under`` (killed / (mutants - equivalent), in percent).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from multiprocessing import connection, get_context
from pathlib import Path
from typing import Any, TypedDict

from ..errors import BadInput
from ..grading import notebooks as nb
from ..grading.catalog import KIT, ROOT, SOLUTIONS_DIR, Exercise, answer_header, grading_catalogue

#: The score every exercise must reach (issue 30): killed / (mutants - equivalent), in percent.
TARGET = 95.0
#: Where a campaign test's seeds start. check() draws them afresh each time; here they are fixed, so a mutant's
#: verdict is the same on every run (a public test's seeds are its own 0, 1, ...).
SEEDS = (90210, 90211)
#: Real seconds a mutant may take before its worker is stopped and it counts as killed (a loop). A mutant
#: that blocks is stopped sooner by the runner's own watchdog (10 s, then 1 s per invocation).
TIMEOUT = 120.0
REPORT = ROOT / "out" / "mutation" / "report.json"
LISTS_SUFFIX = ".mutants.toml"
KINDS = ("equivalent", "survivor")
#: The longest either side of a change is shown (a dropped dict or call is cut, "..." at its end).
LONGEST = 60


# -- the answer and its mutants --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    """A worked answer as its file, and the numbers of the lines the learner writes."""

    exercise: Exercise
    text: str
    lines: frozenset[int]


def answer_of(ex: Exercise) -> Answer:
    """``solutions/NN_slug.py`` and its learner's lines, read from the solution notebook's answer cell."""
    notebook = nb.read(SOLUTIONS_DIR / f"{ex.name}.ipynb")
    [cell] = nb.tagged(notebook, nb.ANSWER_TAG)
    source, meta = nb.source(cell), nb.exercise_meta(notebook) or {}
    header = answer_header(meta, True)
    text = header + nb.solution_text(source, hidden=False).rstrip("\n") + "\n"
    on_disk = SOLUTIONS_DIR / f"{ex.name}.py"
    if not on_disk.is_file() or on_disk.read_text() != text:
        raise BadInput(f"solutions/{ex.name}.py is not its notebook's answer cell: run make exercises")
    skip = header.count("\n")
    return Answer(ex, text, frozenset(n + skip for n in nb.solution_lines(source)))


class MutantCounts(TypedDict):
    """An exercise's mutants: how many, killed, equivalent, survived, and the score (killed of the non-equivalent)."""

    mutants: int
    killed: int
    equivalent: int
    survived: int
    score: float


class GradedMutant(TypedDict):
    """One mutant in the report: where and what it changed, its verdict, the items that failed it, and why it is
    listed (if it is)."""

    operator: str
    lineno: int
    line: str
    change: str
    occurrence: int
    verdict: str
    failed_items: list[str]
    why: str | None


class TallyJson(MutantCounts):
    """An exercise's tally as ``make mutation``'s JSON report holds it."""

    exercise: str
    stale: list[str]
    mutants_graded: list[GradedMutant]


@dataclass(frozen=True)
class Mutant:
    """One change mutmut makes to an answer, named as the lists name it (never by its position in the run)."""

    exercise: str
    operator: str  # mutmut's operator, without its "operator_" prefix
    lineno: int
    line: str  # the line the changed code starts on, stripped
    change: str  # what changed: "before -> after", the differing tokens only
    occurrence: int  # 1, or the nth mutant with the same operator, line and change
    code: str = field(repr=False, compare=False)  # the whole mutated answer file

    @property
    def key(self) -> tuple[str, str, str, int]:
        return self.operator, self.line, self.change, self.occurrence

    @property
    def label(self) -> str:
        again = f" (occurrence {self.occurrence})" if self.occurrence > 1 else ""
        return f"{self.exercise} line {self.lineno} [{self.operator}] {self.change}{again}: {self.line}"

    def entry(self, kind: str, why: str) -> str:
        """The TOML entry that lists this mutant (printed for each survivor, to paste with a reason)."""
        rows = [f"[[{kind}]]", f"operator = {toml_string(self.operator)}", f"line = {toml_string(self.line)}",
                f"change = {toml_string(self.change)}"]
        rows += [f"occurrence = {self.occurrence}"] if self.occurrence > 1 else []
        return "\n".join([*rows, f"why = {toml_string(why)}"])


def toml_string(text: str) -> str:
    """A TOML string for ``text``: literal (as written) when it can be, else JSON's escapes, which TOML shares."""
    return f"'{text}'" if "'" not in text and "\n" not in text else json.dumps(text)


_TOKEN = re.compile(r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|\w+|[<>=!]=|\*\*|//|->|\S")


def change_of(before: str, after: str) -> str:
    """``before -> after`` for the tokens that differ between two versions of a node, whitespace collapsed."""
    old, new = (" ".join(code.split()) for code in (before, after))
    a, b = list(_TOKEN.finditer(old)), list(_TOKEN.finditer(new))
    head = 0
    while head < min(len(a), len(b)) and a[head][0] == b[head][0]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail][0] == b[-1 - tail][0]:
        tail += 1
    if head >= 2 and a[head - 1][0] == "=" and a[head - 2][0].isidentifier():
        head -= 2  # a keyword argument's value: name the keyword ("payload=order -> payload=None")

    def middle(tokens: list[re.Match[str]], text: str) -> str:
        kept = tokens[head:len(tokens) - tail]
        shown = text[kept[0].start():kept[-1].end()] if kept else "(nothing)"
        return shown if len(shown) <= LONGEST else shown[:LONGEST - 4] + " ..."

    return f"{middle(a, old)} -> {middle(b, new)}"


def mutants(answer: Answer) -> list[Mutant]:
    """Every mutant mutmut makes of the learner's lines of ``answer``, in the order of the code."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider
    from mutmut.mutation.file_mutation import MutationVisitor, deep_replace
    from mutmut.mutation.mutators import mutation_operators
    from mutmut.mutation.pragma_handling import IgnoredCode

    wrapper = MetadataWrapper(cst.parse_module(answer.text))
    visitor = MutationVisitor(mutation_operators, IgnoredCode(set(), set(), set()), set(answer.lines))
    wrapper.visit(visitor)
    positions, module, source = wrapper.resolve(PositionProvider), wrapper.module, answer.text.splitlines()
    seen: dict[tuple[str, str, str], int] = {}
    out = []
    for m in visitor.mutations:
        lineno = positions[m.original_node].start.line
        operator = operator_of(m.original_node, m.mutated_node, mutation_operators)
        change = change_of(module.code_for_node(m.original_node), module.code_for_node(m.mutated_node))
        line = source[lineno - 1].strip()
        seen[operator, line, change] = seen.get((operator, line, change), 0) + 1
        code = deep_replace(module, m.original_node, m.mutated_node)
        assert isinstance(code, cst.Module)
        out.append(Mutant(answer.exercise.id, operator, lineno, line, change, seen[operator, line, change], code.code))
    return out


def operator_of(before: Any, after: Any, operators: Iterable[tuple[type, Callable[[Any], Iterable[Any]]]]) -> str:
    """The name of the mutmut operator that turns ``before`` into ``after`` (its visitor does not say)."""
    for kind, operator in operators:
        if isinstance(before, kind) and any(made.deep_equals(after) for made in operator(before)):
            return operator.__name__.removeprefix("operator_")
    raise AssertionError(f"no mutmut operator makes {after!r}")


def sample(found: list[Mutant], size: int) -> list[Mutant]:
    """``size`` mutants chosen by a hash of their names: the same ones every run, whatever the order."""
    def rank(m: Mutant) -> str:
        return hashlib.sha256(repr(m.key).encode()).hexdigest()

    chosen = set(map(id, sorted(found, key=rank)[:size]))
    return [m for m in found if id(m) in chosen]


# -- the lists of accepted survivors ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Listed:
    kind: str  # "equivalent" or "survivor"
    key: tuple[str, str, str, int]
    why: str


def lists_path(ex: Exercise) -> Path:
    return SOLUTIONS_DIR / f"{ex.name}{LISTS_SUFFIX}"


def listed(ex: Exercise) -> dict[tuple[str, str, str, int], Listed]:
    """The mutants ``solutions/NN_slug.mutants.toml`` accepts as survivors, by name (none when it is absent)."""
    path = lists_path(ex)
    data = tomllib.loads(path.read_text()) if path.is_file() else {}
    unknown = sorted(set(data) - set(KINDS))
    if unknown:
        raise BadInput(f"{path.name}: unknown tables {unknown}; the kinds are {list(KINDS)}")
    out: dict[tuple[str, str, str, int], Listed] = {}
    for kind in KINDS:
        for entry in data.get(kind, []):
            try:
                key = (entry["operator"], entry["line"], entry["change"], int(entry.get("occurrence", 1)))
                why = entry["why"].strip()
            except (KeyError, TypeError, ValueError, AttributeError):
                raise BadInput(f"{path.name}: each [[{kind}]] has operator, line, change and why: {entry}") from None
            if not why or "\n" in why or key in out:
                raise BadInput(f"{path.name}: {key} is listed twice, or without a one-line why")
            out[key] = Listed(kind, key, why)
    return out


def stale(ex: Exercise, found: list[Mutant]) -> list[str]:
    """Entries of the exercise's list that name no mutant mutmut makes today (the code or the tool changed)."""
    names = {m.key for m in found}
    return [f"{lists_path(ex).name}: [[{e.kind}]] {e.key} names no mutant" for e in listed(ex).values()
            if e.key not in names]


# -- grading ---------------------------------------------------------------------------------------------------
def failed_items(ex: Exercise, code: str, folder: Path, seeds: Iterable[int] = SEEDS, first: bool = True) -> list[str]:
    """The items of ``ex`` that the answer ``code`` fails, graded in this process (none: it survives). Item by
    item, in the exercise's order, and with ``first`` only up to the first that fails: a mutant is killed by one
    failed item, and most fail an early one, so a killed mutant costs a fraction of a whole grading."""
    from ..grading.exercise_check import run_tests
    from ..grading.scoring import items

    answer = folder / f"{ex.name}.py"
    answer.write_text(code)
    if not (folder / KIT).is_file():
        shutil.copyfile(ROOT / "exercises" / KIT, folder / KIT)
    failed = []
    for item in ex.items:
        only = replace(ex, tests=tuple(t for t in ex.tests if t.item == item))
        if not all(r.passed for r in items(only, run_tests(only, answer, f"exercises/{ex.name}.py", list(seeds)))):
            failed.append(item)
            if first:
                break
    return failed


@dataclass(frozen=True)
class Job:
    exercise: Exercise
    code: str


def _serve(conn: Any) -> None:
    """A worker: grade each job it is sent, in a folder of its own, until it is sent None."""
    folder = Path(tempfile.mkdtemp(prefix="rwh-mutant-"))
    try:
        while (job := conn.recv()) is not None:
            try:
                conn.send(failed_items(job.exercise, job.code, folder))
            except Exception as err:  # a mutant that breaks the grader is reported, never fatal
                conn.send([f"(the grader raised {type(err).__name__}: {err})"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


#: A grading process and the parent's end of its pipe.
Worker = tuple[Any, Any]


def grade_all(jobs: list[Job], workers: int, timeout: float) -> Iterator[tuple[int, list[str]]]:
    """(index of the job, the items it fails) for each job, as workers finish them; a job still running after
    ``timeout`` seconds has its worker killed (that one worker, which this started) and fails "(timeout)"."""
    ctx = get_context("fork")  # the workers share this process's loaded sandbox
    todo = list(enumerate(jobs))[::-1]
    busy: dict[Any, tuple[Worker, int, float]] = {}  # connection -> its worker, its job, when it was sent
    idle = [_start(ctx) for _ in range(min(workers, len(jobs)))]
    try:
        while todo or busy:
            while idle and todo:
                worker, (index, job) = idle.pop(), todo.pop()
                worker[0].send(job)
                busy[worker[0]] = (worker, index, time.monotonic())
            soonest = min(started for _, _, started in busy.values()) + timeout
            for conn in connection.wait(list(busy), timeout=max(0.0, soonest - time.monotonic())):
                worker, index, _ = busy.pop(conn)
                fails, worker = _answer(ctx, worker)
                idle.append(worker)
                yield index, fails
            for conn, (worker, index, started) in list(busy.items()):
                if time.monotonic() - started > timeout:
                    del busy[conn]
                    idle.append(_replace(ctx, worker))
                    yield index, ["(timeout)"]
    finally:
        for conn, process in idle + [w for w, _, _ in busy.values()]:
            _stop(conn, process)


def _answer(ctx: Any, worker: Worker) -> tuple[list[str], Worker]:
    """What a worker that has finished its job sent back, and the worker to use next (a new one if it died)."""
    try:
        return worker[0].recv(), worker
    except EOFError:  # the worker died under the mutant
        return ["(the grading process died)"], _replace(ctx, worker)


def _start(ctx: Any) -> Worker:
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_serve, args=(child,), daemon=True)
    process.start()
    child.close()
    return parent, process


def _replace(ctx: Any, worker: Worker) -> Worker:
    conn, process = worker
    process.kill()
    process.join()
    conn.close()
    return _start(ctx)


def _stop(conn: Any, process: Any) -> None:
    try:
        conn.send(None)
    except OSError:
        pass
    process.join(5)
    if process.is_alive():
        process.kill()
        process.join()
    conn.close()


# -- the report ------------------------------------------------------------------------------------------------
@dataclass
class Tally:
    """One exercise's mutants and what became of each."""

    exercise: Exercise
    found: list[Mutant]
    stale: list[str]
    entries: dict[tuple[str, str, str, int], Listed]  # the exercise's list
    fails: dict[int, list[str]] = field(default_factory=dict)  # index in found -> items failed
    solution_fails: list[str] | None = None

    def verdict(self, index: int) -> str:
        """killed, equivalent, survived (listed as a known gap), unlisted (a survivor nobody listed), or wrong
        listing: misfiled-equivalent (listed as equivalent, yet killed) and now-killed (a listed survivor)."""
        entry = self.entries.get(self.found[index].key)
        killed = bool(self.fails[index])
        if entry is None:
            return "killed" if killed else "unlisted"
        if entry.kind == "equivalent":
            return "misfiled-equivalent" if killed else "equivalent"
        return "now-killed" if killed else "survived"

    def counts(self) -> MutantCounts:
        verdicts = [self.verdict(i) for i in sorted(self.fails)]
        killed = sum(v in ("killed", "misfiled-equivalent", "now-killed") for v in verdicts)
        equivalent = verdicts.count("equivalent")
        scored = len(verdicts) - equivalent
        return {"mutants": len(verdicts), "killed": killed, "equivalent": equivalent,
                "survived": scored - killed, "score": round(100.0 * killed / scored, 1) if scored else 100.0}

    def problems(self, fail_under: float) -> list[str]:
        out = list(self.stale)
        if self.solution_fails:
            out.append(f"{self.exercise.id}: the worked answer itself fails {self.solution_fails}")
        for i in sorted(self.fails):
            verdict, m = self.verdict(i), self.found[i]
            if verdict == "unlisted":
                out.append(f"survivor not listed in {lists_path(self.exercise).name}: {m.label}")
            elif verdict in ("misfiled-equivalent", "now-killed"):
                out.append(f"listed as {'equivalent' if verdict[0] == 'm' else 'a survivor'} but killed by "
                           f"{self.fails[i]}: take it off the list: {m.label}")
        score = self.counts()["score"]
        if self.fails and score < fail_under:
            out.append(f"{self.exercise.id}: score {score}% is under {fail_under:g}%")
        return out

    def to_dict(self) -> TallyJson:
        entries = self.entries
        return {"exercise": self.exercise.name, **self.counts(), "stale": self.stale,
                "mutants_graded": [{"operator": self.found[i].operator, "lineno": self.found[i].lineno,
                                    "line": self.found[i].line, "change": self.found[i].change,
                                    "occurrence": self.found[i].occurrence, "verdict": self.verdict(i),
                                    "failed_items": self.fails[i],
                                    "why": getattr(entries.get(self.found[i].key), "why", None)}
                                   for i in sorted(self.fails)]}


def table(tallies: list[Tally]) -> str:
    rows = [("exercise", "mutants", "killed", "equivalent", "survived", "score")]
    for t in tallies:
        c = t.counts()
        rows.append((t.exercise.name, str(c["mutants"]), str(c["killed"]), str(c["equivalent"]), str(c["survived"]),
                     f"{c['score']:.1f}%"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                               enumerate(zip(row, widths))) for row in rows)


def survivors_text(tallies: list[Tally]) -> str:
    """Each surviving or wrongly listed mutant, with the line it changes and why it is listed (or that it is not)."""
    lines = []
    for t in tallies:
        for i in sorted(t.fails):
            verdict, m = t.verdict(i), t.found[i]
            if verdict == "killed" and not t.fails[i][0].startswith("("):
                continue
            why = t.entries[m.key].why if m.key in t.entries else "NOT LISTED"
            if verdict == "killed":
                verdict, why = "stopped", f"killed, but not by an item: {t.fails[i][0]}"
            lines.append(f"  {verdict:<11} {m.label}\n              why: {why}")
            if verdict == "unlisted":
                lines.append("\n".join("              " + row for row in m.entry("survivor", "...").splitlines()))
    return "\n".join(lines)


# -- the command -----------------------------------------------------------------------------------------------
def campaign(exercises: list[Exercise], size: int | None, workers: int, timeout: float,
             progress: Callable[[str], None]) -> list[Tally]:
    """Mutate and grade ``exercises`` (each one's whole set of mutants, or a ``sample`` of ``size``)."""
    tallies, jobs = [], []
    where: list[tuple[Tally, int | None]] = []  # each job's exercise, and which of its mutants (None: the answer)
    for ex in exercises:
        answer = answer_of(ex)
        found = mutants(answer)
        tally = Tally(ex, found, stale(ex, found), listed(ex))
        tallies.append(tally)
        jobs.append(Job(ex, answer.text))
        where.append((tally, None))
        chosen = found if size is None else sample(found, size)
        for m in chosen:
            jobs.append(Job(ex, m.code))
            where.append((tally, found.index(m)))
    progress(f"grading {len(jobs) - len(exercises)} mutants of {len(exercises)} exercise(s) "
             f"({workers} workers, {timeout:g} s each at most)")
    left = {id(t): sum(1 for w, _ in where if w is t) for t in tallies}
    for index, fails in grade_all(jobs, workers, timeout):
        tally, at = where[index]
        if at is None:
            tally.solution_fails = fails
        else:
            tally.fails[at] = fails
        left[id(tally)] -= 1
        if not left[id(tally)]:
            c = tally.counts()
            progress(f"{tally.exercise.name}: {c['killed']}/{c['mutants']} killed, {c['equivalent']} equivalent, "
                     f"score {c['score']:.1f}%")
    return tallies


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.tools.mutation", description=__doc__.splitlines()[0])
    p.add_argument("--exercise", action="append", metavar="NN", help="only this exercise (repeat for more)")
    p.add_argument("--sample", type=int, metavar="N", help="only N mutants of each exercise, the CI slice's way")
    p.add_argument("--workers", type=int, default=2, help="grading processes (default 2)")
    p.add_argument("--timeout", type=float, default=TIMEOUT, help=f"seconds per mutant (default {TIMEOUT:g})")
    p.add_argument("--fail-under", type=float, default=TARGET, help=f"the lowest score passed (default {TARGET:g})")
    p.add_argument("--json", type=Path, default=REPORT, help="where the report goes (default out/mutation/)")
    args = p.parse_args(argv)
    tool = _tool()
    catalogue = grading_catalogue()
    chosen = [catalogue[e.zfill(2)] for e in args.exercise or catalogue if e.zfill(2) in catalogue]
    if not chosen or len(chosen) != len(args.exercise or catalogue):
        raise BadInput(f"no such exercise among {sorted(catalogue)}")
    started = time.monotonic()
    tallies = campaign(chosen, args.sample, max(1, args.workers), args.timeout,
                       lambda line: print(line, file=sys.stderr, flush=True))
    seconds = round(time.monotonic() - started, 1)
    problems = [line for t in tallies for line in t.problems(args.fail_under)]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"tool": tool, "seeds": list(SEEDS), "seconds": seconds,
                                     "target": args.fail_under, "exercises": [t.to_dict() for t in tallies],
                                     "problems": problems}, indent=1) + "\n")
    print(table(tallies))
    survivors = survivors_text(tallies)
    print(f"\nsurvivors and listings:\n{survivors}" if survivors else "\nno mutant survives")
    print(f"\n{seconds:g} s; report: {_shown(args.json)}")
    for line in problems:
        print(f"problem: {line}")
    return 1 if problems else 0


def _tool() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"mutmut {version('mutmut')}"
    except PackageNotFoundError:
        raise BadInput("mutmut is not installed here: make setup installs it (requirements-dev.txt)") from None


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BadInput as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)

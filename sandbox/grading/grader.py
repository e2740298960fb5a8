"""Grading one submission for one exercise, in a child process, judged here on the grader's own copy.

The parent (this module) reads the exercise's tests (hidden ones included) from the solutions, or
from a bundle's ``tests.json``; the child (``sandbox.grading.child``) gets the tests as data,
fresh seeds and its limits, and never the solutions' source. The child is the submission's
world; the submission's code runs only in execution environments the child starts, contained by
the operating system (``sandbox.runtime.environment.containment``), which see a copy of the answer's
folder and nothing of the child, this process or the machine.

Every record a world writes reaches this process down a pipe the moment it is written: the
effects the services performed, the AWS calls, the deliveries. The grader rebuilds each history
from that copy and judges it with its own checker. The child's own account of each run (its
length, fingerprint and verdict) is still compared with the copy: two processes of the grader's
own that disagree mean a fault in the grader, named as such rather than graded.

A test that hangs, loops, sleeps for real, runs out of memory or kills its process costs that
test (its item scores zero, with the reason); the tests after it run in a fresh child.
"""
from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..core.history import History
from ..errors import BadInput
from ..paths import ROOT
from ..verdict.checker import check
from ..vocab import RecordType
from . import notebooks as nb
from . import scoring, untrusted
from .catalog import EXERCISES_DIR, KIT, Exercise, Test
from .child import PIPE_DONE, PIPE_EFFECT
from .recorder import digest
from .render import block_text, failure_blocks, item_line
from .runner import WATCHDOG
from .scoring import ItemResult, RunInfo, TestResult
from .shapes import ExerciseGradeJson, GradingJob, PipeMessage, ReplayJson, TestSummary
from .untrusted import Refused


@dataclass(frozen=True)
class Limits:
    """What one submission may use. ``test_seconds``: real (wall-clock) seconds the child may go silent
    during a test (no record, no run): a handler writes records all the time while it makes progress,
    so a loaded machine slows a good submission without stopping it."""

    test_seconds: float = 60.0
    startup_seconds: float = 60.0  # the child importing the sandbox, before any submission code
    memory_mb: int = 2048
    cpu_seconds: int = 600
    watchdog: float = WATCHDOG  # real seconds an invocation may run without reaching the sandbox
    max_records: int = 200_000  # records one test may write (a handler printing megabytes)
    submission_seconds: float = 600.0  # real time for all of a submission's tests together
    #: Where the submission's code runs: "contained" (execution environments under bubblewrap) or,
    #: only when the grader is told --unsafe-no-sandbox, "process" (environments with no OS containment).
    isolation: str = "contained"


#: Records in one test past which a timeout is blamed on the output as well (a handler printing megabytes).
FLOOD_RECORDS = 10_000
#: Where fresh grading seeds come from: far from the public tests' 0, 1, ... and check()'s campaigns.
SEED_RANGE = (10_000_000, 2_000_000_000)


def fresh_seed() -> int:
    return SEED_RANGE[0] + secrets.randbelow(SEED_RANGE[1] - SEED_RANGE[0])


def answer_source(path: Path, ex: Exercise, data: bytes | None = None) -> str:
    """The answer's code: a .py file as it is, or a notebook's cell tagged ``answer``.

    ``data``: the file's bytes as discovery read them (so what is graded is what was checked); without it
    the file is read here, never through a link (``sandbox.grading.untrusted``). BadInput says, in words
    for the student, why a file holds no answer: not JSON, nested too deep, not a notebook's shape, no
    answer cell."""
    if path.suffix not in (".py", ".ipynb"):
        raise BadInput(f"{untrusted.shown(path.name)}: a submission is a .py file or a notebook (.ipynb)")
    if data is None:
        try:
            data = untrusted.read_file(path)
        except Refused as exc:
            raise BadInput(f"{untrusted.shown(path.name)}: {exc}") from None
    if path.suffix == ".py":
        return untrusted.decode(data)
    try:
        notebook = nb.loads(data)
    except ValueError as exc:  # json.JSONDecodeError is one
        raise BadInput(f"{untrusted.shown(path.name)} is not a notebook (not JSON: {exc})") from None
    problem = nb.problem(notebook)
    if problem:
        raise BadInput(f"{untrusted.shown(path.name)} is not a notebook ({problem})")
    cells = nb.tagged(notebook, nb.ANSWER_TAG)
    if len(cells) != 1:
        raise BadInput(f"{untrusted.shown(path.name)}: exactly one cell must be tagged {nb.ANSWER_TAG!r} (the answer "
                       f"cell of exercises/{ex.name}.ipynb); found {len(cells)}")
    # JSON may spell a lone surrogate (a backslash-u escape of D800 to DFFF), which no file can hold: "?"
    return nb.source(cells[0]).encode("utf-8", "replace").decode("utf-8")


@dataclass
class ExerciseGrade:
    """One exercise's grade for one student, with the feedback."""

    exercise: Exercise
    items: list[ItemResult]
    reason: str | None = None  # why nothing could be graded (not submitted, does not load)
    tampering: list[str] = field(default_factory=list)
    seed: int | None = None
    seconds: float = 0.0
    source: str | None = None  # the submitted file, as named in the submission
    submitted: Path | None = None  # the submitted file, where the grader read it
    code: str | None = None  # the code graded (a notebook's answer cell), as read once from the file

    @property
    def score(self) -> float:  # an int unless an item gave partial credit (then scoring.Points)
        return sum(i.score for i in self.items)

    @property
    def max_score(self) -> int:
        return self.exercise.max_score

    @property
    def hidden_items(self) -> list[ItemResult]:
        return [i for i in self.items if i.hidden]

    def feedback(self, hidden: bool = False) -> str:
        """The feedback in words. For the student (``hidden=False``): the public items in full and only a
        count of the hidden ones, as Gradescope keeps a hidden test's details back; for the instructor
        (``hidden=True``): every item, hidden ones included."""
        ex = self.exercise
        lines = [f"Exercise {ex.id} · {ex.title}: {self.score}/{self.max_score}"
                 + (f" ({self.source})" if self.source else "")]
        if self.reason:
            lines.append(f"  {self.reason}")
        if self.tampering:
            lines += ["  TAMPERING: graded zero."] + [f"  - {t}" for t in self.tampering]
        shown = [i for i in self.items if hidden or not i.hidden]
        lines += [item_line(i) for i in shown]
        secret = [] if hidden else self.hidden_items
        if secret:
            passed = sum(i.passed for i in secret)
            lines.append(f"  hidden tests: {passed} of {len(secret)} items passed "
                         f"({sum(i.score for i in secret)}/{sum(i.points for i in secret)} points); "
                         f"what they test is not shown")
        if not self.reason:  # a reason that stopped every test is said once, above
            for block in failure_blocks([i for i in shown if not i.passed])[:3]:
                lines += [""] + block_text(block)
        return "\n".join(lines)

    def replays(self, handler: str) -> list[ReplayJson]:
        """For each failed item: the replay command the student got and the same run against ``handler``
        (``path/file.py:function``, the submitted file itself)."""
        out: list[ReplayJson] = []
        for item in self.items:
            t = item.failure
            if t is None or t.failure is None or not t.failure.replay:
                continue
            f = t.failure
            out.append({"item": item.item, "hidden": item.hidden, "student": f.replay,
                        "submitted": scoring.replay_for(t.test, f.seed, f.script, handler)})
        return out

    def to_dict(self) -> ExerciseGradeJson:
        return {"exercise": self.exercise.name, "title": self.exercise.title, "score": self.score,
                "max_score": self.max_score, "reason": self.reason, "tampering": self.tampering,
                "seed": self.seed, "seconds": round(self.seconds, 2), "source": self.source,
                "items": [i.to_dict() for i in self.items], "feedback": self.feedback(),
                "full_feedback": self.feedback(hidden=True)}


def not_graded(ex: Exercise, reason: str, source: str | None = None) -> ExerciseGrade:
    """Every item zero, for one reason (nothing submitted, an unreadable file)."""
    results = [TestResult(t, False, 0, reason=reason) for t in ex.tests]
    return ExerciseGrade(ex, scoring.items(ex, results), reason=reason, source=source)


# -- one child process ------------------------------------------------------------------------------
@dataclass
class _TestState:
    infos: list[RunInfo] = field(default_factory=list)
    summary: TestSummary | None = None
    reason: str | None = None
    tampering: str | None = None


class _Session:
    """One child process running some of the tests; collects what it says until it ends or is stopped."""

    def __init__(self, job: GradingJob, workdir: Path, limits: Limits, states: dict[int, _TestState],
                 meta: dict[tuple[int, int], dict], records: dict[tuple[int, int], list], number: int,
                 budget_ends: float):
        self.job, self.workdir, self.limits, self.budget_ends = job, workdir, limits, budget_ends
        self.out_of_budget = False
        self.states, self.meta, self.records, self.number = states, meta, records, number
        self.witnessed: dict[int, int] = {}  # group -> effects the services reported apart from the history
        self.current: int | None = None
        self.load_error: str | None = None
        self.done = False
        self.stderr_tail = b""

    def run(self) -> tuple[int | None, str | None]:
        """Run; returns (the test it stopped in, why) or (None, None) when every test ended."""
        read_fd, write_fd = os.pipe()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "BOTO"))}
        env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0", PYTHONPATH=_package_root())
        proc = subprocess.Popen([sys.executable, "-m", "sandbox.grading.child", "--fd", str(write_fd)],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                pass_fds=(write_fd,), cwd=self.workdir, env=env, start_new_session=True)
        os.close(write_fd)
        messages: queue.Queue = queue.Queue()
        threading.Thread(target=_read_lines, args=(read_fd, messages), daemon=True).start()
        threading.Thread(target=self._drain_stderr, args=(proc,), daemon=True).start()
        assert proc.stdin is not None  # stdin=PIPE
        try:
            proc.stdin.write(json.dumps(self.job).encode())
            proc.stdin.close()
        except OSError:
            pass  # the child died at once: its exit status says why
        why = self._listen(messages, proc)
        if why is not None:
            _kill(proc)
        code = proc.wait()
        if why is None and not self.done:
            why = self._died(code)
        return (self.current, why) if why else (None, None)

    def _listen(self, messages: queue.Queue, proc: subprocess.Popen) -> str | None:
        deadline = time.monotonic() + self.limits.startup_seconds
        self.test_records, started = 0, False
        while True:
            try:
                message = messages.get(timeout=max(0.0, min(deadline, self.budget_ends) - time.monotonic()))
            except queue.Empty:
                return self._silence(started)
            if message is None:  # the pipe closed
                return None
            kind = message.get("t")
            if started:  # any sign of progress restarts the silence limit
                deadline = time.monotonic() + self.limits.test_seconds
            if kind == "ready":
                started, deadline = True, time.monotonic() + self.limits.test_seconds
                continue
            why = self._take(kind, message)
            if why is not None:
                return why

    def _silence(self, started: bool) -> str:
        """Why the child went quiet for too long."""
        if time.monotonic() >= self.budget_ends:
            self.out_of_budget = True
            count = self.test_records
            flood = f" after writing {count} records (printing megabytes?)" if count > FLOOD_RECORDS else ""
            return (f"ran past the {self.limits.submission_seconds:g} s the grader gives one submission "
                    f"(a hang, an endless loop or a real sleep){flood}; stopped")
        if not started:
            return f"the grading process did not start within {self.limits.startup_seconds:g} s"
        return (f"made no progress for {self.limits.test_seconds:g} s (a hang, an endless loop or a real "
                f"sleep); stopped")

    def _take(self, kind: str | None, message: PipeMessage) -> str | None:
        """Keep one message of the child's; a reason to stop it, if the message is one."""
        if kind == "rec":
            self.test_records += 1
            if self.test_records > self.limits.max_records:
                return (f"wrote more than {self.limits.max_records} records in one test (printing megabytes?); "
                        f"stopped")
            self.records.setdefault((self.number, message["g"]), []).append(message["r"])
        elif kind == PIPE_EFFECT:
            key = _group_key(self.number, message["g"])
            self.witnessed[key] = self.witnessed.get(key, 0) + 1
        elif kind == "group":
            self.meta[(self.number, message["g"])] = message["meta"]
            self.records[(self.number, message["g"])] = []
        elif kind == "run":
            info = RunInfo(**message["info"])
            if info.group:
                info.group = _group_key(self.number, info.group)
            assert self.current is not None  # the child says which test it runs before its runs
            self.states[self.current].infos.append(info)
        elif kind == "test-start":
            self.current, self.test_records = message["i"], 0
        elif kind == "test-end":
            self.states[message["i"]].summary = message["summary"]
        elif kind == "load":
            self.load_error = message["error"]
        elif kind == "crash":
            return "the grading process stopped: " + message["what"].strip().splitlines()[-1][:300]
        elif kind == PIPE_DONE:
            self.done = True
        return None

    def _died(self, code: int) -> str | None:
        if code == 0 and self.load_error is not None:
            return None
        tail = self.stderr_tail.decode(errors="replace").strip().splitlines()
        if code < 0:
            sig = signal.Signals(-code)
            if sig == signal.SIGXCPU:
                return f"used more than {self.limits.cpu_seconds} s of CPU; stopped"
            if sig == signal.SIGXFSZ:
                return "wrote a file larger than the grader allows; stopped"
            return f"the grading process was killed by {sig.name}"
        if tail and "MemoryError" in tail[-1]:
            return f"ran out of memory (the limit is {self.limits.memory_mb} MB)"
        return f"the grading process exited with status {code}" + (f": {tail[-1][:300]}" if tail else "")

    def _drain_stderr(self, proc: subprocess.Popen) -> None:
        assert proc.stderr is not None  # stderr=PIPE
        while chunk := proc.stderr.read(65536):
            self.stderr_tail = (self.stderr_tail + chunk)[-4096:]


def _read_lines(fd: int, out: queue.Queue) -> None:
    with os.fdopen(fd, "rb") as stream:
        for line in stream:
            try:
                out.put(json.loads(line))
            except ValueError:
                continue  # a torn line from a process killed mid-write
    out.put(None)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _group_key(session: int, group: int) -> int:
    return session * 1_000_000 + group


def _package_root() -> str:
    return str(ROOT)


# -- grading ---------------------------------------------------------------------------------------
def seeds_for(index: int, test: Test, base: int) -> list[int]:
    """Fresh seeds for every seeded test and drill (hard-coding the public seeds earns nothing)."""
    if test.kind in ("question", "exhaustive"):
        return []
    start = base + index * 1000
    return list(range(start, start + test.seeds))


def grade(ex: Exercise, submission: Path, *, seed: int | None = None, limits: Limits = Limits(),
          kit: Path | None = None, shown: str | None = None, data: bytes | None = None) -> ExerciseGrade:
    """Grade ``submission`` (a .py file or a notebook) for ``ex`` (with its hidden tests); ``data``: its
    bytes as discovery read them (else it is read here, through no link)."""
    started = time.perf_counter()
    base = fresh_seed() if seed is None else seed
    source = untrusted.shown(submission.name)
    try:
        code = answer_source(submission, ex, data)
    except (BadInput, OSError, UnicodeError) as exc:
        return not_graded(ex, f"could not read the submission: {exc}", source)
    workdir = Path(tempfile.mkdtemp(prefix="grading-"))
    try:
        answer = workdir / f"{ex.name}.py"
        answer.write_text(code)
        if ex.kit:
            shutil.copyfile(kit or EXERCISES_DIR / KIT, workdir / KIT)
        result = _grade_in_children(ex, answer, base, limits, shown or f"exercises/{ex.name}.py")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    named = source if submission.suffix == ".py" else f"{source} (its answer cell)"
    _rename(result, {str(answer): named, str(workdir) + os.sep: "", str(workdir): "."})
    result.seed, result.seconds, result.source = base, time.perf_counter() - started, source
    result.submitted, result.code = submission, code
    return result


_Text = TypeVar("_Text", str, "str | None")  # a message, or a field that may hold none


def _rename(result: ExerciseGrade, names: dict[str, str]) -> None:
    """Say the submitted file's name wherever a message names the grader's temporary copy of it."""
    def fix(text: _Text) -> _Text:
        if not text:
            return text
        for old, new in names.items():
            text = text.replace(old, new)
        return text

    result.reason = fix(result.reason)
    result.tampering = [fix(t) for t in result.tampering]
    for item in result.items:
        for t in item.tests:
            t.reason = fix(t.reason)
            if t.failure is not None:
                t.failure.explanation = fix(t.failure.explanation)


def _grade_in_children(ex: Exercise, answer: Path, base: int, limits: Limits, shown: str) -> ExerciseGrade:
    states = {i: _TestState() for i in range(len(ex.tests))}
    meta: dict[int, dict] = {}
    records: dict[int, list] = {}
    witnessed: dict[int, int] = {}
    pending = list(range(len(ex.tests)))
    tampering: list[str] = []
    number = 0
    budget_ends = time.monotonic() + limits.submission_seconds
    while pending:
        number += 1
        job: GradingJob = {"handler": f"{answer}:{ex.function}", "function": ex.function, "watchdog": limits.watchdog,
               "isolation": limits.isolation,
               "limits": {"memory_mb": limits.memory_mb, "cpu_seconds": limits.cpu_seconds},
               "tests": [{"index": i, "test": ex.tests[i].to_dict(), "seeds": seeds_for(i, ex.tests[i], base)}
                         for i in pending]}
        session = _Session(job, answer.parent, limits, states, {}, {}, number, budget_ends)
        stopped_in, why = session.run()
        meta.update({_group_key(*k): v for k, v in session.meta.items()})
        records.update({_group_key(*k): v for k, v in session.records.items()})
        witnessed.update(session.witnessed)
        if session.load_error is not None:
            return not_graded(ex, f"your answer does not load: {session.load_error}")
        if stopped_in is None and why is not None:
            return not_graded(ex, why)
        if stopped_in is None:
            break
        states[stopped_in].reason = why
        pending = [i for i in pending if i > stopped_in]
        if session.out_of_budget:
            for i in pending:
                states[i].reason = "not run: the submission used up its time"
            break
    results = [_judge(ex.tests[i], states[i], meta, records, witnessed, shown, tampering)
               for i in range(len(ex.tests))]
    grade_ = ExerciseGrade(ex, scoring.items(ex, results), tampering=tampering)
    if tampering:  # a tampered submission earns nothing, whatever else passed
        for item in grade_.items:
            for t in item.tests:
                if t.passed:
                    t.passed, t.reason = False, "not counted: the submission tampered with the grader"
    return grade_


def _judge(test: Test, state: _TestState, meta: dict[int, dict], records: dict[int, list], witnessed: dict[int, int],
           shown: str, tampering: list[str]) -> TestResult:
    runs = len(state.infos)
    if state.reason is not None:
        return TestResult(test, False, runs, reason=state.reason)
    if state.summary is None:
        return TestResult(test, False, runs, reason="not run")

    histories: dict[int, History | None] = {}
    for group in {info.group for info in state.infos if info.group}:
        received = received_history(meta, records, group)
        if isinstance(received, str):
            tampering.append(received)
            return TestResult(test, False, runs, reason=f"tampering: {received}")
        histories[group] = received

    def history_of(group: int) -> History | None:
        if group not in histories:
            histories[group] = History(meta[group], records[group]) if group in meta else None
        return histories[group]

    for info in state.infos:
        found = tampered(info, history_of(info.group) if info.group else None,
                         witnessed=witnessed.get(info.group, 0) if info.group else None)
        if found:
            tampering.append(found)
            return TestResult(test, False, runs, reason=f"tampering: {found}")
    return scoring.judge_test(test, state.infos, history_of, f"{shown}:handler", state.summary)


def received_history(meta: dict[int, dict], records: dict[int, list], group: int) -> History | str | None:
    """The grader's copy of one run's history (None: it received none), or why it is no history the world writes: a
    record of no type, a field no record has, a value of the wrong kind (``core.records``) is the child tampering."""
    if group not in meta:
        return None
    try:
        return History(meta[group], records[group])
    except ValueError as exc:
        return f"the history the grader received holds a record no world writes ({exc})"


def tampered(info: RunInfo, history: History | None, checker: Callable[[History], Any] = check,
             witnessed: int | None = None) -> str | None:
    """How the child's account of a run disagrees with the grader's own copy of its history, or None.

    ``witnessed``: the effects the services reported for the run apart from the history."""
    if not info.group or not info.complete or info.status is None:
        return None
    if history is None:
        return "a run the submission's process reported has no history in the grader's copy"
    events = history.events
    recorded = sum(1 for e in events if e.get("type") == RecordType.EFFECT)
    if witnessed is not None and witnessed != recorded:
        return (f"the services reported {witnessed} effects to the grader, the history holds {recorded}: "
                f"the submission kept effects out of its history")
    if info.length != len(events) or info.digest != digest(events):
        effects = sum(1 for e in events if e.get("type") == RecordType.EFFECT)
        return (f"the history checked in the submission's process ({info.length} records) is not the one the "
                f"grader received as it was written ({len(events)} records, {effects} effects): the submission "
                f"rewrote its history")
    status = checker(history).status
    if status != info.status:
        return (f"the checker in the submission's process called a run {info.status}, the grader's own checker "
                f"calls it {status}: the submission patched the checker")
    return None

"""Scoring: from a test's runs (histories) to a test result, and from test results to graded items.

The same code judges in a notebook (``check()``) and in the grading parent, where each
history is the parent's own copy (``recorder``), never the submission's.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from ..core.history import History
from ..core.records import AwsCall, DeliveryRecord, EffectRecord
from ..settings import SettingValue
from ..verdict.checker import Verdict, check
from ..vocab import AWS_OK, Delivery, EffectStatus, ItemStatus, Outcome, Status
from . import diagnose, drills
from .catalog import Exercise, Test
from .diagnose import Hint
from .feedback import replay_command, text_timeline
from .quiz import wrong_answer_hint
from .shapes import FailureJson, ItemJson, RunInfoJson, TestResultJson, TestSummary


@dataclass
class RunInfo:
    """What the runner says about one run; the history itself travels separately (its group)."""

    test: int
    group: int | None = None
    seed: int | None = None
    complete: bool = True  # False: a reduced search cut the run short (its schedule is covered by another)
    status: str | None = None  # the verdict the runner's own checker gave (compared, never trusted)
    length: int = 0
    digest: str = ""
    script: list[str] | None = None
    choices: list[int] | None = None
    answers: Any = None
    error: str | None = None

    def to_dict(self) -> RunInfoJson:
        return cast(RunInfoJson, dict(self.__dict__))  # its fields, which RunInfoJson lists in the same order


@dataclass
class Failure:
    """A failed run, told the way a learner can act on it."""

    status: str  # invalid, unknown, or "failed" (an expectation, a wrong answer, an error)
    explanation: str
    hints: list[Hint] = field(default_factory=list)
    seed: int | None = None
    script: list[str] | None = None
    timeline: str = ""
    replay: str = ""
    history: History | None = None

    def to_dict(self) -> FailureJson:
        return {"status": self.status, "explanation": self.explanation, "hints": [h.to_dict() for h in self.hints],
                "seed": self.seed, "script": self.script, "timeline": self.timeline, "replay": self.replay}


class Points(float):
    """A score with a fraction in it, kept to hundredths.

    Sums of them stay in hundredths (no 2.1700000000000004 in a CSV) and they print as people write
    scores ("1.5", "3"), so every report that adds and prints item scores shows partial credit sensibly
    without knowing about it. Whole scores stay ``int``: a grade without partial credit reads as before.
    """

    def __new__(cls, value: float) -> "Points":
        return super().__new__(cls, round(float(value), 2))

    def __add__(self, other: Any) -> Any:
        if not isinstance(other, (int, float)):
            return NotImplemented
        return Points(float(self) + float(other))

    __radd__ = __add__

    def __str__(self) -> str:
        return f"{float(self):g}"

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        if spec and (spec[-1].isalpha() or spec[-1] == "%" or "." in spec):
            return float.__format__(self, spec)
        return float.__format__(self, spec + "g")


def as_score(value: float) -> int | Points:
    """A score as it is kept: an ``int`` when whole, else ``Points`` (hundredths)."""
    rounded = round(float(value), 2)
    return int(rounded) if rounded.is_integer() else Points(rounded)


#: How the grader starts the reason of a test stopped for tampering; judging withdraws all partial credit then.
TAMPERING = "tampering: "


@dataclass
class TestResult:
    test: Test
    passed: bool
    runs: int = 0
    failure: Failure | None = None
    reason: str | None = None  # why the test could not be judged (a hang, a crash, tampering)
    truncated: bool = False
    held: int = 0  # seeds that held, counted for a test that gives credit per seed (``Test.partial``)

    @property
    def credit(self) -> float:
        """The share of the test earned: all of it, nothing, or for a test judged per seed, the share that held."""
        if self.passed:
            return 1.0
        if self.reason is not None or not self.test.partial:
            return 0.0
        return min(self.held, self.test.seeds) / self.test.seeds

    def to_dict(self) -> TestResultJson:
        return {"item": self.test.item, "kind": self.test.kind, "hidden": self.test.hidden, "passed": self.passed,
                "runs": self.runs, "reason": self.reason, "truncated": self.truncated,
                "partial": self.test.partial, "held": self.held if self.test.partial else None,
                "failure": self.failure.to_dict() if self.failure else None}


@dataclass
class ItemResult:
    """A graded item: its points are its weight in the exercise.

    It scores them all when every test passes. When one fails, it scores nothing unless every failed test
    gives credit per seed (``Test.partial``): then it scores the share of its seeded tests' seeds that held.
    """

    item: str
    points: int
    what: str
    hidden: bool
    tests: list[TestResult]
    requirement: str = ""  # "requirement N: its sentence", from the exercise's requirement table

    @property
    def passed(self) -> bool:
        return bool(self.tests) and all(t.passed for t in self.tests)

    @property
    def partial(self) -> bool:
        """Whether the item can earn part of its points (the feedback says "credit per seed")."""
        return any(t.test.partial for t in self.tests)

    @property
    def seeds(self) -> tuple[int, int]:
        """(seeds that held, seeds run) over the item's tests judged per seed."""
        judged = [t for t in self.tests if t.test.partial]
        return (sum(round(t.credit * t.test.seeds) for t in judged), sum(t.test.seeds for t in judged))

    @property
    def credit(self) -> float:
        if self.passed:
            return 1.0
        if any(not t.test.partial for t in self.tests if not t.passed):
            return 0.0
        held, total = self.seeds
        return held / total if total else 0.0

    @property
    def score(self) -> int | Points:
        return self.points if self.passed else as_score(self.points * self.credit)

    @property
    def failure(self) -> TestResult | None:
        return next((t for t in self.tests if not t.passed), None)

    @property
    def blocker(self) -> TestResult | None:
        """In an item with tests judged per seed, the first failed test that is all or nothing: while it fails the
        item earns nothing, whatever the seeds held (the feedback must say that, not only the seeds)."""
        if not self.partial:
            return None
        return next((t for t in self.tests if not t.passed and not t.test.partial), None)

    @property
    def said(self) -> str:
        """What the item's line says it checks: the words of the test that failed, when one did (an item of several
        tests that names its first while another one failed tells the learner to look at what passed)."""
        failed = self.failure
        return failed.test.what if failed is not None and failed.test.what else self.what

    @property
    def hint_codes(self) -> list[str]:
        failed = self.failure
        return [h.code for h in failed.failure.hints] if failed and failed.failure else []

    def to_dict(self) -> ItemJson:
        return {"item": self.item, "points": self.points, "score": self.score, "passed": self.passed,
                "partial": self.partial, "seeds_held": list(self.seeds) if self.partial else None,
                "what": self.what, "requirement": self.requirement, "hidden": self.hidden, "hints": self.hint_codes,
                "tests": [t.to_dict() for t in self.tests]}


# -- expectations: promises checked on every run of a test ------------------------------------------
def expect_partial_batch(history: History) -> tuple[str, list[Hint]] | None:
    """Every failed SQS batch was a partial one: the handler named its failed records, and only those (which
    records come back, not only whether an effect repeats: run_once replays a handled record named by mistake)."""
    failed = [d for d in history.records(DeliveryRecord) if d.what == Delivery.BATCH_FAILED]
    whole = [d for d in failed if not d.detail.get("partial")]
    if not whole:
        return _handled_records_named(history, failed)
    d = whole[0]
    reason = d.detail.get("reason", "")
    why = ("Lambda could not match the response to the batch's records" if d.detail.get("badResponse")
           else "no record was named in batchItemFailures")
    return (f"{_batch_words(d)} failed as a whole at {d.t:.1f} s ({reason}): {why}, so every record of the "
            f"batch came back, any already handled included", diagnose.batch_hints(whole))


def _handled_records_named(history: History, partial: list[DeliveryRecord]) -> tuple[str, list[Hint]] | None:
    """A partial batch response that named a record whose order the same invocation had handled: every effect it
    performed for that order succeeded, none failed. Lambda returns exactly the named records to the queue."""
    effects = history.records(EffectRecord)
    for d in partial:
        handled = [k for k in d.keys if _handled(effects, d.inv, k)]
        if handled:
            text = (f"{d.inv} named {', '.join(handled)} in batchItemFailures at {d.t:.1f} s, though it had "
                    f"handled {'them' if len(handled) > 1 else 'it'}: every effect done, none failed. Lambda returns "
                    f"exactly the named records to the queue, so handled ones came back for another delivery")
            return text, diagnose.reported_handled_hints(d, handled)
    return None


def _handled(effects: list[EffectRecord], inv: str | None, key: str) -> bool:
    mine = [e for e in effects if e.inv == inv and e.key == key]
    return bool(mine) and all(e.status in (EffectStatus.DONE, EffectStatus.DEDUPLICATED) for e in mine)


def _batch_words(d: DeliveryRecord) -> str:
    """The batch of a delivery record, said by the orders it carried and the messages that carried none."""
    keys = list(d.keys)
    messages = len(d.detail.get("messageIds") or ()) or len(keys)
    others = messages - len(keys)
    no_order = f"{others} message{'' if others == 1 else 's'} whose body held no order"
    if not keys:
        return f"a batch of {no_order}"
    return f"a batch carrying {', '.join(keys)}" + (f" and {no_order}" if others > 0 else "")


def expect_lock_covers_work(history: History) -> tuple[str, list[Hint]] | None:
    """Every claim's lock lasted as long as the invocation that took it was working.

    Judged from the claim itself (its ``expiresAt``) and when its invocation ended, whether or not a duplicate
    happened to get in: another flaw of the answer (no expiry check, say) can keep the duplicate out and
    hide a lock that is too short. ``expiresAt`` is in whole epoch seconds, so a lock may end up to a second
    before the moment it was sized for.
    """
    epoch = float(history.meta.get("epoch") or 0.0)
    invs = history.invocation_records()
    for e in history.records(AwsCall):
        inv = invs.get(e.inv) if e.inv is not None else None  # the world's own calls (no inv) hold no lock
        expires = e.detail.get("expiresAt")
        if (e.op != "PutItem" or e.result != AWS_OK or inv is None
                or e.detail.get("status") != ItemStatus.IN_PROGRESS or not isinstance(expires, (int, float))):
            continue
        lock_end, work_end = float(expires) - epoch, inv.ended_at
        if isinstance(work_end, (int, float)) and work_end > lock_end + 1.0:
            return (f"{e.inv}'s lock on {e.key} ran out at {lock_end:.0f} s while {e.inv} was still "
                    f"working, until {work_end:.1f} s: a duplicate arriving in between would find the key free",
                    [Hint("lock-too-short", f"{e.inv}'s lock ended {work_end - lock_end:.0f} s before its "
                          f"work did: {diagnose.LOCK_RULE}")])
    return None


def expect_duplicates_succeed(history: History) -> tuple[str, list[Hint]] | None:
    """Every invocation ended ok: in a run where nothing fails, a duplicate that lost the claim has nothing to fail
    for (another invocation has the order), so an error there is the refusal escaping the handler."""
    for inv, record in history.invocation_records().items():
        if record.outcome not in (None, Outcome.OK):
            return (f"{inv} ended {record.outcome} ({record.error}), though nothing failed in this run: "
                    f"a duplicate that finds the order claimed has nothing to fail for, and an invocation that fails "
                    f"is retried by its source", diagnose.refusal_raised_hints(history, inv))
    return None


EXPECTATIONS: dict[str, Callable[[History], tuple[str, list[Hint]] | None]] = {
    "partial-batch": expect_partial_batch,
    "lock-covers-work": expect_lock_covers_work,
    "duplicates-succeed": expect_duplicates_succeed,
}


# -- judging one run ---------------------------------------------------------------------------------
#: Rounds of PBKDF2 per answer hash: a guess costs this much work, so reversing a hash is no table lookup.
HASH_ROUNDS = 20_000


def answer_hash(question: str, answer: Any, salt: str = "") -> str:
    """How a public question stores its answer: salted and stretched, so the notebook can check it without
    telling, and no table of hashes precomputed for the candidate names matches it."""
    text = str(answer).strip().lower().encode()
    return hashlib.pbkdf2_hmac("sha256", text, f"{salt}:{question}".encode(), HASH_ROUNDS).hex()


def judge_question(test: Test, answers: Any) -> Failure | None:
    if not isinstance(answers, dict):
        return Failure("failed", f"answers() should return a dict from each timeline's letter to one scenario name "
                                 f"from candidates(), as the answer cell's skeleton does; it returned "
                                 f"{answers if isinstance(answers, str) else repr(answers)}")  # a runner sends a repr
    assert test.question is not None  # a question's test names it
    given = answers.get(test.question)
    if given is None or given == "":
        return Failure("failed", f"timeline {test.question}: no answer yet; put one scenario name from candidates() "
                                 f"in place of {given!r}", [Hint("where-to-look", test.what)] if test.what else [])
    right = (answer_hash(test.question, given, test.answer_salt or "") == test.answer_sha256 if test.answer is None
             else str(given).strip().lower() == test.answer.strip().lower())
    if right:
        return None
    evidence = wrong_answer_hint(str(test.question), given) if given else None
    hints = [Hint("wrong-answer", evidence)] if evidence else []
    if test.what:
        hints.append(Hint("where-to-look", test.what))
    return Failure("failed", f"timeline {test.question}: {given!r} is not the source behind it", hints)


def judge_run(test: Test, info: RunInfo, history: History | None, handler: str) -> Failure | None:
    """What is wrong with one run, or None. ``handler`` is how the replay command names the learner's file."""
    if info.error is not None:
        return Failure("failed", info.error)
    if test.kind == "question":
        return judge_question(test, info.answers)
    if history is None:
        return Failure("failed", "the run left no history")
    found = problem(test, history)
    if found is None:
        return None
    status, explanation, hints = found
    replay = replay_for(test, info.seed, info.script, handler)
    return Failure(status, explanation, hints, info.seed, info.script, text_timeline(history), replay, history)


def replay_for(test: Test, seed: int | None, script: list[str] | None, handler: str) -> str:
    """The command that replays one run of ``test`` against ``handler`` (``path/file.py:function``)."""
    return replay_command(handler, scenario=test.scenario, settings=_changed(test), seed=seed, script=script,
                          drill=test.drill)


def _changed(test: Test) -> dict[str, SettingValue]:
    """The test's settings that differ from the scenario's defaults (what a replay must ``--set``)."""
    if test.scenario is None:
        return {}
    from ..scenarios import get_scenario

    defaults = {name: s.default for name, s in get_scenario(test.scenario).all_settings().items()}
    return {k: v for k, v in test.settings.items() if defaults.get(k) != v}


def problem(test: Test, history: History, verdict: Verdict | None = None) -> tuple[str, str, list[Hint]] | None:
    """(status, explanation, hints) of what is wrong with a run, or None."""
    verdict = verdict or check(history)
    if verdict.status != Status.VALID:  # no rule of the run's own names it: the drill's rules may
        hints = diagnose.diagnose(history, verdict)
        if not hints and test.drill is not None and drills.judge(test.drill, history) is not None:
            hints = diagnose.drill_hints(test.drill, history)
        return _with_hint(test, (verdict.status, verdict.explain(), hints))
    if test.drill is not None:
        wrong = drills.judge(test.drill, history)
        if wrong is not None:
            return _with_hint(test, ("failed", wrong, diagnose.drill_hints(test.drill, history)))
    for name in test.expect:
        found = EXPECTATIONS[name](history)
        if found is not None:
            return _with_hint(test, ("failed", found[0], found[1]))
    return None


def _with_hint(test: Test, found: tuple[str, str, list[Hint]]) -> tuple[str, str, list[Hint]]:
    """No item fails without a hint: where no rule names the flaw, the hint says what the run shows against what
    the item asks (the explanation's first finding), so the feedback always points somewhere."""
    status, explanation, hints = found
    if hints:
        return found
    lines = [line.strip(" -") for line in explanation.splitlines() if line.strip(" -")]
    shown = lines[1] if len(lines) > 1 else (lines[0] if lines else explanation)  # a verdict's heading, then a finding
    asked = f"; this item asks that {test.what}" if test.what else ""
    return status, explanation, [Hint("run-shows", f"the run shows: {shown}{asked}")]


def items(exercise: Exercise, results: list[TestResult]) -> list[ItemResult]:
    """Group test results into the exercise's items (``ItemResult`` says what each scores).

    A submission caught tampering earns nothing: the grader fails every test that passed, and the seeds
    that held in a failed test are withdrawn here, where the tampered test's reason is first seen."""
    if any((r.reason or "").startswith(TAMPERING) for r in results):
        for r in results:
            r.held = 0
    out: dict[str, ItemResult] = {}
    for r in results:
        t = r.test
        item = out.setdefault(t.item, ItemResult(t.item, exercise.items[t.item], t.what, t.hidden, [],
                                                 exercise.requirement_of(t.item)))
        item.tests.append(r)
        item.hidden = item.hidden and t.hidden
    return list(out.values())


def judge_test(test: Test, infos: list[RunInfo], history_of: Callable[[int], History | None], handler: str,
               summary: TestSummary | None = None) -> TestResult:
    """A test's result from its runs: it fails at its first broken complete run. A test judged per seed
    (``Test.partial``) has every run judged, to count the seeds that held; its failure is still the first."""
    complete = [i for i in infos if i.complete]
    runs = len(infos)
    first, held = None, 0
    for info in complete:
        history = history_of(info.group) if info.group else None
        failure = judge_run(test, info, history, handler)
        if failure is None:
            held += 1
        elif first is None:
            first = failure
        if first is not None and not test.partial:
            break
    if first is not None:
        return TestResult(test, False, runs, first, held=held if test.partial else 0)
    if not complete:
        return TestResult(test, False, runs, reason="no run of this test finished")
    return TestResult(test, True, runs, truncated=bool(summary and summary.get("truncated")), held=held)

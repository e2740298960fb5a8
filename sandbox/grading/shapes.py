"""The JSON the grading writes: the dict forms of its results, and the messages of the pipe from its child.

Each is the grading's own, serialised as JSON (to a grade file, Gradescope's results, the pipe), so each stays a
plain dict; a TypedDict makes a key spelt wrong where it is written or read a type error.
"""
from __future__ import annotations

from typing import Any, NotRequired, Required, TypedDict

from ..core.records import RecordJson
from ..settings import SettingValue


class TestSummary(TypedDict):
    """What the runner says of one test once it is done: how many runs, and whether a search was cut short."""

    runs: int
    truncated: bool


class RunInfoJson(TypedDict):
    """``scoring.RunInfo`` as the pipe carries it (its fields, in order)."""

    test: int
    group: int | None
    seed: int | None
    complete: bool
    status: str | None
    length: int
    digest: str
    script: list[str] | None
    choices: list[int] | None
    answers: Any  # what a question's answer file returned, untrusted, compared with the expected answer
    error: str | None


class FailureJson(TypedDict):
    """``scoring.Failure`` as a grade file holds it."""

    status: str
    explanation: str
    hints: list[dict[str, str]]  # each hint's {"code", "text"}
    seed: int | None
    script: list[str] | None
    timeline: str
    replay: str


class TestResultJson(TypedDict):
    """``scoring.TestResult`` as a grade file holds it."""

    item: str
    kind: str
    hidden: bool
    passed: bool
    runs: int
    reason: str | None
    truncated: bool
    partial: bool
    held: int | None
    failure: FailureJson | None


class ItemJson(TypedDict):
    """``scoring.Item`` as a grade file holds it."""

    item: str
    points: int
    score: float
    passed: bool
    partial: bool
    seeds_held: list[int] | None
    what: str
    requirement: str
    hidden: bool
    hints: list[str]
    tests: list[TestResultJson]


class PipeMessage(TypedDict, total=False):
    """One line the grading child writes to its parent; ``t`` says which kind, and so which other keys it has:
    "group" (g, meta), "rec" (g, r), "effect" (g, kind, key, status), "ready", "load" (error), "run" (info),
    "test-start" (i), "test-end" (i, summary), "crash" (what), "done"."""

    t: Required[str]
    g: int
    meta: dict[str, Any]  # the history's meta, as ``History.meta`` gives it
    r: RecordJson
    kind: str | None
    key: str | None
    status: str | None
    error: str | None
    info: RunInfoJson
    i: int
    summary: TestSummary
    what: str


class DrillAnswer(TypedDict, total=False):
    """What one invocation of a drill answered (``drills.answer``)."""

    inv: str
    outcome: str  # an Outcome
    response: Any  # what the handler returned, when it returned: the learner's, compared as it is
    error: str | None
    error_types: list[str]  # the error's class and its bases, by name


class DrillResult(TypedDict, total=False):
    """A drill's note in the history, as ``drills.drill_result`` reads it back (a reader finding a key missing from
    a note it parsed gets None, hence no key is required)."""

    drill: str
    seed: int
    #: Each a DrillAnswer: the drills read them as such (``drills._answers``); a list of Any only while
    #: grading/diagnose.py, being reworked elsewhere, looks runs up by an answer's ``.get("inv")``.
    answers: list[Any]


class RequirementJson(TypedDict):
    """One requirement of an exercise's table: its sentence, and the items that test it."""

    text: str
    items: list[str]


class ScenarioRunJson(TypedDict, total=False):
    """A scenario run an exercise's metadata names (its preview of what the next one fixes, the quiz's mysteries): a
    scenario, its seed (0) and settings."""

    scenario: Required[str]
    seed: int
    settings: dict[str, SettingValue]


class TestJson(TypedDict, total=False):
    """``catalog.Test`` as ``public_tests.json`` and a notebook's ``TESTS = [...]`` write it: every field but
    ``item`` has a default."""

    item: Required[str]
    points: int | None
    what: str
    scenario: str | None
    settings: dict[str, SettingValue]
    seeds: int
    exhaustive: bool
    max_schedules: int
    drill: str | None
    question: str | None
    answer: str | None
    answer_sha256: str | None
    answer_salt: str | None
    expect: list[str]
    campaign: bool
    hidden: bool


class ExerciseMeta(TypedDict, total=False):
    """An exercise notebook's metadata (``notebooks.METADATA_KEY``); read from a file, so any key may be missing."""

    id: str
    slug: str
    title: str
    function: str
    next: str
    preview: ScenarioRunJson | None
    kit: bool
    requirements: list[RequirementJson]
    candidates: list[str]  # the quiz's: the delivery features a mystery may be
    mysteries: dict[str, ScenarioRunJson]  # the quiz's: each mystery's run, by its letter


class ExerciseJson(TypedDict):
    """``catalog.Exercise`` as ``public_tests.json`` holds it."""

    id: str
    slug: str
    title: str
    function: str
    next: str
    preview: ScenarioRunJson | None
    kit: bool
    tests: list[TestJson]
    requirements: list[RequirementJson]


class ReplayJson(TypedDict):
    """A failed item's replay: the command the student got, and the same run against the submitted file."""

    item: str
    hidden: bool
    student: str
    submitted: str


class ExerciseGradeJson(TypedDict):
    """``grader.ExerciseGrade`` as a grade file holds it."""

    exercise: str
    title: str
    score: float
    max_score: int
    reason: str | None
    tampering: list[str]
    seed: int | None
    seconds: float
    source: str | None
    items: list[ItemJson]
    feedback: str
    full_feedback: str
    replays: NotRequired[list[ReplayJson]]  # a report folder's report.json adds them


class StudentGradeJson(TypedDict):
    """``batch.StudentGrade`` as a grade file holds it."""

    student: str
    score: float
    max_score: int
    ignored: list[str]
    notes: dict[str, str]
    remarks: list[str]
    submitted_at: str | None
    time_source: str | None
    late_seconds: float | None
    exercises: list[ExerciseGradeJson]


class GradescopeTest(TypedDict):
    """One test of Gradescope's results.json (https://gradescope-autograders.readthedocs.io/en/latest/specs/)."""

    name: str
    score: float
    max_score: int
    status: str
    output: str
    visibility: str


class GradescopeResults(TypedDict):
    """Gradescope's results.json, the keys the grader writes (same page, "Output format")."""

    score: float
    execution_time: int
    output: str
    visibility: str
    stdout_visibility: str
    tests: list[GradescopeTest]


class JobLimits(TypedDict):
    memory_mb: int
    cpu_seconds: int


class JobTest(TypedDict):
    index: int
    test: TestJson
    seeds: list[int]


class GradingJob(TypedDict, total=False):
    """What the grader hands a grading child on its stdin (JSON): the answer to load and the tests to run."""

    handler: Required[str]
    function: Required[str]
    watchdog: float
    isolation: str
    limits: Required[JobLimits]
    tests: Required[list[JobTest]]

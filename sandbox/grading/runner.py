"""Running an exercise's tests against a handler file: seeded scenario runs, exhaustive searches,
drills and questions. The runner reports each run (``RunInfo``) as it ends; judging is the
caller's (``scoring``), on the recorder's copy of each history.

A test stops at its first broken run: one counterexample is enough to fail it, and a wrong
handler should cost the grader little time. A test that gives credit per seed (``Test.partial``)
runs every seed, since its credit is the share that held.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.history import History
from ..core.records import InvokeEnd
from ..core.scheduler import DEFAULT_WATCHDOG, halting_on_block
from ..errors import BadInput, HandlerBlocked
from ..verdict.checker import check
from ..vocab import Outcome, Status
from . import drills, scoring
from .catalog import Test
from .recorder import Recorder, digest
from .scoring import RunInfo
from .shapes import TestSummary

#: Real seconds an invocation may run without reaching the sandbox before it is stopped (a busy loop):
#: the one watchdog check() and the grader share (``python -m sandbox grade --watchdog``). Generous, so a
#: heavy but correct handler on a loaded machine is never taken for a blocked one.
WATCHDOG = DEFAULT_WATCHDOG
#: Real seconds each invocation gets in the later tests of a handler the watchdog has already stopped once. Its
#: verdict in that test is already ``unknown``; a handler that blocks on every path would otherwise cost a whole
#: watchdog in every test (an exercise has six to twelve), and one that blocks on one path only still passes the
#: others, where each step reaches the sandbox in milliseconds.
AFTER_BLOCK = 1.0


class _Broken(Exception):
    """Stops an exhaustive search at its first broken schedule."""


class Runner:
    """Runs tests against ``handler`` (``path/file.py:function``); ``emit(info)`` hears of each run."""

    def __init__(self, handler: str, recorder: Recorder, emit: Callable[[RunInfo], None],
                 watchdog: float = WATCHDOG):
        self.handler, self.recorder, self.emit, self.watchdog = handler, recorder, emit, watchdog
        self._last: History | None = None

    def run_test(self, index: int, test: Test, seeds: list[int]) -> TestSummary:
        """Run one test; returns ``{"runs": n, "truncated": bool}``.

        A run ends as soon as the watchdog stops one of its invocations (``halting_on_block``): its verdict is
        ``unknown`` from then on, and Lambda's retries and the other copies would each block for a whole
        watchdog again. So a blocked handler costs one watchdog per test, not one per invocation.
        """
        with halting_on_block():
            return self._run_test(index, test, seeds)

    def _saw(self, blocked: bool) -> None:
        """A run ended; if the watchdog stopped it, the handler's later tests get ``AFTER_BLOCK`` per invocation."""
        if blocked:
            self.watchdog = min(self.watchdog, AFTER_BLOCK)

    def _run_test(self, index: int, test: Test, seeds: list[int]) -> TestSummary:
        try:
            if test.kind == "question":
                return self._question(index)
            if test.kind == "exhaustive":
                return self._exhaustive(index, test)
            return self._seeded(index, test, seeds)
        except (BadInput, ImportError, SyntaxError) as exc:
            self.emit(RunInfo(index, error=f"{type(exc).__name__}: {exc}" if not isinstance(exc, BadInput)
                              else str(exc)))
            return {"runs": 1, "truncated": False}

    # -- kinds -----------------------------------------------------------------------------------------
    def _seeded(self, index: int, test: Test, seeds: list[int]) -> TestSummary:
        from ..scenarios import run_scenario

        runs = 0
        for seed in seeds:
            if test.drill is not None:
                history = drills.run_drill(test.drill, self.handler, seed, self.watchdog)
            else:
                assert test.scenario is not None  # a test runs a drill or a scenario
                history = run_scenario(test.scenario, self.handler, seed=seed, settings=test.settings,
                                       watchdog=self.watchdog).history
            runs += 1
            # Credit per seed runs every seed, but a blocked handler (the watchdog stopped it) would block on
            # every seed again: one is enough, and the rest cost the class's grading time.
            if self._report(index, test, history, seed=seed) and (not test.partial or _blocked(history)):
                break
        return {"runs": runs, "truncated": False}

    def _exhaustive(self, index: int, test: Test) -> TestSummary:
        from ..modes.dpor import run_traced
        from ..modes.explore import explore_reduced

        runs = 0

        def once(policy):
            nonlocal runs
            trace = run_traced(test.scenario, self.handler, policy, settings=test.settings, watchdog=self.watchdog)
            history = self.recorder.last_world_history
            runs += 1
            if trace.verdict is None:  # cut short: an equivalent schedule covers it
                self.emit(RunInfo(index, self.recorder.group_of(history) if history else None, 0, complete=False))
                return trace
            script = getattr(policy, "script", None)
            if self._report(index, test, history, seed=0, script=script, choices=list(policy.taken)):
                raise _Broken
            return trace

        try:
            found = explore_reduced(once, test.max_schedules)
        except _Broken:
            return {"runs": runs, "truncated": False}
        return {"runs": runs, "truncated": found.truncated}

    def _question(self, index: int) -> TestSummary:
        """Ask the answer file's function for its answers, in an execution environment like any handler."""
        import shutil
        import tempfile

        from ..runtime.loader import HandlerSpec
        from ..world import Sandbox

        spec = HandlerSpec.parse(self.handler)
        path, func = spec.path, spec.function
        folder = Path(tempfile.mkdtemp(prefix="rwh-quiz-"))
        try:
            shutil.copyfile(path, folder / "answer_module.py")
            (folder / "ask.py").write_text(
                "import answer_module\n\n\n"
                f"def handler(event, context):\n    return answer_module.{func}()\n")
            with Sandbox(watchdog=self.watchdog) as sb:
                inv = sb.function(f"{folder / 'ask.py'}:handler", timeout=60).invoke({})
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if inv.outcome != Outcome.OK:
            self._saw(isinstance(inv.error, HandlerBlocked))
            self.emit(RunInfo(index, error=f"{func}() raised {inv.error_text}"))
            return {"runs": 1, "truncated": False}
        answers = inv.result
        self.emit(RunInfo(index, answers=answers if isinstance(answers, dict) else repr(answers)))
        return {"runs": 1, "truncated": False}

    # -- reporting ------------------------------------------------------------------------------------
    def _report(self, index: int, test: Test, history: History | None, **info: Any) -> bool:
        """Emit one run; True if it broke (its own judgment, to stop early: the caller judges again)."""
        if history is None:
            self.emit(RunInfo(index, error="the run left no history", **info))
            return True
        self._saw(_blocked(history))
        events = history.events
        verdict = check(history)
        self.emit(RunInfo(index, self.recorder.group_of(history), status=verdict.status, length=len(events),
                          digest=digest(events), **info))
        return verdict.status != Status.VALID or scoring.problem(test, history, verdict) is not None


def _blocked(history: History | None) -> bool:
    """Did the watchdog stop one of the run's invocations (code that never reached the sandbox)?"""
    return history is None or any(e.blocked for e in history.records(InvokeEnd))

"""Step through a scenario: one scheduler step at a time, looking inside the world between steps.

    run = open_scenario("concurrent-claims", "examples/read_then_write.py:handler", seed=3)
    run.choices()          # who could move next, and what each would do
    run.step()             # one step: which invocation moved, and what it did
    run.items(), run.outbox, run.history
    result = run.finish()  # let it run to the end and judge it

With ``policy="interactive"`` the learner plays the scheduler: whenever more than one
invocation could move, ``step("inv-2")`` says which one does.

The scenario runs on a thread of its own (the "director"); the scheduler stops it at a
gate before every step until the caller says go. The caller's thread only looks: between
steps nothing in the world moves. The director opens the world, so it is the world's own
thread and reads the virtual clock; the caller's (a notebook's cells, across which the run
stays open) keeps the machine's time.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.records import RecordJson
from ..core.scheduler import DEFAULT_WATCHDOG, Scheduler, Task
from ..core.services import ANSWER, ChargeMade, SentEmail
from ..errors import BadInput, SandboxError, WorldClosed

if TYPE_CHECKING:
    from ..scenarios.base import RunResult

#: Real seconds ``step`` waits for the world to reach its next gate (the watchdog fires first).
STEP_TIMEOUT = 120.0

#: Virtual seconds each step takes while the learner plays the scheduler (AWS calls themselves are instant).
STEP_TICK = 0.025

@dataclass(frozen=True)
class Choice:
    """A task that could move next, and what it would do: ``inv-2: dynamodb.GetItem``."""

    who: str
    does: str

    def __str__(self) -> str:
        return f"{self.who}: {self.does}"


@dataclass
class Step:
    """What one step did: who moved, what it was about to do, and the records it added."""

    number: int
    who: str
    does: str
    t: float
    records: list[RecordJson] = field(default_factory=list)
    next: str | None = None  # what the same task does at its next step (None: it is done)

    def __str__(self) -> str:
        from ..present.display import describe_record

        said = "; ".join(describe_record(r) for r in self.records) or self._pending()
        return f"step {self.number} at {self.t:.3f} s: {self.who} ({self.does}) -> {said}"

    def _pending(self) -> str:
        """What a step that left no record did: it sent a request (an email, a charge) whose answer is the task's
        next step, named as choices() and a script name it."""
        if self.next == f"{self.does} {ANSWER}":
            return f"{self.does} request sent; its answer is {self.who}'s next step ({self.next})"
        return f"no record yet; {self.who} next: {self.next}" if self.next else "no record"


class ScenarioRun:
    """A scenario opened but not finished (see the module docstring). Use ``open_scenario``."""

    def __init__(self, scenario: Any, handler: Any = None, *, seed: int = 0, settings: dict | None = None,
                 policy: Any = None, factory: Callable[[], Callable] | None = None, watchdog: float | None = None):
        from ..scenarios.base import open_world
        from ..scenarios.catalog import get_scenario

        self.scenario = get_scenario(scenario) if isinstance(scenario, str) else scenario
        self.interactive = policy == "interactive"
        self.seed = seed
        # an interactive learner picks the order, one step at a time, at one instant
        self._cfg = self.scenario.resolve({**(settings or {}), "aws_latency": 0.0} if self.interactive else settings)
        self._handler, self._factory = handler, factory
        self.world = open_world(self.scenario, self._cfg, seed, None if self.interactive else policy,
                                DEFAULT_WATCHDOG if watchdog is None else watchdog)
        self.steps: list[Step] = []
        self._runnable: list[Task] = []
        self._command: tuple = ()
        self._moved: str | None = None
        self._at_gate = threading.Semaphore(0)
        self._go = threading.Semaphore(0)
        self._done = threading.Event()
        self._result: RunResult | None = None
        self._error: BaseException | None = None
        self._closed_early = False
        self._aborted = False
        self._director = threading.Thread(target=self._direct, name="sandbox:director", daemon=True)
        self._director.start()
        self._wait_for_gate()

    @property
    def _scheduler(self) -> Scheduler:
        scheduler = self.world.scheduler
        assert isinstance(scheduler, Scheduler)  # open_world makes a deterministic world, whose gate this uses
        return scheduler

    # -- the director thread -------------------------------------------------------------------
    def _direct(self) -> None:
        from ..scenarios.base import run_in_world

        try:
            self._result = run_in_world(self.world, self.scenario, self._handler, self._cfg, self._factory,
                                        during=self._attended)
        except WorldClosed:
            self._closed_early = True
            self._error = SandboxError("this scenario run was closed before it finished")
        except BaseException as exc:  # handed to the caller by finish()/step()
            self._error = exc
        finally:
            self._done.set()
            self._at_gate.release()

    @contextlib.contextmanager
    def _attended(self, sb: Any) -> Iterator[None]:
        """The run in ``sb`` waits at the gate before every step."""
        sb.scheduler.gate = self._gate
        if self.interactive:  # AWS calls are instant: a tick per step keeps the order on the timeline
            sb.scheduler.step_cost = STEP_TICK
        sb.on_close(self._abandon)
        yield

    def _gate(self, runnable: list[Task]) -> Task | None:
        """Called by the scheduler before each step: wait for the caller's word."""
        self._runnable = list(runnable)
        self._at_gate.release()
        self._go.acquire()
        if self._aborted:  # sticky: a later finish() must not revive a world that closed meanwhile
            raise WorldClosed("the scenario run was closed")
        command, *args = self._command
        if command == "finish":
            self._scheduler.gate = None
            return None
        who = args[0]
        chosen = next((t for t in runnable if t.name == who), None) if who else None
        if chosen is None:  # the policy decides, exactly as it would in an unattended run
            chosen = runnable[0] if len(runnable) == 1 else self._scheduler.policy.choose(runnable)
        self._moved = chosen.name
        return chosen

    def _abandon(self) -> None:
        if threading.current_thread() is self._director:
            return  # the run's own end closes its world: nothing to abandon
        if not self._done.is_set() and not self._aborted:
            self._aborted = True
            self._go.release()

    def _wait_for_gate(self) -> None:
        if not self._at_gate.acquire(timeout=STEP_TIMEOUT):
            raise SandboxError(f"the scenario did not reach its next step within {STEP_TIMEOUT:g} s of real time")
        if self._done.is_set() and self._error is not None and not self._closed_early:
            error, self._error = self._error, None
            raise error

    # -- what the caller does ------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self._done.is_set()

    def choices(self) -> list[Choice]:
        """The tasks that could move next (empty once the run is over)."""
        return [] if self.done else [Choice(t.name, t.label) for t in self._runnable]

    def step(self, who: str | None = None) -> Step:
        """Let one task move to its next yield point: ``who`` (a name from ``choices()``) or the policy's pick."""
        if self._aborted:
            raise SandboxError("this scenario run was closed before it finished")
        if self.done:
            raise SandboxError("the run is over: nothing left to step; call finish() for the result")
        names = [t.name for t in self._runnable]
        if who is not None and who not in names:
            raise BadInput(f"{who!r} cannot move now; choose one of: {', '.join(map(str, self.choices()))}")
        if who is None and self.interactive and len(names) > 1:
            raise BadInput(f"you are the scheduler: say who moves next, one of: "
                           f"{', '.join(map(str, self.choices()))}")
        mark, does = len(self.world.history), dict((c.who, c.does) for c in self.choices())
        began = self.world.clock.elapsed()
        self._command = ("step", who)
        self._go.release()
        self._wait_for_gate()
        moved, records = self._moved or "?", self.world.history.since(mark)
        # when it happened, not after its tick: a step that writes no record (an email request, whose record
        # comes with its answer) happened when it began
        when = records[0]["t"] if records else began
        # what the task does next, runnable or not: after "email" it sleeps until the provider answers
        after = next((t.label for t in self._scheduler.tasks if t.name == moved and not t.done), None)
        step = Step(len(self.steps) + 1, moved, does.get(moved, "?"), when, records, after)
        self.steps.append(step)
        return step

    def until_choice(self, limit: int = 10_000) -> list[Step]:
        """Step until two or more tasks could make a move that matters, or the run ends.

        Starting an invocation does nothing another could notice, so tasks that are only
        about to start are stepped too.
        """
        taken: list[Step] = []
        while not self.done and len(taken) < limit:
            movers = self._runnable
            fresh = [t for t in movers if t.label == "start"]
            if len(movers) > 1 and not fresh:
                break
            taken.append(self.step((fresh or movers)[0].name if movers else None))
        return taken

    def finish(self):
        """Let the rest run as the policy decides, and return the judged ``RunResult``."""
        if not self.done:
            if not self._aborted:
                self._command = ("finish",)
                self._go.release()
            self._director.join(STEP_TIMEOUT)
        if self._error is not None:
            raise self._error
        return self._result

    def close(self) -> None:
        """Abandon the run: its world closes and nothing more happens."""
        if not self.done:
            self._abandon()
            self._director.join(STEP_TIMEOUT)

    # -- looking inside between steps ------------------------------------------------------------
    @property
    def history(self):
        return self.world.history

    @property
    def outbox(self) -> list[SentEmail]:
        return list(self.world.outbox)

    @property
    def charges(self) -> list[ChargeMade]:
        return list(self.world.charges)

    def items(self) -> list[dict]:
        """The idempotency table's items right now."""
        if not self.world.is_open:
            raise SandboxError("the run is over and its world is closed: look at run.history instead")
        return self.world.items()

    @property
    def clock(self):
        return self.world.clock

    def __repr__(self) -> str:
        taken = len(self.steps)
        state = "finished" if self.done else f"{taken} step{'' if taken == 1 else 's'} taken; next: " + (
            ", ".join(map(str, self.choices())) or "nothing")
        return f"<ScenarioRun {self.scenario.name} seed={self.seed}: {state}>"


def open_scenario(scenario: Any, handler: Any = None, **kw: Any) -> ScenarioRun:
    """Open ``scenario`` against ``handler`` without running it: see ``ScenarioRun``."""
    return ScenarioRun(scenario, handler, **kw)

"""Deterministic concurrency: threads that take turns on a virtual clock.

Each concurrent activity (an invocation, a poller, a caller waiting on a timeout) is a
real thread, but only one runs at a time. A thread gives up control only at a *yield
point*: before every AWS request, at every virtual sleep and at every effect. The
scheduler then asks its policy which runnable thread goes next. When no thread can run
and some are waiting on time, the clock jumps to the earliest wake-up (discrete-event
simulation). With a seeded policy the same seed gives the same interleaving, so the same
history, byte for byte.
"""
from __future__ import annotations

import contextlib
import ctypes
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import HandlerBlocked, WorldClosed
from ..parts import SchedulerListener
from .clock import VirtualClock
from .policies import Policy, RandomPolicy

#: A task's states (the scheduler's own words, never written to a history).
RUNNABLE, SLEEPING, WAITING, DONE, ABANDONED = "runnable", "sleeping", "waiting", "finished", "given up"

_local = threading.local()
#: Real seconds a task may run without reaching a yield point before it counts as blocked.
DEFAULT_WATCHDOG = 10.0
#: Schedulers made while this holds True end their run at the first invocation the watchdog stops (see
#: ``halting_on_block``). A list, so the grader's context manager can set it in place.
_HALT_ON_BLOCK = [False]


@contextlib.contextmanager
def halting_on_block() -> Iterator[None]:
    """Worlds opened inside end their run as soon as the watchdog stops one invocation (the grader's runs).

    The verdict is then ``unknown`` whatever else happens (a handler that never returns), so waiting out
    Lambda's retries or the other copies, each blocked again for a whole watchdog, only costs the grading
    worker time: ten seconds per blocked invocation, up to the submission's budget.
    """
    saved = _HALT_ON_BLOCK[0]
    _HALT_ON_BLOCK[0] = True
    try:
        yield
    finally:
        _HALT_ON_BLOCK[0] = saved


def current_task() -> "Task | None":
    return getattr(_local, "task", None)


def _signal() -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    return lock


class Task:
    """One cooperative thread. ``label`` says what it will do when next resumed."""

    def __init__(self, sched: "Scheduler", tid: int, name: str, fn: Callable, args: tuple[Any, ...],
                 kwargs: dict[str, Any], daemon: bool) -> None:
        self.sched, self.tid, self.name, self.daemon = sched, tid, name, daemon
        self.state = RUNNABLE
        self.label = "start"
        self.wake_at: float | None = None
        self.waiting_on: Task | None = None
        self.signal: Any = None  # what a task in wait_signal() waits for
        self.deadline: float | None = None  # elapsed seconds; past it, on_deadline() is raised
        self.on_deadline: Callable[[], BaseException] | None = None
        self.on_abandon: Callable[[str], object] | None = None
        #: Set when the task's invocation was stopped (timed out, crashed): from then on every
        #: yield point raises it again at once, so no code of a dead invocation reaches the world.
        self.killed: BaseException | None = None
        self.ready: Callable[[], bool] | None = None  # a WAITING task's wake-up test (block_until)
        self.took = False  # block_until: the wake-up test succeeded (the thing is taken)
        self.blocked_message = ""  # why the watchdog interrupted it
        self.result: Any = None
        self.error: BaseException | None = None
        self.resumed_at = 0.0  # real time (perf_counter) the task last went on: the watchdog counts from it
        # The runtime's Invocation, for an invocation's tasks (typed loosely: the scheduler, below the
        # runtime, imports nothing of it).
        self.invocation: Any = None
        #: The task keeps its own watchdog (it waits on an execution environment's channel, and stops
        #: waiting itself): the scheduler interrupts it only if that fails by far.
        self.own_watchdog = False
        #: Its code computed through the invocation's deadline in one stretch, never reaching the sandbox
        #: (a busy loop's timeout): with ``halt_on_block``, a block like the watchdog's.
        self.computed_out = False
        self._throw: BaseException | None = None
        # Two hand-off signals, each a plain lock held while "not signalled": releasing one
        # from another thread is allowed for Lock, and it switches far faster than a
        # Semaphore, which is built from a Python-level Condition.
        self._go = _signal()
        self._back = _signal()
        self._fn, self._args, self._kwargs = fn, args, kwargs
        self.thread = threading.Thread(target=self._body, name=f"sandbox:{name}", daemon=True)
        # The sandbox's own thread, never adopted as a handler's: a mark on the Thread that interpose reads.
        self.thread._sandbox_internal = True  # type: ignore[attr-defined]

    @property
    def done(self) -> bool:
        return self.state in (DONE, ABANDONED)

    def _body(self) -> None:
        _local.task = self
        self._go.acquire()
        try:
            if self._throw is not None:
                raise self._throw
            self.result = self._fn(*self._args, **self._kwargs)
        except BaseException as exc:  # recorded, never lost: the owner reads task.error
            self.error = exc
        finally:
            if self.state != ABANDONED:
                self.state = DONE
            self._back.release()

    def __repr__(self) -> str:
        return f"<Task {self.name} {self.state} next={self.label}>"


# -- the scheduler ------------------------------------------------------------------------
class Scheduler:
    """Runs tasks one at a time, switching only at yield points, on a virtual clock.

    ``watchdog`` is the real time (seconds) a task may run without reaching a yield point
    before it is declared blocked outside the sandbox.
    """

    def __init__(self, clock: VirtualClock, policy: Policy | None = None, watchdog: float = DEFAULT_WATCHDOG):
        self.clock = clock
        self.policy = policy or RandomPolicy(0)
        self.watchdog = watchdog
        #: End the run at the first invocation the watchdog stops (``halting_on_block``); ``halted`` says why.
        self.halt_on_block = _HALT_ON_BLOCK[0]
        self.halted: str | None = None
        self.tasks: list[Task] = []  # live tasks only, in creation order; finished ones are dropped
        self._timers: list[tuple[float, int, str, Callable[[], Any], bool]] = []
        self._tids = itertools.count(1)
        self._timer_seq = itertools.count()
        self._live_timers = 0
        self.steps = 0
        self.running: Task | None = None
        self.closed = False
        #: (until, stop_when) of the loop now running, None outside run(): a task that yields reads it
        #: to tell whether the loop could only hand the turn straight back to it.
        self._loop_args: tuple[float | None, Callable[[], bool] | None] | None = None
        #: Called with the runnable tasks before each step; may return the one to run (stepping
        #: through a scenario by hand), or None to let the policy choose.
        self.gate: Callable[[list[Task]], Task | None] | None = None
        #: Called with the task about to run (None when the world's own thread takes over), so
        #: the runtime can put that task's process (modules, environment) in place.
        self.on_switch: Callable[[Task | None], None] | None = None
        #: Virtual seconds each step takes (0: steps take no time). Stepping by hand, where every AWS call is
        #: instant, sets it so the timeline spreads the chosen order over time.
        self.step_cost = 0.0
        #: Hear each step and each tick (``parts.SchedulerListener``; the exhaustive search cuts runs with them).
        self.listeners: list[SchedulerListener] = []

    def listen(self, listener: SchedulerListener) -> None:
        """Tell ``listener`` of every step a task takes and every tick of the world's own thread from now on."""
        self.listeners.append(listener)

    def _tick(self) -> None:
        for listener in self.listeners:
            listener.tick()

    # -- creating work -----------------------------------------------------------------
    def spawn(self, fn: Callable, *args: Any, name: str, daemon: bool = False, **kwargs: Any) -> Task:
        if self.closed:
            raise WorldClosed("the world is closed")
        task = Task(self, next(self._tids), name, fn, args, kwargs, daemon)
        self.tasks.append(task)
        task.thread.start()
        return task

    def call_at(self, elapsed: float, fn: Callable[[], Any], name: str = "timer", daemon: bool = False) -> None:
        """Run ``fn`` on the scheduler's own thread when the clock reaches ``elapsed``.

        A daemon timer (the TTL sweeper's, say) fires only while something else keeps the
        world running; it never keeps the world running by itself.
        """
        heapq.heappush(self._timers, (max(elapsed, self.clock.elapsed()), next(self._timer_seq), name, fn, daemon))
        self._live_timers += not daemon

    def call_later(self, delay: float, fn: Callable[[], Any], name: str = "timer", daemon: bool = False) -> None:
        self.call_at(self.clock.elapsed() + delay, fn, name, daemon)

    def pending_timers(self) -> int:
        """Timers that keep the world running (daemon ones do not)."""
        return self._live_timers

    # -- inside a task ----------------------------------------------------------------
    def _mine(self) -> Task | None:
        task = current_task()
        return task if task is not None and task.sched is self else None

    def _switch(self, task: Task) -> None:
        if not self._resume_at_once(task):
            task._back.release()
            task._go.acquire()
        if task._throw is not None:
            exc, task._throw = task._throw, None
            raise exc
        if task.deadline is not None and self.clock.elapsed() >= task.deadline - 1e-9 and task.on_deadline:
            handler, task.on_deadline = task.on_deadline, None  # the runtime stops it, once
            raise handler()
        self._check_alive(task)

    @staticmethod
    def _check_alive(task: Task) -> None:
        if task.killed is not None:
            raise type(task.killed)(*task.killed.args)

    def check_alive(self) -> None:
        """Raise at once if the calling task's invocation was stopped (a timeout or a crash)."""
        task = self._mine()
        if task is not None:
            self._check_alive(task)

    def kill(self, task: Task, exc: BaseException) -> None:
        """Stop ``task`` for good: it raises ``exc`` now, and at every yield point after."""
        task.killed = exc
        if task.state in (SLEEPING, WAITING):
            task.state, task.wake_at, task.waiting_on, task.signal, task.ready = RUNNABLE, None, None, None, None

    def yield_point(self, label: str) -> None:
        """Let another task run; resume when the policy picks this one again."""
        task = self._mine()
        if task is None:
            return
        self._check_alive(task)
        task.label = str(label)
        task.state = RUNNABLE
        self._switch(task)

    def sleep(self, seconds: float, label: str = "sleep") -> None:
        """Virtual sleep. Outside any task it simply moves the clock."""
        seconds = max(0.0, float(seconds))
        task = self._mine()
        if task is None:
            self.run(until=self.clock.elapsed() + seconds)
            return
        self._check_alive(task)
        wake = self.clock.elapsed() + seconds
        if task.deadline is not None and task.on_deadline is not None:
            wake = min(wake, task.deadline)
        task.label, task.state, task.wake_at = label, SLEEPING, wake
        self._switch(task)

    def wait_for(self, other: Task, timeout: float | None = None, label: str = "wait") -> bool:
        """Block until ``other`` finishes or ``timeout`` virtual seconds pass. True if it finished."""
        task = self._mine()
        if task is None:
            until = None if timeout is None else self.clock.elapsed() + timeout
            self.run(until=until, stop_when=lambda: other.done)
            return other.done
        self._check_alive(task)
        if other.done:
            return True
        task.label, task.state, task.waiting_on = label, WAITING, other
        task.wake_at = self._wake_by(task, timeout)
        self._switch(task)
        return other.done

    def wait_signal(self, key: Any, timeout: float | None = None, label: str = "wait") -> None:
        """Block until ``notify(key)`` or ``timeout`` virtual seconds, whichever comes first.

        This is how a long poll waits: it returns as soon as there is something to read.
        """
        task = self._mine()
        if task is None:
            self.run(until=None if timeout is None else self.clock.elapsed() + timeout)
            return
        self._check_alive(task)
        task.label, task.state, task.waiting_on, task.signal = label, WAITING, None, key
        task.wake_at = self._wake_by(task, timeout)
        self._switch(task)

    def _wake_by(self, task: Task, timeout: float | None) -> float | None:
        """When a wait ends at the latest: its timeout, or the task's deadline if that comes first."""
        wake = None if timeout is None else self.clock.elapsed() + timeout
        if task.deadline is not None and task.on_deadline is not None:
            wake = task.deadline if wake is None else min(wake, task.deadline)
        return wake

    def block_until(self, ready: Callable[[], bool], timeout: float | None = None, label: str = "blocked") -> bool:
        """Wait, letting others run, until ``ready()`` is true (it is asked between steps) or ``timeout``.

        This is how a thread of a handler waits on a lock, a condition or a queue: ``ready``
        tries to take the thing without blocking. True if it was taken.
        """
        task = self._mine()
        if task is None:
            raise RuntimeError("block_until() is for tasks")
        self._check_alive(task)
        if ready():
            return True
        if timeout is not None and timeout <= 0:
            return False
        task.label, task.state, task.waiting_on, task.ready = label, WAITING, None, ready
        task.wake_at = self._wake_by(task, timeout)
        self._switch(task)
        took, task.took = task.took, False
        return took

    def notify(self, key: Any) -> None:
        """Wake every task waiting in ``wait_signal(key)``."""
        for t in self.tasks:
            if t.state == WAITING and t.signal == key:
                t.state, t.wake_at, t.signal = RUNNABLE, None, None

    # -- the loop ---------------------------------------------------------------------
    def _alive_work(self) -> bool:
        return self.pending_timers() > 0 or any(not t.daemon and not t.done for t in self.tasks)

    def run(self, until: float | None = None, stop_when: Callable[[], bool] | None = None) -> None:
        """Run until nothing is left to do, virtual time ``until`` is reached, or ``stop_when()``.

        "Nothing left" means no non-daemon task alive and no timer pending; daemon tasks
        (pollers) alone do not keep the world running unless ``stop_when`` asks for more.
        """
        if self._mine() is not None:
            raise RuntimeError("Scheduler.run() called from inside a task")
        self._loop_args = (until, stop_when)
        self._tick()  # the world's own thread worked since the last step
        try:
            self._loop(until, stop_when)
        finally:
            self._loop_args = None
            self._tick()
            if self.on_switch is not None:
                self.on_switch(None)  # back on the world's own thread: its own process

    def _loop(self, until: float | None, stop_when: Callable[[], bool] | None) -> None:
        while True:
            if self._stops(until, stop_when):
                return
            self._poll_blocked()
            runnable = [t for t in self.tasks if t.state == RUNNABLE]
            if runnable:
                task = self._pick(runnable)
                for listener in self.listeners:
                    listener.step(task, len(runnable) > 1)
                self._step(task)
                if self.step_cost:
                    self.clock.advance(self.step_cost)
                    self._fire_due()
                continue
            next_t = self._next_event_time()
            if next_t is None:
                stuck = [t for t in self.tasks if t.state == WAITING and not t.daemon]
                if stuck:
                    names = ", ".join(t.name for t in stuck)
                    raise HandlerBlocked(f"deadlock: {names} wait for each other and nothing else can run")
                if until is not None:
                    self.clock.advance_to(until)
                return
            if until is not None and next_t > until + 1e-9:
                self.clock.advance_to(until)
                return
            if stop_when is None and until is None and not self._alive_work():
                return
            self.clock.advance_to(next_t)
            self._fire_due()

    # -- a turn handed straight back ---------------------------------------------------
    def _resume_at_once(self, task: Task) -> bool:
        """Take the loop's next step for ``task`` on its own thread, when that step is forced.

        When ``task`` has just yielded and is the only task that can run next (no other is runnable,
        none waits on a test, no timer falls due before it wakes, the loop would not stop), the loop
        could only advance the clock to its wake-up and resume it: two thread switches that decide
        nothing. Doing that bookkeeping here instead (the clock, the step count, the process switch)
        leaves every history as it was. Stepping by hand and exploration watch every step, so with a
        gate or a step listener the loop always takes the turn.
        """
        if self._loop_args is None or self.gate is not None or self.listeners:
            return False
        if task.state not in (RUNNABLE, SLEEPING) or task._throw is not None:
            return False
        until, stop_when = self._loop_args
        others = float("inf")
        for t in self.tasks:
            if t is task:
                continue
            if t.state == RUNNABLE or (t.state == WAITING and t.ready is not None):
                return False
            if t.wake_at is not None and t.state in (SLEEPING, WAITING):
                others = min(others, t.wake_at)
        if self._timers:
            others = min(others, self._timers[0][0])
        if task.state == SLEEPING:
            wake = task.wake_at
            # the loop fires everything due within 1e-9 of a wake-up together: a tie is the loop's to order
            if wake is None or wake + 1e-9 >= others or (until is not None and wake > until + 1e-9):
                return False
        if self._stops(until, stop_when):
            return False
        if task.state == SLEEPING:
            assert task.wake_at is not None  # a sleeping task knows when it wakes
            self.clock.advance_to(task.wake_at)
            task.state, task.wake_at = RUNNABLE, None
            if self._stops(until, stop_when):
                return False  # the loop sees the stop first (the task is runnable, as the loop left it)
        self.steps += 1
        if self.on_switch is not None:
            self.on_switch(task)
        task.resumed_at = time.perf_counter()
        return True

    def halt_after_block(self, reason: str) -> None:
        """An invocation was stopped by the watchdog: with ``halt_on_block``, the run takes no further step
        (every ``run`` returns at once; closing the world ends the tasks left)."""
        if self.halt_on_block and self.halted is None:
            self.halted = reason

    def _stops(self, until: float | None, stop_when: Callable[[], bool] | None) -> bool:
        """The loop's test before every step: its stop test says so, or, with neither a stop test nor
        an end time, no work is left (daemon tasks alone do not count); or the run was halted."""
        if self.halted is not None:
            return True
        if stop_when is not None:
            return _outside_tasks(stop_when)
        return until is None and not self._alive_work()

    def _poll_blocked(self) -> None:
        """Wake the tasks in block_until whose thing became available (they take it now)."""
        for t in self.tasks:
            if t.state == WAITING and t.ready is not None and t.ready():
                t.state, t.wake_at, t.ready, t.took = RUNNABLE, None, None, True

    def _pick(self, runnable: list[Task]) -> Task:
        chosen = self.gate(runnable) if self.gate is not None else None
        if chosen is not None:
            return chosen
        return runnable[0] if len(runnable) == 1 else self.policy.choose(runnable)

    def _next_event_time(self) -> float | None:
        times = [t.wake_at for t in self.tasks if t.state in (SLEEPING, WAITING) and t.wake_at is not None]
        if self._timers:
            times.append(self._timers[0][0])
        return min(times) if times else None

    def _fire_due(self) -> None:
        self._tick()
        now = self.clock.elapsed() + 1e-9
        while self._timers and self._timers[0][0] <= now:
            _, _, _, fn, daemon = heapq.heappop(self._timers)
            self._live_timers -= not daemon
            fn()
        for t in self.tasks:
            if t.state in (SLEEPING, WAITING) and t.wake_at is not None and t.wake_at <= now:
                t.state, t.wake_at, t.waiting_on, t.signal, t.ready = RUNNABLE, None, None, None, None

    def _step(self, task: Task) -> None:
        self.steps += 1
        self.running = task
        if self.on_switch is not None:
            self.on_switch(task)
        task.resumed_at = time.perf_counter()
        task._go.release()
        self._await(task)
        self.running = None
        if task.done:
            # Dropping finished tasks keeps every scheduling step proportional to live work,
            # not to every invocation the world has ever run.
            self.tasks.remove(task)
            for t in self.tasks:
                if t.state == WAITING and t.waiting_on is task:
                    t.state, t.wake_at, t.waiting_on = RUNNABLE, None, None

    def _await(self, task: Task) -> None:
        """Wait for ``task`` to hand the turn back; the watchdog counts from its last yield point."""
        limit = self.watchdog if not task.own_watchdog else self.watchdog * 10 + 30
        timeout = limit
        while not task._back.acquire(timeout=timeout):
            quiet = time.perf_counter() - task.resumed_at
            if quiet >= limit:
                self._unblock(task)
                return
            timeout = limit - quiet  # it took steps on its own thread meanwhile

    def _unblock(self, task: Task) -> None:
        """The task ran ``watchdog`` seconds of real time without yielding."""
        message = blocked_message(task.name, self.watchdog)
        # A busy Python loop can be interrupted; a blocking C call cannot.
        task.blocked_message = message
        assert task.thread.ident is not None  # a running task's thread has started
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(task.thread.ident), ctypes.py_object(HandlerBlocked))
        if task._back.acquire(timeout=1.0):
            if isinstance(task.error, HandlerBlocked):
                task.error = HandlerBlocked(message)
            return
        task.state = ABANDONED
        task.error = HandlerBlocked(message)
        if task.on_abandon is not None:
            task.on_abandon(message)

    def close(self) -> None:
        """Stop every leftover task by raising WorldClosed at its yield point."""
        self.closed = True
        for task in self.tasks:
            if task.done:
                continue
            task._throw = WorldClosed("the world closed")
            task._go.release()
            task._back.acquire(timeout=1.0)
        self._timers.clear()
        self._live_timers = 0


def blocked_message(name: str, watchdog: float) -> str:
    return (f"{name} ran for {watchdog:g} s of real time without reaching the sandbox (no AWS call, effect or "
            f"sleep): it is blocked outside the sandbox, for example in a busy loop, a real sleep or a deadlock")


def _outside_tasks(test: Callable[[], bool]) -> bool:
    """Call the loop's stop test as from the world's own thread, also on a task's: current_task() is None."""
    task = getattr(_local, "task", None)
    _local.task = None
    try:
        return bool(test())
    finally:
        _local.task = task

"""Free OS threads on the wall clock: the real-threads twin of ``clock.VirtualClock`` and ``scheduler.Scheduler``.

The deterministic world runs one task at a time and moves a virtual clock. This module offers
the same interface with nothing held back: every task is an OS thread that runs whenever the
operating system lets it, and time is the wall clock, so a 0.5 s retry delay takes half a real
second. The runtime, the delivery sources and the scenarios call it exactly as they call the
deterministic scheduler, which is how one scenario's code runs in both worlds.

What stays the same: a task's deadline (the Lambda timeout) and its stop (a timeout, a crash)
take effect at the same points, every AWS call, effect and sleep, because Python cannot stop a
running thread anywhere else. Timers run on the world's own thread, inside ``run``.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from ..aws import adapter
from ..core import scheduler as _deterministic
from ..errors import BadInput, WorldClosed

#: How often a waiting thread looks again at what it waits for (seconds of wall-clock time).
POLL = 0.002
#: The longest a run may take, in wall-clock seconds: this mode is for short settings only.
DEFAULT_BUDGET = 30.0


class WallClock:
    """The ``VirtualClock`` interface on real time: it moves by itself and cannot be moved."""

    #: Real compute is on this clock already: an environment's is not charged again (host._spend).
    real = True

    def __init__(self) -> None:
        self._start = time.monotonic()
        self.epoch = time.time()

    def now(self) -> float:
        """Unix time in seconds (epoch plus the monotonic time since the world was made)."""
        return self.epoch + self.elapsed()

    def elapsed(self) -> float:
        return time.monotonic() - self._start

    def restart(self) -> None:
        """Count elapsed time from now: the world is set up and its run begins."""
        self._start = time.monotonic()
        self.epoch = time.time()

    def advance(self, seconds: float) -> float:
        """Wall-clock time passes only by waiting: wait ``seconds``."""
        if seconds < 0:
            raise ValueError(f"the clock cannot go backwards (asked to move {seconds} s)")
        adapter.real_sleep(seconds)
        return self.now()

    def advance_to(self, elapsed: float) -> float:
        return self.advance(max(0.0, elapsed - self.elapsed()))

    def start(self) -> None:
        """Nothing to patch: every reader already sees real time."""

    def stop(self) -> None:
        """Nothing was patched."""

    def __repr__(self) -> str:
        return f"WallClock(+{self.elapsed():.3f}s)"


class OsThreadsPolicy:
    """Stands where a scheduling policy stands: here the operating system picks who runs."""

    name = "os-threads"


_spawned = threading.local()  # per thread: tasks it spawned whose threads have not started yet


class FreeTask:
    """One OS thread with the attributes the runtime and the sources read on a ``scheduler.Task``."""

    def __init__(self, sched: "FreeScheduler", tid: int, name: str, fn: Callable, args, kwargs, daemon: bool):
        self.sched, self.tid, self.name, self.daemon = sched, tid, name, daemon
        self.state = _deterministic.RUNNABLE
        self.label = "start"
        self.deadline: float | None = None
        self.on_deadline: Callable[[], BaseException] | None = None
        self.on_abandon: Callable[[str], None] | None = None
        self.killed: BaseException | None = None
        self.result: Any = None
        self.error: BaseException | None = None
        self.invocation = None
        self.blocked_message = ""
        self.computed_out = False  # on the wall clock a compute timeout is a timeout like any other
        self.interrupt = threading.Event()  # set when the task is stopped: its sleep ends at once
        self.finished = threading.Event()
        self._fn, self._args, self._kwargs = fn, args, kwargs
        self.thread = threading.Thread(target=self._body, name=f"sandbox:{name}", daemon=True)
        # The sandbox's own thread, never adopted as a handler's: a mark on the Thread that interpose reads.
        self.thread._sandbox_internal = True  # type: ignore[attr-defined]

    @property
    def done(self) -> bool:
        return self.finished.is_set()

    def _body(self) -> None:
        _deterministic._local.task = self  # current_task() finds it, as it finds a deterministic task
        try:
            self.result = self._fn(*self._args, **self._kwargs)
        except BaseException as exc:  # recorded, never lost: the owner reads task.error
            self.error = exc
        finally:
            self.sched.release()  # what it spawned last runs even if it never called the scheduler again
            self.state = _deterministic.DONE
            self.finished.set()
            self.sched.wake()

    def __repr__(self) -> str:
        return f"<FreeTask {self.name} {'finished' if self.done else 'running'}>"


class FreeScheduler:
    """The ``Scheduler`` interface, with tasks as free OS threads on a ``WallClock``.

    ``budget``: the wall-clock seconds one ``run`` may last before it gives up with a BadInput
    (settings too long for this mode).
    """

    def __init__(self, clock: WallClock, budget: float = DEFAULT_BUDGET):
        self.clock = clock
        self.policy = OsThreadsPolicy()
        self.budget = budget
        self.watchdog = budget
        self._tasks: list[FreeTask] = []
        self._timers: list[tuple[float, int, str, Callable[[], Any], bool]] = []
        self._seq = itertools.count()
        self._tids = itertools.count(1)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._signals: dict[Any, int] = {}
        self.closed = False
        self.steps = 0
        self.running = None
        # Hooks of the deterministic scheduler that have no meaning here; kept so callers may set them.
        self.gate = None
        self.on_switch = None
        self.halt_on_block = False  # only the deterministic world's grader runs halt

    def listen(self, listener: Any) -> None:
        """The OS picks each step here, unseen: a listener is told nothing (nothing here can be explored)."""

    @property
    def tasks(self) -> list[FreeTask]:
        return [t for t in self._tasks if not t.done]

    def wake(self) -> None:
        """Tell ``run`` (and signal waiters) that something changed."""
        with self._changed:
            self._changed.notify_all()

    # -- creating work -----------------------------------------------------------------
    def spawn(self, fn: Callable, *args: Any, name: str, daemon: bool = False, **kwargs: Any) -> FreeTask:
        if self.closed:
            raise WorldClosed("the world is closed")
        task = FreeTask(self, next(self._tids), name, fn, args, kwargs, daemon)
        with self._lock:
            self._tasks = [t for t in self._tasks if not t.done] + [task]
        # The caller fills in the task after this returns (``inv.task = spawn(...)``, its invocation):
        # the thread starts at the caller's next call into the scheduler, as a deterministic task
        # starts only when the caller yields.
        self._unstarted().append(task)
        return task

    @staticmethod
    def _unstarted() -> list[FreeTask]:
        pending = getattr(_spawned, "tasks", None)
        if pending is None:
            pending = _spawned.tasks = []
        return pending

    def release(self) -> None:
        """Start the threads this thread spawned since it last called the scheduler."""
        pending = self._unstarted()
        while pending:
            pending.pop(0).thread.start()

    def call_at(self, elapsed: float, fn: Callable[[], Any], name: str = "timer", daemon: bool = False) -> None:
        with self._changed:
            heapq.heappush(self._timers, (elapsed, next(self._seq), name, fn, daemon))
            self._changed.notify_all()

    def call_later(self, delay: float, fn: Callable[[], Any], name: str = "timer", daemon: bool = False) -> None:
        self.call_at(self.clock.elapsed() + delay, fn, name, daemon)

    def pending_timers(self) -> int:
        with self._lock:
            return sum(1 for timer in self._timers if not timer[4])

    # -- inside a task ----------------------------------------------------------------
    @staticmethod
    def _mine() -> FreeTask | None:
        task = _deterministic.current_task()
        return task if isinstance(task, FreeTask) else None

    def _check(self, task: FreeTask) -> None:
        """Raise what stops the task: its stop (timeout, crash, world closed), or its deadline just passed."""
        if task.killed is not None:
            raise type(task.killed)(*task.killed.args)
        if task.deadline is not None and task.on_deadline is not None and self.clock.elapsed() >= task.deadline:
            handler, task.on_deadline = task.on_deadline, None  # the runtime stops it, once
            raise handler()

    def halt_after_block(self, reason: str) -> None:
        """A real-threads world runs to its end (only the deterministic world's grader runs halt)."""

    def check_alive(self) -> None:
        self.release()
        task = self._mine()
        if task is not None and task.killed is not None:
            raise type(task.killed)(*task.killed.args)

    def kill(self, task: FreeTask, exc: BaseException) -> None:
        task.killed = exc
        task.interrupt.set()

    def yield_point(self, label: str) -> None:
        self.release()
        task = self._mine()
        if task is None:
            return
        task.label = str(label)
        self._check(task)

    def _wait_until(self, task: FreeTask, wake: float | None, done: Callable[[], bool]) -> bool:
        """Wait until ``done()``, elapsed time ``wake`` or the task's deadline; True if ``done()``."""
        if task.deadline is not None and task.on_deadline is not None:
            wake = task.deadline if wake is None else min(wake, task.deadline)
        while not done():
            self._check(task)
            left = None if wake is None else wake - self.clock.elapsed()
            if left is not None and left <= 0:
                break
            # A plain sleep: while a world is open, a task's Event.wait and Condition.wait come back to
            # this scheduler (``interpose``), so waiting on one here would never end.
            if not task.interrupt.is_set():
                adapter.real_sleep(POLL if left is None else min(POLL, left))
        self._check(task)
        return done()

    def sleep(self, seconds: float, label: str = "sleep") -> None:
        """A real sleep, cut short by the task's deadline or its stop. Outside any task: ``run`` meanwhile."""
        self.release()
        seconds = max(0.0, float(seconds))
        task = self._mine()
        if task is None:
            self.run(until=self.clock.elapsed() + seconds)
            return
        task.label = label
        self._check(task)
        if seconds:
            self._wait_until(task, self.clock.elapsed() + seconds, lambda: False)

    def wait_for(self, other: FreeTask, timeout: float | None = None, label: str = "wait") -> bool:
        self.release()
        task = self._mine()
        if task is None:
            until = None if timeout is None else self.clock.elapsed() + timeout
            self.run(until=until, stop_when=lambda: other.done)
            return other.done
        task.label = label
        wake = None if timeout is None else self.clock.elapsed() + timeout
        return self._wait_until(task, wake, lambda: other.done)

    def wait_signal(self, key: Any, timeout: float | None = None, label: str = "wait") -> None:
        self.release()
        task = self._mine()
        if task is None:
            self.run(until=None if timeout is None else self.clock.elapsed() + timeout)
            return
        task.label = label
        seen = self._signals.get(key, 0)
        wake = None if timeout is None else self.clock.elapsed() + timeout
        self._wait_until(task, wake, lambda: self._signals.get(key, 0) != seen)

    def notify(self, key: Any) -> None:
        with self._lock:
            self._signals[key] = self._signals.get(key, 0) + 1

    def block_until(self, ready: Callable[[], bool], timeout: float | None = None, label: str = "blocked") -> bool:
        self.release()
        task = self._mine()
        if task is None:
            raise RuntimeError("block_until() is for tasks")
        task.label = label
        if ready():
            return True
        if timeout is not None and timeout <= 0:
            return False
        wake = None if timeout is None else self.clock.elapsed() + timeout
        return self._wait_until(task, wake, ready)

    # -- the world's own thread ----------------------------------------------------------
    def _alive_work(self) -> bool:
        return self.pending_timers() > 0 or any(not t.daemon for t in self.tasks)

    def _due_timers(self) -> list[Callable[[], Any]]:
        now = self.clock.elapsed()
        with self._lock:
            due = []
            while self._timers and self._timers[0][0] <= now:
                due.append(heapq.heappop(self._timers)[3])
            return due

    def run(self, until: float | None = None, stop_when: Callable[[], bool] | None = None) -> None:
        """Fire timers as they fall due until nothing is left, ``until`` passes or ``stop_when()``."""
        if self._mine() is not None:
            raise RuntimeError("FreeScheduler.run() called from inside a task")
        while True:
            self.release()
            for fn in self._due_timers():
                fn()
            self.release()
            if stop_when is not None and stop_when():
                return
            if stop_when is None and until is None and not self._alive_work():
                return
            now = self.clock.elapsed()
            if until is not None and now >= until:
                return
            if now > self.budget:
                raise BadInput(f"the run took more than {self.budget:g} s of wall-clock time: real-threads and "
                               f"endpoint runs take short settings only (seconds, not minutes); shorten the "
                               f"delays and timeouts with --set")
            with self._changed:
                next_timer = self._timers[0][0] if self._timers else None
                wait = min(x for x in (POLL * 5, None if until is None else until - now,
                                       None if next_timer is None else next_timer - now) if x is not None)
                self._changed.wait(max(0.0, wait))

    def close(self) -> None:
        """Stop every leftover task at its next AWS call, effect or sleep, and wait a little for it."""
        self.closed = True
        live = self.tasks
        for task in live:
            self.kill(task, WorldClosed("the world closed"))
        for task in live:
            task.thread.join(timeout=1.0)
        with self._lock:
            self._timers.clear()

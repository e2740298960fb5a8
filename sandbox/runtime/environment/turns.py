"""Inside an execution environment: the handler's threads take turns, so every run asks the same.

A handler may start threads (``threading.Thread``, a ``ThreadPoolExecutor``, ``asyncio.to_thread``).
Left to the operating system, which thread reaches the channel first differs from run to run, and
so would the history. Here one thread runs at a time, and the turn passes only where a thread
waits: for the world (an AWS call, an effect, a sleep), on another thread (``join``, a condition,
an event, a future, a queue, a lock) or on its event loop's selector. When every thread waits,
the oldest question goes to the world; when only timers are left, the world is asked to sleep
until the earliest. Each pending request is one step, taken in an order fixed by the code alone.

Lambda freezes an environment between invocations: asking for the next event keeps the turn, so
a background thread does not run on until an invocation thaws the environment.

Time between two waits is the code's own, and under ``wire.QUANTUM`` (1 s of real time) it decides
nothing: that is what keeps runs the same. A thread that holds the turn for longer without waiting
(``while True: pass``, a long computation, a call blocked outside the sandbox's view) would starve
the others, where on Lambda the GIL switches threads every few milliseconds: so once it has held the
turn for a quantum, a waiting thread takes the turn from it, and it runs on beside the turns (FREE)
until it next waits, when it takes turns again. While a thread computes that way, or waits on the real
world (a child process, a pipe), the world's clock keeps pace with real time: a timer fires once its
seconds have really passed, the world sleeping up to it.

Only threads started through ``threading`` take turns (``_thread.start_new_thread`` does not).
Locks made before this is installed (the template's modules') stay plain locks; none of them is
held across a request.
"""
from __future__ import annotations

import _thread
import collections
import posix
import queue
import selectors
import stat
import threading
from collections.abc import Callable
from typing import Any, Protocol, TypedDict

from . import wire

_allocate = _thread.allocate_lock
#: Where a thread is (the words are this module's own, never written to a history).
RUNS, READY, WAITS, ASKS, ENDED = "runs", "ready", "waits", "asks", "ended"
#: Preempted at the quantum: it computes beside the turns until it next waits (see ``Turns._preempt``).
FREE = "free"
_get_ident = _thread.get_ident


class _Turn:
    """One handler thread: where it is, and what would let it go on."""

    def __init__(self, name: str):
        self.name = name
        self.go = _allocate()
        self.go.acquire()  # held while it is not this thread's turn
        self.state = RUNS  # RUNS, READY, WAITS (a test or a timer), ASKS (the world), FREE or ENDED
        self.test: Callable[[], bool] | None = None  # a waiting thread's wake-up test
        self.deadline: float | None = None  # a waiting thread's timeout, in the world's seconds
        self.sleep_for: float | None = None  # the sleep it asked for, from ``asked_at``
        self.asked_at = 0.0
        self.took = False
        self.message: wire.Message | None = None  # an asking thread's request
        self.answer: wire.Message | None = None
        #: Waiting on the real world (a child process, a pipe): its test is polled in real time, and its
        #: timeout (``real_until``) is real seconds, never a jump of the world's clock.
        self.real = False
        self.real_until: float | None = None
        self.paced = False  # a wait whose test may hold in real time: its world timeout keeps pace with real time
        self.real_since = 0.0  # when its wait on the real world, or its computing beside the turns, began


class Turns:
    """The threads of one environment, and whose turn it is.

    ``mutex`` is held by the thread deciding whose turn comes next (a thread giving up its turn, or one taking it
    from a thread that computed past the quantum): one decision at a time, whatever runs meanwhile."""

    def __init__(self, ask: Callable[[wire.Message], wire.Message], now: Callable[[], float],
                 answered: Callable[[], tuple[float, float]] | None = None):
        self._ask, self._now = ask, now
        #: The world's time in its last answer, and the real time (``_real_now``) it came.
        self._answered = answered or (lambda: (now(), _real_now()))
        main = self.main = _Turn("main")
        #: The process's alarm (alarms.py), which rings in the main thread: its waits end for it as for a timer.
        self.alarm: Alarm | None = None
        self.turns: dict[int, _Turn] = {_get_ident(): main}
        self.order: list[_Turn] = list(self.turns.values())  # in the order the threads started
        self.asking: collections.deque[_Turn] = collections.deque()
        self.probing = False  # evaluating the waiting threads' tests (see _next_runnable)
        self.mutex = _allocate()
        self.holder = main  # the thread whose turn it is
        self.since = _real_now()  # real time it took the turn, or last heard from the world
        self.requesting = False  # a request is on the channel: whoever holds the turn waits, it does not compute

    def mine(self) -> _Turn | None:
        return self.turns.get(_get_ident())

    # -- waiting ---------------------------------------------------------------------------
    def ask(self, message: wire.Message) -> wire.Message:
        """Send ``message`` to the world when every other thread waits too, and return the answer."""
        me = self.mine()
        if me is None:
            return self._ask(message)
        self._claim(me)
        me.state, me.message = ASKS, message
        self.asking.append(me)
        self._pass(me)
        answer, me.answer = me.answer, None
        assert answer is not None  # _pass returns once the world has answered
        return answer

    def wait(self, test: Callable[[], bool], timeout: float | None, real: bool = False, paced: bool = False) -> bool:
        """Let the other threads run until ``test()`` holds (True) or ``timeout`` world seconds pass (False).

        ``real``: what it waits for happens in the real world (a child process ends, a pipe fills), so its
        timeout is real seconds, and while it waits the world's clock keeps pace with real time (``_timer_due``):
        the real time it takes is what the world charges (``wire.QUANTUM``). ``paced``: the test may hold in real
        time (an event loop watching a child's pipe), but the timeout is the world's: it too keeps pace with real
        time while the thread waits, rather than the world sleeping to it at once."""
        me = self.mine()
        if test():
            if real and me is not None and not self.probing:
                self._let_others_run(me)
            return True
        if timeout is not None and timeout <= 0:
            return False
        if me is None:  # a thread outside the turns (started through _thread): it polls
            return _poll(test, timeout)
        if timeout is None:
            end = None
        else:
            end = (_real_now() if real else self._now()) + timeout
        while True:
            took, for_alarm = self._wait_once(me, test, end, real, paced)
            if took or not for_alarm:
                return took
            self._ring(me)  # its handler's exception leaves the wait; if it returns, the wait goes on (PEP 475)
            if real and end is not None and _real_now() >= end:
                return False

    def _wait_once(self, me: _Turn, test: Callable[[], bool], end: float | None, real: bool,
                   paced: bool) -> tuple[bool, bool]:
        """``wait`` until ``end`` (real or world seconds), or until the alarm (the main thread's) if it comes
        first: whether the test held, and whether the alarm's time was the one it waited for."""
        self._claim(me)
        me.state, me.test, me.sleep_for, me.real, me.paced = WAITS, test, None, real, paced
        if real or paced:
            me.real_since = _real_now()
        if real:
            me.deadline, me.real_until = None, end
        else:
            me.deadline, me.real_until = end, None
        alarm = self.alarm.at if self.alarm is not None and me is self.main else None
        for_alarm = alarm is not None and (me.deadline is None or alarm < me.deadline)
        if for_alarm:
            me.deadline = alarm  # a timer like the others: while waiting on the real world, in real time
        self._pass(me)
        me.real = me.paced = False
        return me.took, for_alarm

    def _ring(self, me: _Turn) -> None:
        """The main thread's wait ended at the alarm's time: if it is still due (no other thread moved it), it
        rings here, and its handler's exception leaves the wait, as a signal's does on Linux."""
        alarm = self.alarm
        if alarm is not None and me is self.main and alarm.at is not None and alarm.at <= self._now():
            alarm.fire()

    def sleep(self, seconds: float) -> None:
        me = self.mine()
        if me is None:
            self._ask({"t": wire.Kind.SLEEP, "seconds": seconds})
            return
        self._claim(me)
        me.state, me.test, me.took = WAITS, None, False
        me.asked_at, me.sleep_for = self._now(), seconds
        me.deadline = me.asked_at + seconds
        self._pass(me)

    def _let_others_run(self, me: _Turn) -> None:
        """A thread whose real wait is over at once (a pipe that already holds data) lets a thread that is
        ready run first: with the operating system's threads it would run meanwhile, and a loop on a ready
        pipe (a pool's worker handler) would otherwise keep the turn for ever."""
        if me.state == FREE:  # it runs beside the others already
            return
        self._claim(me)
        other = self._next_runnable(besides=me)
        if other is None:
            self.mutex.release()
            return
        me.state = READY
        self._hand(other)
        self.mutex.release()
        self._await(me)

    # -- threads ---------------------------------------------------------------------------
    def started(self, thread: _TurnThread) -> _Turn:
        turn = _Turn(thread.name)
        turn.state = READY
        self.order.append(turn)
        return turn

    def enter(self, turn: _Turn) -> None:
        """A new thread's first step: be known, then wait for its turn."""
        self.turns[_get_ident()] = turn
        self._await(turn)

    def leave(self, turn: _Turn) -> None:
        self._claim(turn)
        turn.state = ENDED
        self.order.remove(turn)
        self.turns.pop(_get_ident(), None)
        self._pass(turn)

    # -- passing the turn ------------------------------------------------------------------
    def _claim(self, me: _Turn) -> None:
        """Hold the mutex, with the turn: a thread that was preempted (FREE) first waits for its turn again."""
        self.mutex.acquire()
        while me.state == FREE:
            me.state = READY
            self.mutex.release()
            self._await(me)
            self.mutex.acquire()

    def _pass(self, me: _Turn) -> None:
        """``me`` stops here (the mutex held): run whoever may go on next, asking the world when nobody can."""
        try:
            nxt = self._choose(patient=True)
            assert nxt is not None  # a patient choice waits until someone can run
            if nxt is me:
                me.state, self.holder, self.since = RUNS, me, _real_now()
                return
            self._hand(nxt)
        finally:
            self.mutex.release()
        if me.state != ENDED:
            self._await(me)

    def _hand(self, nxt: _Turn) -> None:
        nxt.state, self.holder, self.since = RUNS, nxt, _real_now()
        nxt.go.release()

    def _choose(self, patient: bool) -> _Turn | None:
        """Who runs next: a thread that is ready, or one the world's answer (to a request, to a sleep until the
        first timer) lets go on. ``patient``: wait for one, in short real pauses, when everyone waits on the
        real world (or all are stuck, until the world's watchdog ends the environment)."""
        idle = 0.0005
        while True:
            nxt = self._next_runnable()
            if nxt is not None:
                return nxt
            if self.asking:
                turn = self.asking.popleft()
                assert turn.message is not None  # an asking thread's request
                turn.answer = self._ask(turn.message)
                turn.message, turn.state = None, READY
                continue
            # A thread computing beside the turns (FREE) is real time passing too: a sleeping thread's timer
            # fires as it would while the other computes, not at once in a loop of the world's sleeps.
            real = [t for t in self.order if ((t.real or t.paced) and t.state == WAITS) or t.state == FREE]
            if self._timer_due(real) if real else self._sleep_to_first_timer():
                continue
            if not patient:
                return None
            self.mutex.release()  # a thread computing beside the turns may come back meanwhile
            try:
                _allocate().acquire(True, idle)
            finally:
                self.mutex.acquire()
            idle = min(idle * 2, 0.05 if not real else 0.01)

    def _await(self, me: _Turn) -> None:
        """Wait until it is ``me``'s turn. Every quarter quantum, a waiting thread looks at the thread whose turn
        it is: one that has computed past the quantum without waiting on anything (``while True: pass``) is
        preempted, as the GIL would switch threads on Lambda."""
        while not me.go.acquire(True, wire.QUANTUM / 4):
            if self._preempt(me):
                return

    def _preempt(self, me: _Turn) -> bool:
        """The turn-holder has computed for ``wire.QUANTUM`` real seconds: from now on it computes beside the
        turns (FREE, until it next waits), and whoever may run next runs (True: ``me``). Under the quantum this
        never happens, so runs stay the same; past it, the time counts toward the function's timeout anyway."""
        if not self._overdue() or not self.mutex.acquire(False):
            return False
        try:
            holder = self.holder
            if not self._overdue():
                return False
            holder.state, holder.real_since = FREE, self.since
            nxt = self._choose(patient=False)
            if nxt is None:
                holder.state = RUNS
                return False
            if nxt is me:
                me.state, self.holder, self.since = RUNS, me, _real_now()
                return True
            self._hand(nxt)
            return False
        finally:
            self.mutex.release()

    def _overdue(self) -> bool:
        return self.holder.state == RUNS and not self.requesting and _real_now() - self.since >= wire.QUANTUM

    def requested(self) -> None:
        """The world answered a request on the channel (any thread's, the runtime's own too)."""
        self.since = _real_now()

    def _next_runnable(self, besides: _Turn | None = None) -> _Turn | None:
        # A waiting thread's test may itself wait at once (a pipe's poll(0) is a select): it must not pass
        # the turn from inside this search.
        self.probing = True
        try:
            return self._first_runnable(besides)
        finally:
            self.probing = False

    def _first_runnable(self, besides: _Turn | None) -> _Turn | None:
        for turn in self.order:
            if turn is besides:
                continue
            if turn.state == READY:
                return turn
            if turn.state == WAITS and turn.test is not None and turn.test():
                turn.took, turn.test, turn.deadline = True, None, None
                turn.state = READY
                return turn
            if turn.state == WAITS and turn.real_until is not None and _real_now() >= turn.real_until:
                turn.took, turn.test, turn.real_until = False, None, None
                turn.state = READY
                return turn
        return None

    def _timer_due(self, real: list[_Turn]) -> bool:
        """While threads wait on the real world (a child process, a pipe), the world's clock keeps pace with real
        time: a timer (a sleep, an event loop's) fires once as many real seconds have passed as it had to wait,
        the world sleeping up to it, so an ``asyncio.sleep`` or a ``wait_for`` racing a child ends on time.
        Otherwise the world's answer to a sleep wakes them, in the order that keeps runs the same."""
        deadlines = [t.deadline for t in self.order if t.state == WAITS and t.deadline is not None]
        if not deadlines:
            return False
        now, answered_at = self._answered()
        waited = _real_now() - max(answered_at, min(t.real_since for t in real))
        return now + waited >= min(deadlines) and self._sleep_to_first_timer()

    def _sleep_to_first_timer(self) -> bool:
        timed = [(t, t.deadline) for t in self.order if t.state == WAITS and t.deadline is not None]
        if not timed:
            return False
        first, deadline = min(timed, key=lambda pair: pair[1])
        now = self._now()
        seconds = first.sleep_for if first.sleep_for is not None and now == first.asked_at else deadline - now
        self._ask({"t": wire.Kind.SLEEP, "seconds": max(0.0, seconds)})
        now = self._now()
        for turn in self.order:
            if turn.state == WAITS and turn.deadline is not None and (turn is first or turn.deadline <= now):
                turn.state, turn.took, turn.test, turn.deadline, turn.sleep_for = READY, False, None, None, None
        return True


def _real_now() -> float:
    return _REAL_MONOTONIC()


_REAL_MONOTONIC = __import__("time").monotonic  # bound before the environment's clock replaces it


#: A lock no one ever releases: waiting on it with a timeout is a pause that computes nothing. (A new lock would be
#: free, so acquiring it returned at once: a forked child's ``time.sleep`` took no time, and every wait polled hot.)
_NEVER_RELEASED = _allocate()
_NEVER_RELEASED.acquire()


def real_pause(seconds: float) -> None:
    """A pause of real seconds, whatever ``time.sleep`` has become in this process."""
    _NEVER_RELEASED.acquire(True, seconds)


def _poll(test: Callable[[], bool], timeout: float | None) -> bool:
    waited, pause = 0.0, 0.001
    while not test():
        if timeout is not None and waited >= timeout:
            return False
        real_pause(pause)
        waited += pause
    return True


#: This environment's turns, once installed.
TURNS: Turns | None = None
class _Saved(TypedDict, total=False):
    """What ``install`` replaced, kept for the replacements to call: threading's own, and each selector's select."""

    start: Callable[..., Any]
    join: Callable[..., Any]
    is_alive: Callable[..., bool]
    wait: Callable[..., Any]
    starting: set[int]  # threads inside Thread.start, by ident
    select: dict[type, Callable[..., Any]]


_saved: _Saved = {}


class Alarm(Protocol):
    """``alarms.Alarm`` as a wait of the main thread sees it: when it rings next, and its ringing."""

    at: float | None

    def fire(self) -> None: ...


class _TurnThread(Protocol):
    """A ``threading.Thread`` taking turns: its ``run`` wrapped, and its turn noted on it."""

    name: str
    run: Callable[[], None]
    _rwh_turn: _Turn


class ConditionInternals(Protocol):
    """The private parts of CPython's ``threading.Condition`` that its ``wait``, redone below, uses."""

    _waiters: collections.deque

    def _is_owned(self) -> bool: ...

    def _release_save(self) -> Any: ...

    def _acquire_restore(self, state: Any) -> None: ...


class TurnLock:
    """``threading.Lock`` whose blocking acquire lets the other threads run meanwhile."""

    def __init__(self) -> None:
        self._lock = _allocate()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._lock.acquire(False):
            return True
        if not blocking:
            return False
        if TURNS is None or TURNS.mine() is None or _get_ident() in _saved["starting"]:
            return self._lock.acquire(True, timeout)
        return TURNS.wait(lambda: self._lock.acquire(False), None if timeout < 0 else timeout)

    def release(self) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def _at_fork_reinit(self) -> None:
        self._lock = _allocate()

    __enter__ = acquire

    def __exit__(self, *_: Any) -> None:
        self.release()


class TurnSimpleQueue:
    """``queue.SimpleQueue`` (a thread pool's work queue) whose ``get`` lets the other threads run."""

    def __init__(self) -> None:
        self._items: collections.deque = collections.deque()

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        self._items.append(item)

    put_nowait = put

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        def ready() -> bool:
            return bool(self._items)

        wait = timeout if block else 0
        # In a process forked from the environment (a pool's worker) there are no turns: it polls.
        if not (TURNS.wait(ready, wait) if TURNS is not None else _poll(ready, wait)):
            raise queue.Empty
        return self._items.popleft()

    def get_nowait(self) -> Any:
        return self.get(block=False)

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)


def _start(self: _TurnThread) -> None:
    turns = TURNS
    if turns is None or turns.mine() is None:
        return _saved["start"](self)
    turn = turns.started(self)
    run = self.run

    def run_in_turn() -> None:
        turns.enter(turn)
        try:
            run()
        finally:
            turns.leave(turn)

    self.run = run_in_turn
    self._rwh_turn = turn
    # Thread.start waits until the new thread runs: that wait is the operating system's, not a turn.
    _saved["starting"].add(_get_ident())
    try:
        _saved["start"](self)
    finally:
        _saved["starting"].discard(_get_ident())


def _join(self: threading.Thread, timeout: float | None = None) -> None:
    turn = getattr(self, "_rwh_turn", None)
    turns = TURNS
    if turn is None or turns is None or turns.mine() is None:
        return _saved["join"](self, timeout)
    if turns.wait(lambda: turn.state == ENDED, timeout):
        _saved["join"](self)  # it has left its turn for good: only its last bytecodes remain


def _is_alive(self: threading.Thread) -> bool:
    turn = getattr(self, "_rwh_turn", None)
    return _saved["is_alive"](self) if turn is None else turn.state != ENDED


def _condition_wait(self: ConditionInternals, timeout: float | None = None) -> bool:
    turns = TURNS
    if turns is None or turns.mine() is None or _get_ident() in _saved["starting"]:
        return _saved["wait"](self, timeout)
    if not self._is_owned():
        raise RuntimeError("cannot wait on un-acquired lock")
    waiter = _allocate()
    waiter.acquire()
    self._waiters.append(waiter)
    saved_state = self._release_save()
    took = False
    try:
        took = turns.wait(lambda: waiter.acquire(False), timeout)
        return took
    finally:
        self._acquire_restore(saved_state)
        if not took:  # timed out, or an alarm's handler raised in the wait: no notify is owed to it
            try:
                self._waiters.remove(waiter)
            except ValueError:
                pass


def _selector_select(selector_class: type[selectors.BaseSelector]) -> Callable:
    original = selector_class.select

    def select(self: Any, timeout: float | None = None) -> Any:
        # An event loop waiting for its timers or a worker thread's wake-up: a wait like the others; one that
        # watches a child's pipe (or a pidfd) keeps its timers in pace with real time meanwhile.
        turns = TURNS
        if turns is not None and turns.mine() is not None:
            turns.wait(lambda: bool(original(self, 0)), None if timeout is None else max(0.0, timeout),
                       paced=_watches_the_real_world(self))
            return original(self, 0)
        return original(self, timeout)

    return select


def _watches_the_real_world(selector: selectors.BaseSelector) -> bool:
    """Whether a selector watches something other processes fill in real time: anything but a socket (a pipe, a
    pidfd). Its sockets are the event loop's own wake-up pair, or pairs between this process's threads."""
    try:
        mapping = selector.get_map()
    except RuntimeError:  # closed
        return False
    for key in list(mapping.values()) if mapping is not None else []:
        try:
            if not stat.S_ISSOCK(posix.fstat(key.fd).st_mode):  # posix's: not the file-time wrapper of os.fstat
                return True
        except OSError:
            continue
    return False


def install(ask: Callable[[wire.Message], wire.Message], now: Callable[[], float],
            answered: Callable[[], tuple[float, float]] | None = None) -> Turns:
    """From now on, this process's threads take turns (the calling thread is the main one, running)."""
    global TURNS
    TURNS = Turns(ask, now, answered)
    _saved["start"], _saved["join"] = threading.Thread.start, threading.Thread.join
    _saved["is_alive"], _saved["wait"], _saved["starting"] = threading.Thread.is_alive, threading.Condition.wait, set()
    py_rlock = threading._PyRLock  # type: ignore[attr-defined]  # CPython's RLock in Python, private
    replaced: tuple[tuple[Any, str, Any], ...] = (
        (threading.Thread, "start", _start), (threading.Thread, "join", _join),
        (threading.Thread, "is_alive", _is_alive), (threading.Condition, "wait", _condition_wait),
        (threading, "Lock", TurnLock), (threading, "_allocate_lock", TurnLock), (threading, "RLock", py_rlock),
        (queue, "SimpleQueue", TurnSimpleQueue))
    for owner, name, replacement in replaced:  # for good: the environment's process ends with them
        setattr(owner, name, replacement)
    queue.time = _queue_clock(queue.time)  # type: ignore[attr-defined]
    for name in ("SelectSelector", "PollSelector", "EpollSelector", "DevpollSelector", "KqueueSelector"):
        cls = getattr(selectors, name, None)
        if cls is not None:
            _saved.setdefault("select", {})[cls] = cls.select
            cls.select = _selector_select(cls)
    return TURNS


def _queue_clock(real: Callable[[], float]) -> Callable[[], float]:
    """``queue.Queue.get(timeout=...)`` counts its time left on the monotonic clock queue bound when imported (the
    real one), while a handler thread's wait lasts world seconds, instant in real time: the time left never went
    down, and a thread polling a queue (AWS's durable execution SDK's checkpoint thread) looped for ever. A thread
    taking turns reads the world's clock; the runtime's own threads keep the real one."""
    def clock() -> float:
        turns = TURNS
        return turns._now() if turns is not None and turns.mine() is not None else real()

    return clock


def real_selector(cls: type[selectors.BaseSelector]) -> type[selectors.BaseSelector]:
    """A selector whose ``select`` waits on its file descriptors in real time, letting the other threads run.

    For what waits on other processes (``subprocess``, ``multiprocessing``): their pipes fill in real time,
    which no jump of the world's clock can hurry."""
    original = _saved.get("select", {}).get(cls, cls.select)

    def select(self: Any, timeout: float | None = None) -> Any:
        turns = TURNS
        if turns is not None and turns.mine() is not None:
            turns.wait(lambda: bool(original(self, 0)), None if timeout is None else max(0.0, timeout), real=True)
            return original(self, 0)
        return original(self, timeout)

    return type(f"Real{cls.__name__}", (cls,), {"select": select})


def forked() -> None:
    """In a process forked from the environment: no turns (its one thread runs as any process's would)."""
    global TURNS
    TURNS = None

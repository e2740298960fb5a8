"""Inside an execution environment: ``signal.alarm`` and ``setitimer(ITIMER_REAL)`` on the environment's clock.

A learner guards slow work with ``signal.alarm(1)`` (a pattern from blog posts). The kernel's alarm counts real
seconds, and a sleep here is one request to the world, instant in real time: the kernel's SIGALRM would never cut
it short, and a 1 s alarm around a 2 s ``time.sleep`` would never ring. So the process's real-time interval timer
is the environment's, on the world's clock, as Linux keeps it (``alarm`` and ``setitimer(ITIMER_REAL)`` are one
timer; ``alarm`` returns the seconds left, rounded as glibc rounds them). A sleep of the main thread that spans
the alarm ends at the alarm's time and the signal is raised there: a handler's exception leaves the sleep, and if
the handler returns the sleep goes on for the rest (PEP 475). A wait of the main thread on anything else (a
``join``, an ``Event``, a lock, a queue, an event loop's ``select``, a child process) ends for the alarm as for a
timer, and the signal is raised there the same way (``Turns.wait``). An alarm that comes due during one of the
main thread's requests (an AWS call, an effect: the world's clock moves) rings as it is answered. Code that
computes without asking the world anything moves the clock only past the quantum, in real time: the kernel's own
timer is set for that moment (``Backstop``), and the alarm rings in the middle of the computation. Under the
quantum it rings at the code's next request or wait, so runs stay the same. A process forked from the
environment has no such timer (Linux clears it in a child) and uses the kernel's own.
"""
from __future__ import annotations

import _thread
import errno
import os
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from . import turns

_MAIN = _thread.get_ident()  # noted again by install, from the environment's main thread


class Alarm:
    """The process's real-time interval timer, on a clock it is given (``now``, in seconds)."""

    def __init__(self, now: Callable[[], float], ring: Callable[[], None],
                 arm: Callable[[float | None], None] = lambda at: None):
        self.now, self.ring = now, ring
        self.arm = arm  # told each new ``at`` (the backstop for code that computes: ``Backstop.arm``)
        self.at: float | None = None  # when it rings next, on that clock
        self.interval = 0.0

    def set(self, seconds: float, interval: float = 0.0) -> tuple[float, float]:
        """``setitimer``: arm (``seconds`` > 0) or disarm, and return what was left of the old timer."""
        old = self.get()
        self.at = None if seconds <= 0 else self.now() + seconds
        self.interval = interval if self.at is not None else 0.0
        self.arm(self.at)
        return old

    def get(self) -> tuple[float, float]:
        """``getitimer``: the seconds left before it rings, and its interval."""
        if self.at is None:
            return 0.0, 0.0
        return max(self.at - self.now(), 1e-6), self.interval

    def due(self, at: float | None = None) -> bool:
        return self.at is not None and self.at <= (self.now() if at is None else at)

    def fire(self) -> None:
        """It rings: the next time (an interval timer's) set first, then the signal raised."""
        assert self.at is not None  # only a due alarm rings
        if self.interval > 0:
            self.at = max(self.at + self.interval, self.now() + 1e-6)
        else:
            self.at = None
        self.arm(self.at)
        self.ring()

    def sleep(self, seconds: float, sleep: Callable[[float], None]) -> None:
        """The main thread's ``time.sleep`` through ``sleep`` (the world's), cut where the alarm rings."""
        start = self.now()
        end = start + seconds
        if self.at is None or self.at > end:
            sleep(seconds)  # a sleep it does not cut: as it was asked, to the bit
            return
        while self.at is not None and self.at <= end:
            if self.at > start:
                sleep(self.at - start)
            self.fire()  # the handler's exception leaves the sleep here
            start = self.now()
        if end > start:
            sleep(end - start)

    def alarm(self, seconds: int) -> int:
        """``signal.alarm``: seconds until the old alarm, rounded as glibc rounds them (never 0 while armed)."""
        left, _ = self.set(float(seconds % 2**32))
        whole = int(left)
        fraction = left - whole
        return whole + 1 if fraction >= 0.5 or (whole == 0 and fraction > 0) else whole


#: This environment's timer, once installed.
ALARM: Alarm | None = None


def on_main_thread() -> bool:
    return _thread.get_ident() == _MAIN


def answered() -> None:
    """The world answered one of the main thread's requests: an alarm that came due meanwhile rings now."""
    alarm = ALARM
    if alarm is not None and alarm.due() and on_main_thread():
        alarm.fire()


_HERE = os.path.dirname(os.path.abspath(__file__))
#: The modules whose code the alarm never interrupts (their state would be left half-changed): the channel, the
#: turns and the waits. The handler runs under guest.run, which is not among them.
_MACHINERY = {os.path.join(_HERE, f"{name}.py") for name in ("turns", "realwaits", "wire", "filetimes", "alarms")}
_GUEST = os.path.join(_HERE, "guest.py")


def _in_machinery(frame: FrameType | None) -> bool:
    while frame is not None:
        code = frame.f_code
        if code.co_filename in _MACHINERY or (code.co_filename == _GUEST and code.co_name != "run"):
            return True
        frame = frame.f_back
    return False


class Backstop:
    """SIGALRM's real disposition, and the kernel's real-time timer set for code that computes past the quantum.

    Code that computes without asking the world anything moves the clock in real time, past the quantum
    (``Channel.reading``): the kernel's timer is set to when that brings the clock to the alarm, and its signal
    rings the alarm there, in the middle of the computation, as Lambda's would. It never interrupts the sandbox's
    own code (it looks again 10 ms later). Every SIGALRM comes here first (``signal.signal`` keeps the handler's
    disposition aside): one the kernel's timer did not send (``os.kill``) goes on to the handler's at once."""

    def __init__(self, world_at: Callable[[], tuple[float, float]], quantum: float):
        self.world_at, self.quantum = world_at, quantum
        self.real_set, self.real_get, self.real_signal = signal.setitimer, signal.getitimer, signal.signal
        self.disposition: Any = self.real_signal(signal.SIGALRM, self.dispatch)
        self.armed = False  # the kernel's timer is set, by this
        self.pending = False  # a SIGALRM of someone else's waits for the sandbox's code to return

    def arm(self, at: float | None) -> None:
        if at is None:
            if self.armed:
                self.real_set(signal.ITIMER_REAL, 0)
                self.armed = False
            return
        now, answered_at = self.world_at()
        left = max(at - now, self.quantum + 0.001) - (_REAL_MONOTONIC() - answered_at)
        self.real_set(signal.ITIMER_REAL, max(left, 0.001))
        self.armed = True

    def dispatch(self, signum: int, frame: FrameType | None) -> None:
        alarm = ALARM
        if alarm is None or not VIRTUAL():  # a process forked from the environment: the kernel's own alarm
            self.ring(frame)
            return
        if self.armed and self.real_get(signal.ITIMER_REAL)[0] == 0.0:
            self.armed = False
        else:
            self.pending = True
        due = alarm.due()
        if not (due or self.pending):
            self.arm(alarm.at)  # early: other requests moved the reference since it was set
            return
        if _in_machinery(frame):
            self.real_set(signal.ITIMER_REAL, 0.01)
            self.armed = True
            return
        if self.pending:
            self.pending = False
            self.arm(alarm.at)
            self.ring(frame)
        if due:
            alarm.fire()

    def ring(self, frame: FrameType | None = None) -> None:
        """SIGALRM, as the handler's disposition takes it: its function called, ignored, or the process ended."""
        handler = self.disposition
        if handler == signal.SIG_IGN or handler is None:
            return
        if handler == signal.SIG_DFL:
            self.real_signal(signal.SIGALRM, signal.SIG_DFL)
            signal.raise_signal(signal.SIGALRM)  # "Alarm clock": the process ends, as the kernel would end it
            return
        handler(signal.SIGALRM, frame if frame is not None else sys._getframe(1))


_REAL_MONOTONIC = turns._REAL_MONOTONIC
VIRTUAL: Callable[[], bool] = lambda: False  # noqa: E731 - replaced by install


def install(now: Callable[[], float], virtual: Callable[[], bool],
            world_at: Callable[[], tuple[float, float]], quantum: float) -> Alarm:
    """``signal.alarm``, ``setitimer`` and ``getitimer`` of ITIMER_REAL on ``now``'s clock while ``virtual()`` (the
    environment's runtime process, not a process forked from it). ``world_at``: the world's time in its last answer,
    and the real time it came."""
    global ALARM, _MAIN, VIRTUAL
    _MAIN, VIRTUAL = _thread.get_ident(), virtual
    backstop = Backstop(world_at, quantum)
    ALARM = Alarm(now, backstop.ring, backstop.arm)
    _replace_alarm_calls(virtual)
    _replace_handler_calls(virtual, backstop)
    return ALARM


def _replace_handler_calls(virtual: Callable[[], bool], backstop: Backstop) -> None:
    real_signal, real_getsignal = signal.signal, signal.getsignal

    def signal_(signalnum: int, handler: Any) -> Any:
        if signalnum != signal.SIGALRM or not virtual():
            return real_signal(signalnum, handler)
        real_signal(signalnum, handler)  # refused as CPython refuses it (off the main thread, not a handler)
        real_signal(signalnum, backstop.dispatch)
        old, backstop.disposition = backstop.disposition, handler
        return old

    def getsignal(signalnum: int) -> Any:
        if signalnum != signal.SIGALRM or not virtual():
            return real_getsignal(signalnum)
        return backstop.disposition

    signal.signal, signal.getsignal = signal_, getsignal


def _replace_alarm_calls(virtual: Callable[[], bool]) -> None:
    real_alarm, real_set, real_get = signal.alarm, signal.setitimer, signal.getitimer

    def alarm(seconds: int) -> int:
        if not virtual() or ALARM is None:
            return real_alarm(seconds)
        return ALARM.alarm(seconds.__index__())

    def setitimer(which: int, seconds: float, interval: float = 0.0) -> tuple[float, float]:
        if which != signal.ITIMER_REAL or not virtual() or ALARM is None:
            return real_set(which, seconds, interval)
        if seconds < 0 or interval < 0:
            raise signal.ItimerError(errno.EINVAL, "Invalid argument")
        return ALARM.set(float(seconds), float(interval))

    def getitimer(which: int) -> tuple[float, float]:
        if which != signal.ITIMER_REAL or not virtual() or ALARM is None:
            return real_get(which)
        return ALARM.get()

    signal.alarm, signal.setitimer, signal.getitimer = alarm, setitimer, getitimer

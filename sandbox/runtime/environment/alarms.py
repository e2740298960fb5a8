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
computes without asking the world anything is not interrupted: the alarm rings at its next request or wait. A
process forked from the environment has no such timer (Linux clears it in a child) and uses the kernel's own.
"""
from __future__ import annotations

import _thread
import errno
import signal
from collections.abc import Callable

_MAIN = _thread.get_ident()  # noted again by install, from the environment's main thread


class Alarm:
    """The process's real-time interval timer, on a clock it is given (``now``, in seconds)."""

    def __init__(self, now: Callable[[], float], ring: Callable[[], None]):
        self.now, self.ring = now, ring
        self.at: float | None = None  # when it rings next, on that clock
        self.interval = 0.0

    def set(self, seconds: float, interval: float = 0.0) -> tuple[float, float]:
        """``setitimer``: arm (``seconds`` > 0) or disarm, and return what was left of the old timer."""
        old = self.get()
        self.at = None if seconds <= 0 else self.now() + seconds
        self.interval = interval if self.at is not None else 0.0
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


def _ring() -> None:
    signal.raise_signal(signal.SIGALRM)  # its Python handler runs here, in the main thread


def install(now: Callable[[], float], virtual: Callable[[], bool]) -> Alarm:
    """``signal.alarm``, ``setitimer`` and ``getitimer`` of ITIMER_REAL on ``now``'s clock while ``virtual()`` (the
    environment's runtime process, not a process forked from it)."""
    global ALARM, _MAIN
    _MAIN = _thread.get_ident()
    ALARM = Alarm(now, _ring)
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
    return ALARM

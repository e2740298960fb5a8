"""Virtual time that handler code, moto and the scheduler all share."""
from __future__ import annotations

import datetime as dt
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from time_machine import Traveller, travel


def _import_time_machine() -> ModuleType:
    """time-machine, without its optional pytest plugin when pytest is not loaded already.

    time-machine imports pytest just to offer a fixture the sandbox never uses; that costs
    a CLI run about 0.1 s. Where pytest is loaded (the test suite), nothing changes.
    """
    if "pytest" in sys.modules or "time_machine" in sys.modules:
        import time_machine
        return time_machine
    # None makes `import pytest` fail inside time-machine only (the import system's rule; typeshed
    # allows only modules there)
    sys.modules["pytest"] = None  # type: ignore[assignment]
    try:
        import time_machine
    finally:
        del sys.modules["pytest"]
    return time_machine


time_machine = _import_time_machine()

#: Worlds start at the same instant so that histories (and expiresAt values) repeat exactly.
DEFAULT_EPOCH = dt.datetime(2026, 1, 5, 9, 0, 0, tzinfo=dt.UTC).timestamp()


def _every_thread() -> bool:
    return True


class VirtualClock:
    """A clock that only moves when told to.

    While started, ``time.time()``, ``datetime.now()`` and moto's own timestamps (SQS
    visibility, DynamoDB) all read this clock, through time-machine, on the threads
    ``readers()`` says are the world's, and in ``lend``'s calls. time-machine patches the
    whole process; every other thread gets the machine's own time from the patch: a Jupyter
    kernel's IOPub and control threads (the timestamps on its replies), and its cells while
    a stepped run (``modes.stepping``) keeps its world open on a thread of its own.
    ``time.monotonic`` is left alone: JupyterLab's event loop and botocore's connection
    pools rely on it.
    """

    def __init__(self, epoch: float = DEFAULT_EPOCH):
        self.epoch = float(epoch)
        self._offset = 0.0
        self._traveller: Traveller | None = None
        self._travel: travel | None = None
        self._lock = threading.Lock()
        self._lent = threading.local()
        #: Which threads read this clock while it is started (the world says: its tasks and its own thread).
        self.readers: Callable[[], bool] = _every_thread

    # -- reading -------------------------------------------------------------
    def now(self) -> float:
        """Virtual Unix time in seconds."""
        return self.epoch + self._offset

    def elapsed(self) -> float:
        """Virtual seconds since the world opened."""
        return self._offset

    def __repr__(self) -> str:
        stamp = dt.datetime.fromtimestamp(self.now(), dt.UTC).isoformat(timespec="milliseconds")
        return f"VirtualClock({stamp}, +{self._offset:.3f}s)"

    # -- moving --------------------------------------------------------------
    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError(f"the clock cannot go backwards (asked to move {seconds} s)")
        with self._lock:
            self._offset += seconds
            if self._traveller is not None and seconds:
                self._traveller.shift(float(seconds))
        return self.now()

    def advance_to(self, elapsed: float) -> float:
        """Move to ``elapsed`` seconds after the epoch (never backwards)."""
        return self.advance(max(0.0, elapsed - self._offset))

    # -- patching ------------------------------------------------------------
    def start(self) -> None:
        if self._traveller is not None:
            return
        self._travel = time_machine.travel(self.now(), tick=False)
        self._traveller = traveller = self._travel.start()
        virtual_ns, real_ns = traveller.time_ns, time_machine.escape_hatch.time.time_ns

        def time_ns() -> int:
            # every patched reading (time, datetime, gmtime, strftime, clock_gettime) asks here
            return virtual_ns() if self.reads_here() else real_ns()

        traveller.time_ns = time_ns  # type: ignore[method-assign]  # the instance's, as guest.py does

    def reads_here(self) -> bool:
        """Does this thread read the virtual clock (while it is started)?"""
        return getattr(self._lent, "depth", 0) > 0 or self.readers()

    def lend(self, fn: Callable, *args: Any) -> Any:
        """``fn(*args)``, run on the virtual clock whichever thread calls it (a request to the world's moto)."""
        local = self._lent
        local.depth = getattr(local, "depth", 0) + 1
        try:
            return fn(*args)
        finally:
            local.depth -= 1

    def stop(self) -> None:
        if self._traveller is None or self._travel is None:  # the second follows from the first
            return
        self._travel.stop()
        self._traveller = None
        self._travel = None

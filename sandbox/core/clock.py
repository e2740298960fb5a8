"""Virtual time that handler code, moto and the scheduler all share."""
from __future__ import annotations

import datetime as dt
import sys
import threading


def _import_time_machine():
    """time-machine, without its optional pytest plugin when pytest is not loaded already.

    time-machine imports pytest just to offer a fixture the sandbox never uses; that costs
    a CLI run about 0.1 s. Where pytest is loaded (the test suite), nothing changes.
    """
    if "pytest" in sys.modules or "time_machine" in sys.modules:
        import time_machine
        return time_machine
    sys.modules["pytest"] = None  # makes `import pytest` fail inside time-machine only
    try:
        import time_machine
    finally:
        del sys.modules["pytest"]
    return time_machine


time_machine = _import_time_machine()

#: Worlds start at the same instant so that histories (and expiresAt values) repeat exactly.
DEFAULT_EPOCH = dt.datetime(2026, 1, 5, 9, 0, 0, tzinfo=dt.UTC).timestamp()


class VirtualClock:
    """A clock that only moves when told to.

    While started, ``time.time()``, ``datetime.now()`` and moto's own timestamps (SQS
    visibility, DynamoDB) all read this clock, through time-machine. ``time.monotonic``
    is left alone: JupyterLab's event loop and botocore's connection pools rely on it.
    """

    def __init__(self, epoch: float = DEFAULT_EPOCH):
        self.epoch = float(epoch)
        self._offset = 0.0
        self._traveller = None
        self._travel = None
        self._lock = threading.Lock()

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
        self._traveller = self._travel.start()

    def stop(self) -> None:
        if self._traveller is None:
            return
        self._travel.stop()
        self._traveller = None
        self._travel = None

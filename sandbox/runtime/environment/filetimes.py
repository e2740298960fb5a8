"""Inside an execution environment: file times on the environment's clock.

The kernel stamps a file with its own real clock, and ``time.time()`` here reads the world's virtual one, which is
months away and jumps (a 2-minute retry takes no real time). A learner compares the two
(``time.time() - os.path.getmtime(marker)``), so here a file's times read as the clock read when the kernel
stamped them: each time the world answers, the environment notes the kernel's real time beside the world's, and a
stamp that falls between two answers is the time the code read then (the world's time at the first, plus the real
time since once it passes ``wire.QUANTUM``, as ``Channel.reading``). ``os.stat``, ``lstat``, ``fstat``,
``scandir``'s entries, and what reads through them (``os.path.getmtime``, ``pathlib.Path.stat``, ``shutil``) map
real stamps to virtual ones; ``os.utime`` with explicit times maps the other way, and remembers what it was asked
for, so a file touched to a time reads back that time exactly.

The kernel stamps files from its coarse clock (a tick of a few milliseconds), so a file written just before a
request could carry the same stamp as one written just after the answer. After a request during which the code
had opened a file for writing (``open``, ``os.open``, ``os.utime``), the environment waits for the tick to pass
before it goes on, so stamps on either side of an answer never meet. A write through a file left open earlier
shares a tick with the next answer only by chance, and may then read as that answer's time.
"""
from __future__ import annotations

import bisect
import builtins
import io
import math
import os
from typing import Any

from . import turns

#: CLOCK_REALTIME_COARSE (Linux): the clock the kernel stamps files with.
_COARSE = 5
_BILLION = 1_000_000_000


def _coarse_ns() -> int:
    return _CLOCK_GETTIME_NS(_COARSE)


def _fine_ns() -> int:
    return _REAL_TIME_NS()


_CLOCK_GETTIME_NS = __import__("time").clock_gettime_ns
_REAL_TIME_NS = __import__("time").time_ns  # replaced by install with the real clock, whatever time-machine does
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _ns(seconds: float) -> int:
    """Nanoseconds of a time in seconds, exactly (a float's product with a billion is rounded at this size)."""
    whole = math.floor(seconds)
    return whole * _BILLION + round((seconds - whole) * _BILLION)


class FileClock:
    """The (real stamp, virtual time) pairs of one environment, and the times ``os.utime`` was asked for."""

    def __init__(self, now: float, quantum: float):
        self.reals: list[int] = []  # the kernel's coarse real time at each answer, ns
        self.virtuals: list[float] = []  # the world's time in that answer, s
        self.virtual_ns: list[int] = []
        self.quantum_ns = int(quantum * _BILLION)
        self.written = False  # a file was opened for writing since the last answer
        self.sent = 0  # real time (fine) when the last request left
        #: (device, inode) -> the stamps os.utime wrote, and the virtual times they stand for (ns and s).
        self.set_times: dict[tuple[int, int], tuple[int, int, float, int, int, float]] = {}
        self.answered(now)

    # -- the pairs ---------------------------------------------------------------------------
    def sending(self) -> None:
        self.sent = _fine_ns()

    def answered(self, now: float) -> None:
        if self.written:  # no stamp from before the request may share a tick with one from after it
            while _coarse_ns() <= self.sent:
                turns.real_pause(0.0005)
            self.written = False
        # the real stamp last: a thread reading file times meanwhile (one computing beside the turns) finds
        # every pair it can find complete
        self.virtuals.append(now)
        self.virtual_ns.append(_ns(now))
        self.reals.append(_coarse_ns())

    def virtual(self, real_ns: int) -> tuple[float, int]:
        """The time the environment's clock read when the kernel's real clock read ``real_ns``."""
        i = bisect.bisect_right(self.reals, real_ns) - 1
        if i < 0:  # before the environment began: as long before its start as it really was
            ns = self.virtual_ns[0] - (self.reals[0] - real_ns)
            return ns / _BILLION, ns
        ahead = real_ns - self.reals[i]
        if ahead <= self.quantum_ns:
            return self.virtuals[i], self.virtual_ns[i]
        ns = self.virtual_ns[i] + ahead
        if i + 1 < len(self.reals):
            ns = min(ns, self.virtual_ns[i + 1])
        return ns / _BILLION, ns

    def real(self, virtual_ns: int) -> int:
        """A real stamp for a virtual time (the other way: as near as the pairs allow)."""
        i = bisect.bisect_right(self.virtual_ns, virtual_ns) - 1
        i = max(min(i, len(self.reals) - 1), 0)
        return self.reals[i] + (virtual_ns - self.virtual_ns[i])

    # -- stat results ------------------------------------------------------------------------
    def mapped(self, st: os.stat_result) -> os.stat_result:
        reduced: Any = st.__reduce__()  # a structseq's: (class, (fields, hidden fields by name))
        fields, extra = list(reduced[1][0]), dict(reduced[1][1])
        kept = self.set_times.get((st.st_dev, st.st_ino))
        for index, name in ((7, "st_atime"), (8, "st_mtime"), (9, "st_ctime")):
            real_ns = extra[f"{name}_ns"]
            if kept is not None and name == "st_mtime" and real_ns == kept[0]:
                seconds, ns = kept[2], kept[1]
            elif kept is not None and name == "st_atime" and real_ns == kept[3]:
                seconds, ns = kept[5], kept[4]
            else:
                seconds, ns = self.virtual(real_ns)
            fields[index], extra[name], extra[f"{name}_ns"] = ns // _BILLION, seconds, ns
        return os.stat_result(fields, extra)


#: This environment's file clock, once installed.
CLOCK: FileClock | None = None


class _Entry:
    """An ``os.DirEntry`` whose ``stat`` reads file times on the environment's clock."""

    def __init__(self, entry: Any):
        self._entry = entry
        self.name, self.path = entry.name, entry.path

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        st = self._entry.stat(follow_symlinks=follow_symlinks)
        return CLOCK.mapped(st) if CLOCK is not None else st

    def __getattr__(self, name: str) -> Any:  # inode, is_dir, is_file, is_symlink, is_junction
        return getattr(self._entry, name)

    def __fspath__(self) -> Any:
        return self._entry.__fspath__()

    def __repr__(self) -> str:
        return repr(self._entry)


class _Scandir:
    """``os.scandir``'s iterator, handing out ``_Entry`` objects (a context manager, as the original is)."""

    def __init__(self, it: Any):
        self._it = it

    def __iter__(self) -> _Scandir:
        return self

    def __next__(self) -> _Entry:
        return _Entry(next(self._it))

    def close(self) -> None:
        self._it.close()

    def __enter__(self) -> _Scandir:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._it.close()


def _stats(original: Any) -> Any:
    def stat(*args: Any, **kwargs: Any) -> os.stat_result:
        st = original(*args, **kwargs)
        return CLOCK.mapped(st) if CLOCK is not None else st

    stat.__name__, stat.__doc__ = original.__name__, original.__doc__
    return stat


def _utime(original: Any, original_stat: Any) -> Any:
    def utime(path: Any, times: Any = None, *, ns: Any = None, **kwargs: Any) -> None:
        clock = CLOCK
        if clock is not None:
            clock.written = True
        given = ns if times is None else times
        if clock is None or given is None or (times is not None and ns is not None) \
                or not (isinstance(given, tuple) and len(given) == 2):
            # now, or a call CPython refuses: as it comes
            return original(path, times, **kwargs) if ns is None else original(path, times, ns=ns, **kwargs)
        if ns is not None:
            asked = [(int(n) / _BILLION, int(n)) for n in ns]
        else:
            asked = [(float(t), _ns(float(t))) for t in times]
        original(path, ns=tuple(clock.real(n) for _, n in asked), **kwargs)
        st = original_stat(path, **kwargs)
        (a_s, a_ns), (m_s, m_ns) = asked
        clock.set_times[(st.st_dev, st.st_ino)] = (st.st_mtime_ns, m_ns, m_s, st.st_atime_ns, a_ns, a_s)

    utime.__name__, utime.__doc__ = original.__name__, original.__doc__
    return utime


def _writes(mode: Any) -> bool:
    return not isinstance(mode, str) or any(c in mode for c in "wax+")


def _opens(original: Any) -> Any:
    def open_(file: Any, mode: Any = "r", *args: Any, **kwargs: Any) -> Any:
        if CLOCK is not None and _writes(mode):
            CLOCK.written = True
        return original(file, mode, *args, **kwargs)

    open_.__name__, open_.__doc__ = original.__name__, original.__doc__
    return open_


def _os_opens(original: Any) -> Any:
    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if CLOCK is not None and flags & _WRITES:
            CLOCK.written = True
        return original(path, flags, *args, **kwargs)

    open_.__name__, open_.__doc__ = original.__name__, original.__doc__
    return open_


def _replace(name: str, replacement: Any) -> None:
    """``os.<name>`` replaced, and the replacement in whichever of ``os.supports_fd`` and its kin held the
    original (``shutil.rmtree`` and ``os.fwalk`` ask them which of their calls take a descriptor)."""
    original = getattr(os, name)
    for kind in (os.supports_fd, os.supports_dir_fd, os.supports_follow_symlinks, os.supports_effective_ids):
        if original in kind:
            kind.add(replacement)
    setattr(os, name, replacement)


def install(now: float, quantum: float, real_time_ns: Any) -> FileClock:
    """From now on, this process reads file times on the environment's clock (``now``: the world's time)."""
    global CLOCK, _REAL_TIME_NS
    _REAL_TIME_NS = real_time_ns
    CLOCK = FileClock(now, quantum)
    _replace("utime", _utime(os.utime, os.stat))
    for name in ("stat", "lstat", "fstat"):
        _replace(name, _stats(getattr(os, name)))
    scandir = os.scandir
    _replace("scandir", lambda *args, **kwargs: _Scandir(scandir(*args, **kwargs)))
    builtins.open = io.open = _opens(io.open)
    _replace("open", _os_opens(os.open))
    return CLOCK

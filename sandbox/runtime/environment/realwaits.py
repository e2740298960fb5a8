"""Inside an execution environment: waits on the real world take real time, and count.

The environment's clock is the world's virtual one, and a wait on it (``time.sleep``, a timer, a
``Condition`` with a timeout) is one request that the world answers at once. A child process, a pipe
from a pool's worker or a ``select`` on a socket cannot be hurried that way: they finish in real time.
Here those waits are real (``turns.real_selector``, ``Turns.wait(real=True)``), the other threads run
meanwhile, and the real time they take is what the world charges to the clock and the function's
timeout once it passes the quantum (``wire.QUANTUM``), as Lambda would.

A process forked from the environment (``os.fork``, a ``multiprocessing`` pool's worker) is not the
runtime: it has no channel to the world (its AWS calls and effects fail, its prints are not kept), its
clock runs on from the environment's in real time, and it dies with the environment
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html).
"""
from __future__ import annotations

import os
import selectors
import subprocess
import types
from collections.abc import Callable
from typing import Any, TypedDict

from . import turns

_REAL_MONOTONIC = turns._REAL_MONOTONIC


def _real_time_module() -> types.SimpleNamespace:
    """The ``time`` module as these libraries should see it: their sleeps and deadlines are real."""
    import time

    real = types.SimpleNamespace(**{name: getattr(time, name) for name in dir(time) if not name.startswith("__")})
    real.monotonic = _REAL_MONOTONIC
    real.sleep = _real_sleep
    return real


def _real_sleep(seconds: float) -> None:
    seconds = float(seconds)
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    mine = turns.TURNS
    if mine is not None and mine.mine() is not None:
        mine.wait(lambda: False, seconds, real=True)
    else:
        turns.real_pause(seconds)


def _popen_wait(self: subprocess.Popen, timeout: float | None = None) -> int:
    """``Popen.wait``: the child ends in real time; the other threads run meanwhile."""
    mine = turns.TURNS
    if mine is None or mine.mine() is None:
        return _ORIGINAL["popen_wait"](self, timeout=timeout)
    if not mine.wait(lambda: self.poll() is not None, timeout, real=True):
        assert timeout is not None  # with none, the wait ends only when the child does
        raise subprocess.TimeoutExpired(self.args, timeout)
    assert self.returncode is not None  # poll() saw it end
    return self.returncode


def _waitpid(pid: int, options: int) -> tuple[int, int]:
    """``os.waitpid`` that blocks (asyncio's child watcher thread calls it): the child ends in real time, and the
    other threads run meanwhile (the event loop's timers among them)."""
    mine = turns.TURNS
    original = _ORIGINAL["waitpid"]
    if options & os.WNOHANG or mine is None or mine.mine() is None:
        return original(pid, options)
    ended: list[Any] = []

    def changed() -> bool:
        found: tuple[int, int] | OSError
        try:  # whichever thread looks: what it finds, an error too, is the waiting thread's to report
            found = original(pid, options | os.WNOHANG)
        except OSError as exc:
            found = exc
        if isinstance(found, OSError) or found[0] != 0:
            ended.append(found)
        return bool(ended)

    mine.wait(changed, None, real=True)
    if isinstance(ended[0], OSError):
        raise ended[0]
    return ended[0]


def _wait() -> tuple[int, int]:
    return _waitpid(-1, 0)


class _Originals(TypedDict, total=False):
    popen_wait: Callable[..., Any]  # subprocess.Popen._wait
    waitpid: Callable[[int, int], tuple[int, int]]  # os.waitpid


_ORIGINAL: _Originals = {}


def install(channel_fd: int = -1) -> None:
    """Make ``subprocess``, ``multiprocessing`` and blocking sockets wait in real time, in turns (called once, as
    the environment starts; ``channel_fd``, the channel to the world, is never waited on this way)."""
    import multiprocessing.connection as connection
    import multiprocessing.pool as pool
    import multiprocessing.queues as queues

    real_time = _real_time_module()
    poll_class = getattr(selectors, "PollSelector", selectors.SelectSelector)
    subprocess.time = real_time  # type: ignore[attr-defined]
    subprocess._PopenSelector = turns.real_selector(poll_class)  # type: ignore[attr-defined]
    _ORIGINAL["popen_wait"] = subprocess.Popen._wait  # type: ignore[attr-defined]
    subprocess.Popen._wait = _popen_wait  # type: ignore[attr-defined]
    _ORIGINAL["waitpid"] = os.waitpid
    os.waitpid, os.wait = _waitpid, _wait
    for module in (connection, pool, queues):
        module.time = real_time  # type: ignore[attr-defined]
    connection._WaitSelector = turns.real_selector(connection._WaitSelector)  # type: ignore[attr-defined]
    for name in ("recv", "recv_bytes", "recv_bytes_into"):
        original = getattr(connection.Connection, name)
        setattr(connection.Connection, name, _waits_first(original))
    _semaphores_wait_really()
    _sockets_wait_in_turns(channel_fd)


def _sockets_wait_in_turns(channel_fd: int) -> None:
    """A blocking read of a socket (``recv``, ``accept``) while other threads take turns: it waits, really, for
    something to read, and lets them run meanwhile (a thread that answers over a socketpair, a local server).
    Its timeout, if it has one, is real seconds, as it would be."""
    import select
    import socket

    def waits_first(original: Any) -> Any:
        def call(self: socket.socket, *args: Any, **kwargs: Any) -> Any:
            mine = turns.TURNS
            timeout = self.gettimeout()
            if (mine is not None and mine.mine() is not None and len(mine.order) > 1 and timeout != 0.0
                    and self.fileno() not in (-1, channel_fd)):
                if not mine.wait(lambda: bool(select.select([self], [], [], 0)[0]), timeout, real=True):
                    raise TimeoutError("timed out")  # what socket.timeout is, since Python 3.10
            return original(self, *args, **kwargs)

        return call

    reads = (socket.socket.recv, socket.socket.recv_into, socket.socket.recvfrom, socket.socket.recvfrom_into,
             socket.socket.accept)
    for method in reads:
        setattr(socket.socket, method.__name__, waits_first(method))


def _semaphores_wait_really() -> None:
    """``multiprocessing``'s locks and semaphores are shared with other processes: another process releases
    them, in real time. A blocking acquire waits for that really, and lets the other threads run."""
    import multiprocessing.synchronize as synchronize

    semlock: Any = synchronize.SemLock  # its _make_methods is CPython's private hook, absent from the stubs
    make_methods = semlock._make_methods

    def _make_methods(self: Any) -> None:
        make_methods(self)
        raw = self._semlock.acquire

        def acquire(block: bool = True, timeout: float | None = None) -> bool:
            if raw(False):
                return True
            if not block:
                return False
            mine = turns.TURNS
            if mine is None or mine.mine() is None:
                return bool(raw(True, timeout))
            return mine.wait(lambda: bool(raw(False)), timeout, real=True)

        self.acquire = acquire

    semlock._make_methods = _make_methods
    semlock.__enter__ = lambda self: self.acquire()


def _waits_first(original: Any) -> Any:
    """A blocking read of a pipe: wait (really, letting other threads run) until there is something to read."""

    def read(self: Any, *args: Any, **kwargs: Any) -> Any:
        mine = turns.TURNS
        if mine is not None and mine.mine() is not None and not self.closed:
            mine.wait(lambda: self.closed or self.poll(0), None, real=True)
        return original(self, *args, **kwargs)

    return read


def forked_child(channel: Any) -> None:
    """``os.register_at_fork(after_in_child=...)``: this process is no longer the environment's runtime
    (unless it is a SnapStart snapshot's restored copy, which is one)."""
    if channel.cloning:
        channel.cloning = False
        return
    turns.forked()
    channel.detach()


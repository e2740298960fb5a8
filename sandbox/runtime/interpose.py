"""What the world puts between a handler and the Python process while it is open.

A handler runs as a task among others in one process, so a few things it may do must be
caught and turned into what Lambda would do:

- ``os._exit(n)`` would end the whole process: it becomes ``RuntimeExit``, a crash of that
  invocation (Lambda's Runtime.ExitError), and everything else carries on;
- a thread the handler starts (``threading.Thread``, a ``ThreadPoolExecutor``'s workers)
  becomes a task of its invocation: scheduled deterministically, stopped with it, and its
  effects attributed to it; ``join``, ``Condition.wait`` (under ``Event``, ``Future`` and
  friends) and ``queue.SimpleQueue.get`` wait without holding up the world;
- ``print`` and ``logging`` output of an invocation goes to the history, line by line, as
  CloudWatch Logs would keep it, instead of the terminal.

Threads that are not the sandbox's (JupyterLab's, the caller's) see the ordinary behaviour.
Installed when a world opens, removed when it closes.
"""
from __future__ import annotations

import collections
import logging
import os
import queue
import sys
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..core import active
from ..core.scheduler import current_task
from ..errors import RuntimeExit
from ..vocab import LogStream

if TYPE_CHECKING:
    from ..core.scheduler import Task
    from .environment.turns import ConditionInternals

_saved: dict[str, Any] = {}
_local = threading.local()  # set while this thread starts a real thread: its own waits stay ordinary
_adopted: "weakref.WeakSet[_AdoptedThread]" = weakref.WeakSet()  # handler threads run as tasks


def _invocation() -> Any:
    task = current_task()
    return task.invocation if task is not None else None


# -- os._exit ------------------------------------------------------------------------------------
def _exit(code: int = 0) -> None:
    if current_task() is not None:
        raise RuntimeExit(code)
    _saved["_exit"](code)


# -- threads ---------------------------------------------------------------------------------------
class _AdoptedThread(Protocol):
    """A ``threading.Thread`` as the world adopts it: its task, and CPython's private "started" event."""

    name: str
    _sandbox_task: Task
    _started: threading.Event
    _is_stopped: bool


def _thread_start(self: _AdoptedThread) -> None:
    world = active.current()
    if world is None or getattr(self, "_sandbox_internal", False) or _invocation() is None:
        # Thread.start waits for the new thread to run; that wait must not hand the turn to
        # another task, or the scheduler could run the new task before its caller knows it.
        _local.starting = True
        try:
            return _saved["start"](self)
        finally:
            _local.starting = False
    self._sandbox_task = world.runtime.adopt_thread(self)
    self._started.set()
    _adopted.add(self)


def _thread_join(self: threading.Thread, timeout: float | None = None) -> None:
    task = getattr(self, "_sandbox_task", None)
    world = active.current()
    if task is None or world is None or current_task() is None:
        return _saved["join"](self, timeout)
    world.scheduler.wait_for(task, timeout=timeout, label=f"join {self.name}")


def _thread_is_alive(self: threading.Thread) -> bool:
    task = getattr(self, "_sandbox_task", None)
    return _saved["is_alive"](self) if task is None else not task.done


def _condition_wait(self: ConditionInternals, timeout: float | None = None) -> bool:
    world = active.current()
    if world is None or current_task() is None or getattr(_local, "starting", False):
        return _saved["wait"](self, timeout)
    if not self._is_owned():
        raise RuntimeError("cannot wait on un-acquired lock")
    waiter = threading._allocate_lock()  # type: ignore[attr-defined]  # as Condition.wait does; private
    waiter.acquire()
    self._waiters.append(waiter)
    saved_state = self._release_save()
    try:
        took = world.scheduler.block_until(lambda: waiter.acquire(False), timeout, label="waiting on a condition")
        if not took:
            try:
                self._waiters.remove(waiter)
            except ValueError:
                pass
        return took
    finally:
        self._acquire_restore(saved_state)


class CooperativeSimpleQueue:
    """``queue.SimpleQueue`` whose ``get`` lets the world run while a task waits for an item."""

    def __init__(self) -> None:
        self._items: collections.deque = collections.deque()
        self._ready = threading.Condition(threading.Lock())

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        with self._ready:
            self._items.append(item)
            self._ready.notify()

    put_nowait = put

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        world = active.current()
        if world is not None and current_task() is not None:
            if not world.scheduler.block_until(lambda: bool(self._items), timeout if block else 0,
                                               label="waiting on a queue"):
                raise queue.Empty
            return self._items.popleft()
        with self._ready:
            if not self._ready.wait_for(lambda: self._items, timeout if block else 0):
                raise queue.Empty
            return self._items.popleft()

    def get_nowait(self) -> Any:
        return self.get(block=False)

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)


# -- logs ------------------------------------------------------------------------------------------
class _Router:
    """Stands in for ``sys.stdout``/``sys.stderr``: an invocation's lines go to its log."""

    def __init__(self, original: Any, stream: str, sink: Callable[[Any, str, str], None]):
        self._original, self._stream, self._sink = original, stream, sink

    def write(self, text: str) -> int:
        inv = _invocation()
        if inv is None:
            return self._original.write(text)
        self._sink(inv, self._stream, text)
        return len(text)

    def flush(self) -> None:
        if _invocation() is None:
            self._original.flush()

    def isatty(self) -> bool:
        return False if _invocation() is not None else self._original.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


class _LambdaLogHandler(logging.Handler):
    """What Lambda's Python runtime puts on the root logger: records of an invocation go to its log."""

    def __init__(self, sink: Callable[[Any, str, str], None]):
        super().__init__()
        self._sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        inv = _invocation()
        if inv is not None:
            self._sink(inv, LogStream.LOG, f"[{record.levelname}] {record.getMessage()}\n")


# -- installing ------------------------------------------------------------------------------------
#: What an open world replaces: (owner, attribute, replacement); ``_saved`` keeps each original under
#: the attribute's name.
_REPLACED: tuple[tuple[Any, str, Any], ...] = (
    (os, "_exit", _exit), (threading.Thread, "start", _thread_start), (threading.Thread, "join", _thread_join),
    (threading.Thread, "is_alive", _thread_is_alive), (threading.Condition, "wait", _condition_wait),
    (queue, "SimpleQueue", CooperativeSimpleQueue))


def install(log_sink: Callable[[Any, str, str], None]) -> None:
    if _saved:
        raise RuntimeError("the sandbox's interpositions are already installed")
    _saved.update({name: getattr(owner, name) for owner, name, _ in _REPLACED}, stdout=sys.stdout, stderr=sys.stderr)
    for owner, name, replacement in _REPLACED:
        setattr(owner, name, replacement)
    sys.stdout = _Router(sys.stdout, LogStream.STDOUT, log_sink)
    sys.stderr = _Router(sys.stderr, LogStream.STDERR, log_sink)
    _saved["log_handler"] = _LambdaLogHandler(log_sink)
    logging.getLogger().addHandler(_saved["log_handler"])


def uninstall() -> None:
    if not _saved:
        return
    for owner, name, _ in _REPLACED:
        setattr(owner, name, _saved[name])
    for thread in list(_adopted):
        # Its task has ended with the world: let threading (and concurrent.futures at exit) see it stopped.
        thread._is_stopped = True
    _adopted.clear()
    logging.getLogger().removeHandler(_saved["log_handler"])
    if isinstance(sys.stdout, _Router):
        sys.stdout = _saved["stdout"]
    if isinstance(sys.stderr, _Router):
        sys.stderr = _saved["stderr"]
    _saved.clear()

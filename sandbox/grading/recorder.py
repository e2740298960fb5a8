"""The grader's own copy of every world's history, taken record by record as it is written.

While tests run, ``Recorder`` subscribes to every history (``History.subscribe``): each record
a world writes is handed to a *sink* the moment it is written. In the grading child the sink is
a pipe to the grading parent, which rebuilds each history from what it received and judges it
with its own checker (the submission's code runs in execution environments of its own, where no
history is). ``check()`` in a notebook uses the same path with an in-memory sink.

Every history a world writes is a *group* (one run; an exhaustive search makes one per
schedule). A history written by anything but an open world (a handler building its own) is
marked foreign, and never judged.
"""
from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections.abc import Callable
from typing import Any

from ..core import active
from ..core.history import History
from ..core.records import RecordJson
from ..vocab import RecordType
from .shapes import PipeMessage

#: Log lines are kept short in the copy (a handler may print megabytes).
LOG_TEXT_LIMIT = 300
Sink = Callable[[PipeMessage], None]


def shortened(record: RecordJson) -> RecordJson:
    """The record as the grader keeps it: a log line cut to ``LOG_TEXT_LIMIT`` characters."""
    if record.get("type") == RecordType.LOG and len(str(record.get("text", ""))) > LOG_TEXT_LIMIT:
        return {**record, "text": str(record["text"])[:LOG_TEXT_LIMIT] + " ..."}
    return record


def digest(records: list[RecordJson]) -> str:
    """A fingerprint of a history's records (log text shortened), the same in either process."""
    h = hashlib.sha256()
    for r in records:
        h.update(json.dumps(shortened(r), sort_keys=True, default=str).encode())
    return h.hexdigest()


class Recorder:
    """Subscribed to every history while it is installed; ``sink(message)`` hears every world record.

    Messages: ``{"t": "group", "g": id, "meta": {...}}`` when a world's history gets its first
    record, then ``{"t": "rec", "g": id, "r": record}`` for each record. ``on_record(record)``,
    if given, runs after each (the integrity check).
    """

    def __init__(self, sink: Sink, on_record: Callable[[RecordJson], None] | None = None):
        self.sink, self.on_record = sink, on_record
        self.count = 0
        self.last_world_history: History | None = None
        #: Each history heard, by id: its group (0 if foreign), forgotten when the history is.
        self._groups: dict[int, int] = {}
        self._lock = threading.Lock()

    def install(self) -> "Recorder":
        History.subscribe(self._heard)
        return self

    def uninstall(self) -> None:
        History.unsubscribe(self._heard)

    def __enter__(self) -> "Recorder":
        return self.install()

    def __exit__(self, *exc: Any) -> None:
        self.uninstall()

    def group_of(self, history: History) -> int | None:
        return self._groups.get(id(history)) or None

    def _heard(self, history: History, record: RecordJson) -> None:
        with self._lock:
            group = self._groups.get(id(history))
            if group is None:
                group = self._groups[id(history)] = self._new_group(history)
                weakref.finalize(history, self._groups.pop, id(history), None)
        if not group:
            return
        self.sink({"t": "rec", "g": group, "r": shortened(record)})
        if self.on_record is not None:
            self.on_record(record)

    def _new_group(self, history: History) -> int:
        world = active.current()
        if world is None or world.history is not history:
            return 0
        self.count += 1
        group = self.count
        self.last_world_history = history
        self.sink({"t": "group", "g": group, "meta": history.meta})
        return group


class MemorySink:
    """Keeps every group's records in memory (``check()`` in a notebook: nothing to hide from)."""

    def __init__(self):
        self.meta: dict[int, dict[str, Any]] = {}
        self.records: dict[int, list[RecordJson]] = {}

    def __call__(self, message: PipeMessage) -> None:
        if message["t"] == "group":
            self.meta[message["g"]], self.records[message["g"]] = message["meta"], []
        else:
            self.records[message["g"]].append(message["r"])

    def history(self, group: int) -> History:
        return History(self.meta[group], self.records[group])

"""The append-only record of everything that happened in one world.

Sources, the Lambda runtime, the AWS gateway and the effect services write to it through
its typed writers; the checker, the timeline plot and the CLI only read it
(Maelstrom's "record, then check"). Each record is a frozen dataclass (``sandbox.core.records``):
``records()`` hands out the records themselves, and the dict reads (``events``, ``of_type``...) hand
out copies in their JSON form, so no reader can rewrite what happened.

Every record has these common fields:

``seq``   position in the history (0, 1, 2, ...)
``t``     virtual seconds since the world opened
``type``  a ``RecordType``

Record types and their own fields (the words come from ``sandbox.vocab``):

``accept``        an order entered the system and is owed effects: ``key`` (orderId),
                  ``expects`` (effect kinds, e.g. ["email"]), ``source``, and ``group`` for
                  an order sent in a FIFO message group (owed its effects in the group's order)
``invoke_start``  ``inv`` ("inv-1"), ``source`` (a ``SourceKind``), ``cause`` (a ``Cause``,
                  or "retry <n>"), ``container``, ``request_id``, ``keys`` (business keys
                  the event carries), ``prev`` (the invocation this one repeats, or None),
                  ``timeout`` (the function's timeout, seconds), ``cold_start: true``
                  when it started a new container, ``restored: true`` when that container
                  was restored from a SnapStart snapshot, ``environment`` ("e1") when the
                  container is one of several processes of a Managed Instances environment
``invoke_end``    ``inv``, ``outcome`` (an ``Outcome``), ``error`` (text or None),
                  ``where`` (the line of the handler's own code that raised, if any), and
                  ``blocked: true`` when the sandbox gave up on an invocation blocked
                  outside it
``aws``           ``inv`` (None for infrastructure such as pollers), ``actor``,
                  ``service``, ``op``, ``target`` (table/queue/stream name), ``key``
                  (item key or message id, as text, or None), ``result`` ("ok", or an
                  error code such as "ConditionalCheckFailed"), ``detail`` (a dict, e.g.
                  {"status": "IN_PROGRESS", "expiresAt": 1700000030})
``effect``        ``inv``, ``kind`` (an ``Effect``), ``key`` (orderId), ``status`` (an
                  ``EffectStatus``), ``detail``
``delivery``      what a delivery source did besides invoking: ``source``, ``what`` (a
                  ``Delivery``), ``keys``, ``inv`` (related invocation or None), ``detail``
``sweep``         the TTL sweeper deleted an item: ``target``, ``key``, ``detail``
``note``          free text for a reader: ``text``
``log``           a line a handler printed or logged: ``inv``, ``stream`` ("stdout",
                  "stderr", or "log" for the logging module), ``text``
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar, cast, overload

from ..vocab import Cause, Delivery, Effect, EffectStatus, LogStream, Outcome, RecordType, SourceKind
from .records import (
    EffectRecord,
    Invocation,
    InvocationJson,
    InvokeEnd,
    InvokeStart,
    Log,
    Record,
    RecordJson,
    from_plain,
    make,
)
from .views import html_of

R = TypeVar("R", bound=Record)

#: Fields whose value must be a word of the vocabulary, per record type.
_CHECKS: dict[str, dict[str, type[StrEnum]]] = {
    RecordType.INVOKE_START: {"source": SourceKind, "cause": Cause},
    RecordType.INVOKE_END: {"outcome": Outcome},
    RecordType.EFFECT: {"kind": Effect, "status": EffectStatus},
    RecordType.DELIVERY: {"what": Delivery},
    RecordType.LOG: {"stream": LogStream},
}


def _copy(value: Any) -> Any:
    """A deep copy of a JSON-like value (much cheaper than ``copy.deepcopy``)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    """A copy with vocabulary members turned into plain strings, so records hold JSON types only."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def _check_words(record: Record) -> None:
    for name, words in _CHECKS.get(record.type, {}).items():
        value = getattr(record, name)
        ok = Cause.valid(value) if words is Cause else value in words._value2member_map_
        if not ok:
            raise ValueError(f"{record.type} record: {name}={value!r} is not a word of the vocabulary "
                             f"({', '.join(words)})")


class History:
    """Append-only list of records plus a ``meta`` dict (seed, scenario, epoch, ...).

    ``History.subscribe(listener)`` hears every record any history appends, as
    ``listener(history, record)`` with a copy of the record, as it is written (the grader keeps
    its own copy of every run this way).
    """

    _listeners: list[Callable[["History", RecordJson], None]] = []

    @classmethod
    def subscribe(cls, listener: Callable[["History", RecordJson], None]) -> None:
        cls._listeners.append(listener)

    @classmethod
    def unsubscribe(cls, listener: Callable[["History", RecordJson], None]) -> None:
        if listener in cls._listeners:
            cls._listeners.remove(listener)

    def __init__(self, meta: dict[str, Any] | None = None, events: Iterable[Mapping[str, Any]] | None = None):
        self._meta: dict[str, Any] = _plain(dict(meta or {}))
        self._events: list[Record] = [from_plain(ev, i) for i, ev in enumerate(events or ())]
        self._lock = threading.Lock()  # real-thread mode: seq numbers stay dense and ordered

    @property
    def meta(self) -> dict[str, Any]:
        """The run's settings: seed, scenario, epoch, table... (a copy)."""
        return _copy(self._meta)

    def starts_at(self, epoch: float) -> None:
        """The run begins at Unix time ``epoch`` (a wall-clock world, once its AWS is ready); before any record."""
        with self._lock:
            if self._events:
                raise ValueError("a history's epoch is set before its first record")
            self._meta["epoch"] = float(epoch)

    # -- writing ---------------------------------------------------------
    def append(self, type: str, t: float, **fields: Any) -> Record:
        """Add one record (prefer the typed writers below); returns it (frozen)."""
        with self._lock:
            record = make(type, len(self._events), t, fields)
            _check_words(record)
            self._events.append(record)
        for listener in History._listeners:
            listener(self, record.as_dict())
        return record

    def accept(self, t: float, *, key: str, expects: list[str], source: str, group: str | None = None) -> None:
        """``group``: the FIFO message group the order was sent in (its orders are owed their effects in order)."""
        self.append(RecordType.ACCEPT, t, key=key, expects=list(expects), source=source, group=group)

    def invoke_start(self, t: float, *, inv: str, source: str, cause: str, container: str | None,
                     request_id: str, keys: list[str], prev: str | None, timeout: float,
                     cold_start: bool = False, restored: bool = False, environment: str | None = None) -> None:
        self.append(RecordType.INVOKE_START, t, inv=inv, source=source, cause=cause, container=container,
                    request_id=request_id, keys=list(keys), prev=prev, timeout=timeout, cold_start=cold_start,
                    restored=restored, environment=environment)

    def invoke_end(self, t: float, *, inv: str, outcome: str, error: str | None, blocked: bool = False,
                   where: str | None = None) -> None:
        self.append(RecordType.INVOKE_END, t, inv=inv, outcome=outcome, error=error, blocked=blocked,
                    where=where or None)

    def aws(self, t: float, *, inv: str | None, actor: str, service: str, op: str, target: str | None,
            key: str | None, result: str, detail: dict) -> None:
        self.append(RecordType.AWS, t, inv=inv, actor=actor, service=service, op=op, target=target, key=key,
                    result=result, detail=detail)

    def effect(self, t: float, *, inv: str | None, kind: str, key: str, status: str, detail: dict) -> None:
        self.append(RecordType.EFFECT, t, inv=inv, kind=kind, key=key, status=status, detail=detail)

    def delivery(self, t: float, *, source: str, what: str, keys: Iterable[str], inv: str | None,
                 detail: dict | None = None) -> None:
        self.append(RecordType.DELIVERY, t, source=source, what=what, keys=list(keys), inv=inv,
                    detail=dict(detail or {}))

    def sweep(self, t: float, *, target: str, key: str, detail: dict) -> None:
        self.append(RecordType.SWEEP, t, target=target, key=key, detail=detail)

    def note(self, t: float, text: str) -> None:
        self.append(RecordType.NOTE, t, text=text)

    def log(self, t: float, *, inv: str, stream: str, text: str) -> None:
        self.append(RecordType.LOG, t, inv=inv, stream=stream, text=text)

    def logs(self, inv: str | None = None) -> list[RecordJson]:
        """The lines handlers printed or logged (one invocation's, or all), in order."""
        return [e.as_dict() for e in self._events if isinstance(e, Log) and (inv is None or e.inv == inv)]

    # -- reading (every read is a copy) -----------------------------------
    def __iter__(self) -> Iterator[RecordJson]:
        """Copies of the records in their JSON form, as ``events`` gives them."""
        return (e.as_dict() for e in self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [e.as_dict() for e in self._events[i]]
        return self._events[i].as_dict()

    @property
    def events(self) -> list[RecordJson]:
        return [e.as_dict() for e in self._events]

    def of_type(self, *types: str) -> list[RecordJson]:
        """Copies of the records of ``types`` in their JSON form (for notebooks and saved files; a reader in the
        sandbox takes the typed records instead, ``records``)."""
        return [e.as_dict() for e in self._events if e.type in types]

    @overload
    def records(self) -> list[Record]: ...

    @overload
    def records(self, *types: type[R]) -> list[R]: ...

    def records(self, *types: type[Any]) -> list[Any]:
        """The typed records themselves, of the record classes ``types`` (all, given none), in order.

        No copy is made: a record is frozen, and its mappings and lists are read-only."""
        wanted: tuple[type, ...] = types or (Record,)
        return [e for e in self._events if isinstance(e, wanted)]

    def invocations(self) -> dict[str, InvocationJson]:
        """inv id -> {start record fields + outcome/error/end}, in JSON form (typed: ``invocation_records``)."""
        out: dict[str, InvocationJson] = {}
        for e in self._events:
            if isinstance(e, InvokeStart):
                out[e.inv] = cast(InvocationJson, {**e.as_dict(), "outcome": None, "error": None, "end": None})
            elif isinstance(e, InvokeEnd) and e.inv in out:
                ended = out[e.inv]
                ended["outcome"], ended["error"], ended["end"] = e.outcome, e.error, e.t
                ended["blocked"], ended["where"] = e.blocked, e.where
        return out

    def invocation_records(self) -> dict[str, Invocation]:
        """inv id -> the invocation its start and end records tell (typed: ``invocations`` gives dicts)."""
        out: dict[str, Invocation] = {}
        for e in self._events:
            if isinstance(e, InvokeStart):
                out[e.inv] = Invocation(e)
            elif isinstance(e, InvokeEnd) and e.inv in out:
                out[e.inv] = Invocation(out[e.inv].start, e)
        return out

    def effects(self, kind: str | None = None) -> list[RecordJson]:
        return [e.as_dict() for e in self._events if isinstance(e, EffectRecord) and (kind is None or e.kind == kind)]

    def end_time(self) -> float:
        return self._events[-1].t if self._events else 0.0

    def since(self, seq: int) -> list[RecordJson]:
        """Copies of the records from position ``seq`` on (what a step just added)."""
        return [e.as_dict() for e in self._events[seq:]]

    # -- persistence -----------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"meta": self.meta, "events": self.events}

    def to_json(self, **kw: Any) -> str:
        kw.setdefault("sort_keys", True)
        return json.dumps({"meta": self._meta, "events": self.events}, **kw)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "History":
        if not isinstance(data, dict) or not isinstance(data.get("events"), list):
            raise ValueError("a history is a JSON object with 'meta' and 'events'")
        meta = data.get("meta")
        return cls(meta if isinstance(meta, dict) else None, data["events"])

    @classmethod
    def from_json(cls, text: str) -> "History":
        return cls.from_dict(json.loads(text))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(indent=1))

    @classmethod
    def load(cls, path: str | Path) -> "History":
        return cls.from_json(Path(path).read_text())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, History) and self._meta == other._meta and self._events == other._events

    def __repr__(self) -> str:
        n = len(self._events)
        return f"History({n} record{'' if n == 1 else 's'}, meta={self._meta!r})"

    def _repr_html_(self) -> str | None:
        return html_of("history", self)

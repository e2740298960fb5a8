"""The append-only record of everything that happened in one world.

Sources, the Lambda runtime, the AWS gateway and the effect services append to it;
the checker, the timeline plot, the grader and the CLI only read it (Maelstrom's
"record, then check").

Every record is a plain dict with these common fields:

``seq``   position in the history (0, 1, 2, ...)
``t``     virtual seconds since the world opened
``type``  one of the record types below

Record types and their own fields:

``accept``        an order entered the system and is owed effects.
                  ``key`` (orderId), ``expects`` (list of effect kinds, e.g. ["email"]),
                  ``source`` (delivery source name)
``invoke_start``  ``inv`` (invocation id, "inv-1"), ``source`` ("sync", "async", "sqs",
                  "stream", "direct"), ``cause`` (see CAUSES), ``container``,
                  ``request_id``, ``keys`` (business keys the event carries),
                  ``prev`` (the invocation this one repeats, or None)
``invoke_end``    ``inv``, ``outcome`` (see OUTCOMES), ``error`` (text or None)
``aws``           ``inv`` (or None for infrastructure such as pollers), ``actor``,
                  ``service``, ``op``, ``target`` (table/queue/stream name), ``key``
                  (the item key or message id, as text, or None), ``result`` ("ok",
                  "ConditionalCheckFailed", or another error code), ``detail`` (dict,
                  e.g. {"status": "IN_PROGRESS", "expiresAt": 1700000030})
``effect``        ``inv``, ``kind`` ("email", "charge"), ``key`` (orderId), ``status``
                  ("done", "deduplicated", "failed", "indefinite"), ``detail``
``delivery``      what a delivery source did besides invoking: ``source``, ``what``
                  ("retry scheduled", "dead-lettered", "deleted", "discarded", ...),
                  ``keys``, ``inv`` (related invocation or None), ``detail``
``sweep``         the TTL sweeper deleted an item: ``target``, ``key``, ``detail``
``note``          free text for a reader: ``text``
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator

OUTCOMES = ("ok", "error", "timeout", "crashed")
CAUSES = (
    "first delivery",
    "retry",  # followed by the attempt number, e.g. "retry 1"
    "redelivery",
    "SDK retry",
    "concurrent duplicate",
    "producer re-send",
    "spontaneous duplicate",
)
RECORD_TYPES = ("accept", "invoke_start", "invoke_end", "aws", "effect", "delivery", "sweep", "note")


class History:
    """Append-only list of records plus a ``meta`` dict (seed, scenario, epoch, ...)."""

    def __init__(self, meta: dict[str, Any] | None = None, events: Iterable[dict] | None = None):
        self.meta: dict[str, Any] = dict(meta or {})
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()  # real-thread mode: seq numbers stay dense and ordered
        for ev in events or ():
            self._events.append(dict(ev))

    # -- writing ---------------------------------------------------------
    def append(self, type: str, t: float, **fields: Any) -> dict[str, Any]:
        if type not in RECORD_TYPES:
            raise ValueError(f"unknown history record type {type!r}; expected one of {RECORD_TYPES}")
        with self._lock:
            record = {"seq": len(self._events), "t": round(float(t), 6), "type": type, **fields}
            self._events.append(record)
        return record

    # -- reading ---------------------------------------------------------
    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, i):
        return self._events[i]

    @property
    def events(self) -> list[dict[str, Any]]:
        """A copy, so readers cannot rewrite what happened."""
        return [dict(e) for e in self._events]

    def of_type(self, *types: str) -> list[dict[str, Any]]:
        return [e for e in self._events if e["type"] in types]

    def invocations(self) -> dict[str, dict[str, Any]]:
        """inv id -> {start record fields + outcome/error/end}."""
        out: dict[str, dict[str, Any]] = {}
        for e in self._events:
            if e["type"] == "invoke_start":
                out[e["inv"]] = {**e, "outcome": None, "error": None, "end": None}
            elif e["type"] == "invoke_end" and e["inv"] in out:
                out[e["inv"]].update(outcome=e["outcome"], error=e.get("error"), end=e["t"])
        return out

    def effects(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self._events if e["type"] == "effect" and (kind is None or e["kind"] == kind)]

    def end_time(self) -> float:
        return self._events[-1]["t"] if self._events else 0.0

    # -- persistence -----------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"meta": self.meta, "events": self._events}

    def to_json(self, **kw: Any) -> str:
        kw.setdefault("sort_keys", True)
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "History":
        if not isinstance(data, dict) or "events" not in data:
            raise ValueError("a history is a JSON object with 'meta' and 'events'")
        for i, ev in enumerate(data["events"]):
            if not isinstance(ev, dict) or ev.get("type") not in RECORD_TYPES or "t" not in ev:
                raise ValueError(f"history record {i} is not a valid record: {ev!r}")
        return cls(data.get("meta"), data["events"])

    @classmethod
    def from_json(cls, text: str) -> "History":
        return cls.from_dict(json.loads(text))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(indent=1))

    @classmethod
    def load(cls, path: str | Path) -> "History":
        return cls.from_json(Path(path).read_text())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, History) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"History({len(self._events)} records, meta={self.meta!r})"

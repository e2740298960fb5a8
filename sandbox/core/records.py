"""The records a history holds, one frozen dataclass per ``RecordType``.

A record is written once, by ``History``'s typed writers (or read from a saved history), and never changes: its
mappings are read-only views and its lists are tuples, so a reader holds the record itself, not a copy, and still
cannot rewrite what happened. ``as_dict`` gives the JSON form the snapshots, the channel and saved files use: the
same fields in the same order as the plain dicts histories held before records were typed, an optional flag left
out where it is unset (``cold_start`` only when true, ``group`` only for a FIFO order).

A saved history is read as the hostile text it may be: a record of an unknown type, a field of the wrong kind or
one no record of its type has is refused, naming the record. A field it leaves out is read as unset (None, or
empty), as hand-written histories in tests and notebooks leave out what they do not need.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Required, TypedDict, cast

from ..vocab import RecordType

#: Fields a record leaves out of its JSON form while they hold their default (written only when they say something).
_OPTIONAL = "optional"


def frozen(value: Any) -> Any:
    """A read-only copy of a JSON-like value: mappings become read-only views, lists tuples."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:  # most values: at once
        return value
    if isinstance(value, str):
        return str(value)  # a vocabulary word (a StrEnum) is kept as the plain text it stands for
    if isinstance(value, (list, tuple)):
        return tuple(frozen(v) for v in value)
    if isinstance(value, (dict, MappingProxyType)) or isinstance(value, Mapping):
        return MappingProxyType({str(k): frozen(v) for k, v in value.items()})
    return value


def thawed(value: Any) -> Any:
    """The plain JSON-like copy of a frozen value: dicts and lists a reader may change freely."""
    kind = type(value)
    if kind is MappingProxyType or kind is dict:
        return {k: thawed(v) for k, v in value.items()}
    if kind is tuple:
        return [thawed(v) for v in value]
    return value


def _no_detail() -> Any:
    """A ``detail`` field's default: an empty, read-only mapping (each record its own)."""
    return dataclasses.field(default_factory=lambda: MappingProxyType({}))


def _optional(default: Any = None) -> Any:
    return dataclasses.field(default=default, metadata={_OPTIONAL: True})


class RecordJson(TypedDict, total=False):
    """A record's JSON form (``Record.as_dict``): the fields of every record class, each key only in the records whose
    class has that field (and an optional one only while set). Readers in the sandbox take the typed records
    themselves (``History.records``); this form is what is saved, sent over a channel and handed to notebooks."""

    seq: Required[int]
    t: Required[float]
    type: Required[str]
    inv: str | None
    key: str | None
    keys: list[str]
    expects: list[str]
    source: str
    group: str | None
    cause: str | None
    container: str | None
    request_id: str | None
    prev: str | None
    timeout: float | None
    cold_start: bool
    restored: bool
    environment: str | None
    outcome: str
    error: str | None
    blocked: bool
    where: str | None
    actor: str
    service: str
    op: str
    target: str | None
    result: str
    kind: str
    status: str
    what: str
    stream: str
    text: str
    detail: dict[str, Any]  # each record kind's own details, by the words of ``vocab``


class InvocationJson(RecordJson, total=False):
    """An invocation in JSON form (``History.invocations``, for notebooks): its start record's fields, with the end
    record's outcome, error, blocked and where, and ``end``, the time it ended (None, as the outcome: not yet)."""

    end: float | None


@dataclass(frozen=True, slots=True)
class Record:
    """What every record has: its position in the history, its virtual time in seconds, and its type."""

    type: ClassVar[RecordType]
    seq: int
    t: float

    def as_dict(self) -> RecordJson:
        """The record as a plain dict (a copy: the caller may change it)."""
        out: dict[str, Any] = {"seq": self.seq, "t": self.t, "type": str(self.type)}
        for name, optional, default in _LAYOUT[type(self)]:
            value = getattr(self, name)
            if optional and value == default:
                continue
            out[name] = thawed(value)
        # The keys are this class's fields, read from the class itself; RecordJson names each (a test holds them).
        return cast(RecordJson, out)

    def get(self, name: str, default: Any = None) -> Any:
        """A field by name, as a dict's ``get`` (for readers that handle every record type alike)."""
        return getattr(self, name, default)


@dataclass(frozen=True, slots=True)
class Accept(Record):
    """An order entered the system and is owed ``expects`` (effect kinds); ``group``: its FIFO message group."""

    type: ClassVar[RecordType] = RecordType.ACCEPT
    key: str = ""
    expects: tuple[str, ...] = ()
    source: str = ""
    group: str | None = _optional()


@dataclass(frozen=True, slots=True)
class InvokeStart(Record):
    """An invocation began: its source, cause, container and the business keys its event carries."""

    type: ClassVar[RecordType] = RecordType.INVOKE_START
    inv: str = ""
    source: str = ""
    cause: str | None = None  # a saved history may hold no cause (the world's own records always name one)
    container: str | None = None
    request_id: str | None = None
    keys: tuple[str, ...] = ()
    prev: str | None = None
    timeout: float | None = None
    cold_start: bool = _optional(False)
    restored: bool = _optional(False)
    environment: str | None = _optional()


@dataclass(frozen=True, slots=True)
class InvokeEnd(Record):
    """An invocation ended: its ``Outcome``, the error's text, and where the handler's own code raised."""

    type: ClassVar[RecordType] = RecordType.INVOKE_END
    inv: str = ""
    outcome: str = ""
    error: str | None = None
    blocked: bool = _optional(False)
    where: str | None = _optional()


@dataclass(frozen=True, slots=True)
class AwsCall(Record):
    """One AWS request and its result (``inv`` None: the world's own, a poller's say)."""

    type: ClassVar[RecordType] = RecordType.AWS
    inv: str | None = None
    actor: str = ""
    service: str = ""
    op: str = ""
    target: str | None = None
    key: str | None = None
    result: str = ""
    detail: Mapping[str, Any] = _no_detail()


@dataclass(frozen=True, slots=True)
class EffectRecord(Record):
    """An email or a charge, or an attempt at one (its ``EffectStatus``)."""

    type: ClassVar[RecordType] = RecordType.EFFECT
    inv: str | None = None
    kind: str = ""
    key: str = ""
    status: str = ""
    detail: Mapping[str, Any] = _no_detail()


@dataclass(frozen=True, slots=True)
class DeliveryRecord(Record):
    """What a delivery source did besides invoking (a ``Delivery``), for which keys."""

    type: ClassVar[RecordType] = RecordType.DELIVERY
    source: str = ""
    what: str = ""
    keys: tuple[str, ...] = ()
    inv: str | None = None
    detail: Mapping[str, Any] = _no_detail()


@dataclass(frozen=True, slots=True)
class Sweep(Record):
    """The TTL sweeper deleted an item."""

    type: ClassVar[RecordType] = RecordType.SWEEP
    target: str = ""
    key: str = ""
    detail: Mapping[str, Any] = _no_detail()


@dataclass(frozen=True, slots=True)
class Note(Record):
    """Free text for a reader."""

    type: ClassVar[RecordType] = RecordType.NOTE
    text: str = ""


@dataclass(frozen=True, slots=True)
class Log(Record):
    """A line a handler printed or logged, as CloudWatch Logs would keep it."""

    type: ClassVar[RecordType] = RecordType.LOG
    inv: str | None = None
    stream: str = ""
    text: str = ""


RECORD_CLASSES: dict[str, type[Record]] = {str(c.type): c for c in (
    Accept, InvokeStart, InvokeEnd, AwsCall, EffectRecord, DeliveryRecord, Sweep, Note, Log)}
_FIELDS: dict[type[Record], dict[str, dataclasses.Field]] = {
    c: {f.name: f for f in dataclasses.fields(c)} for c in RECORD_CLASSES.values()}
#: Each class's own fields in order: name, whether it is left out while unset, and its default.
_LAYOUT: dict[type[Record], list[tuple[str, bool, Any]]] = {
    c: [(f.name, bool(f.metadata.get(_OPTIONAL)), f.default) for f in dataclasses.fields(c)[2:]]
    for c in RECORD_CLASSES.values()}


def _kind_check(annotation: str) -> Callable[[Any], bool]:
    """Whether a value read from JSON fits a field declared ``annotation`` (the annotation's text)."""
    none = "None" in annotation
    if annotation.startswith("bool"):
        return lambda v: isinstance(v, bool) or (none and v is None)
    if annotation.startswith(("int", "float")):
        return lambda v: (isinstance(v, (int, float)) and not isinstance(v, bool)) or (none and v is None)
    if annotation.startswith("str"):
        return lambda v: isinstance(v, str) or (none and v is None)
    if annotation.startswith("tuple"):
        return lambda v: isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v)
    return lambda v: isinstance(v, Mapping)


#: Each class's field name -> the check of a value for it.
_CHECKS: dict[type[Record], dict[str, Callable[[Any], bool]]] = {
    c: {name: _kind_check(str(f.type)) for name, f in fields.items()} for c, fields in _FIELDS.items()}
_TIME = _kind_check("float")


def make(type_: Any, seq: int, t: float, fields: Mapping[str, Any]) -> Record:
    """A record of ``type_`` (a ``RecordType``'s word) from its fields: ``ValueError`` naming what is wrong (the type,
    a field, its kind)."""
    cls = RECORD_CLASSES.get(type_) if isinstance(type_, str) else None
    if cls is None:
        raise ValueError(f"unknown history record type {type_!r}; expected one of {tuple(RecordType)}")
    checks = _CHECKS[cls]
    for name, value in fields.items():
        check = checks.get(name)
        if check is None or name in ("seq", "t"):
            raise ValueError(f"a {type_} record has no field {name!r} (its fields: {', '.join(list(checks)[2:])})")
        if not check(value):
            raise ValueError(f"a {type_} record's {name} is {value!r}, not a {_FIELDS[cls][name].type}")
    return cls(seq, round(float(t), 6), **{name: frozen(value) for name, value in fields.items()})


def from_plain(record: Any, position: int) -> Record:
    """A record read from a saved history's JSON (``position``: where, for the error)."""
    if not isinstance(record, Mapping) or "t" not in record:
        raise ValueError(f"history record {position} is not a valid record: {record!r}")
    t, seq = record["t"], record.get("seq", position)
    if not _TIME(t) or t is None or not isinstance(seq, int) or isinstance(seq, bool):
        raise ValueError(f"history record {position} has a bad time or position: {record!r}")
    fields = {k: v for k, v in record.items() if k not in ("seq", "t", "type")}
    try:
        return make(record.get("type"), seq, t, fields)
    except ValueError as exc:
        raise ValueError(f"history record {position} is not a valid record: {exc}") from None


@dataclass(frozen=True, slots=True)
class Invocation:
    """One invocation as its two records tell it: how it began, and how it ended (None: it had not, yet)."""

    start: InvokeStart
    end: InvokeEnd | None = None

    @property
    def id(self) -> str:
        return self.start.inv

    @property
    def t(self) -> float:
        """When it started."""
        return self.start.t

    @property
    def ended_at(self) -> float | None:
        return self.end.t if self.end is not None else None

    @property
    def outcome(self) -> str | None:
        return self.end.outcome if self.end is not None else None

    @property
    def error(self) -> str | None:
        return self.end.error if self.end is not None else None

    @property
    def blocked(self) -> bool:
        return self.end is not None and self.end.blocked

    @property
    def where(self) -> str | None:
        return self.end.where if self.end is not None else None

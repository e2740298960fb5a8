"""The words on the timeline: order keys, ordinals, outcomes and the short notes.

Pure string functions, no matplotlib: what a lane's subtitle, its outcome column,
a duplicate's note or a record-kept note says. The drawing modules only place them.
Times and durations are formatted in ``timefmt.py``.
"""
from __future__ import annotations

import re
import textwrap

from ...vocab import Outcome, SourceKind
from .model import Invocation, Window, WindowKind
from .timefmt import duration

# an outcome reads as its own name, except a timeout; None: no invoke_end yet
OUTCOME_WORDS: dict[str | None, str] = {**{o: o.value for o in Outcome}, Outcome.TIMEOUT: "timed out",
                                        None: "still running"}
MESSAGE_CHARS = 28  # an error or batch-failure message under the outcome is wrapped at this many characters ...
MESSAGE_LINES = 2  # ... onto at most this many lines (after the exception's class, on a line of its own)
HEADING_CHARS = 18  # a source's name longer than this is broken in two, before its "(...)"


def ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


_ERROR_CLASS = re.compile(r"([A-Za-z_][\w.]*(?:Error|Exception|Timeout|Fault)):\s*(.*)")
_TABLE_KEY = re.compile(r"\b[\w.-]+#([\w.-]+)")  # "order-confirmation#o-1" in an error message
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_DIGEST = re.compile(r"[0-9a-f]{16,}", re.IGNORECASE)


def short_key(key: str) -> str:
    """"order-confirmation#o-1" -> "o-1"; a UUID (a client's Idempotency-Key, say) or a hash (Powertools' key, an
    MD5 of the payload) -> its first 8 digits and "…"."""
    last = key.rsplit("#", 1)[-1] or key
    return f"{last[:8]}…" if _UUID.fullmatch(last) or _DIGEST.fullmatch(last) else last


def halves(text: str) -> str:
    """``text`` on two lines, broken at the space nearest its middle (itself when it has no space)."""
    spaces = [i for i, ch in enumerate(text) if ch == " "]
    if not spaces:
        return text
    mid = min(spaces, key=lambda i: abs(i - len(text) / 2))
    return f"{text[:mid]}\n{text[mid + 1:]}"


def strip_needs_key(keys: list[str], orders: list[str]) -> bool:
    """Whether a lane's strips need their keys written beside them: not for one strip whose key is the lane's only
    order, which the lane's subtitle names already ("container c1 · o-1")."""
    return not (len(keys) == 1 and [short_key(keys[0])] == list(orders))


def keys_text(keys: list[str], limit: int = 4) -> str:
    """"o-1, o-2, o-3", or "o-1, o-2 … o-8 (8)" when there are many."""
    ks = list(dict.fromkeys(short_key(k) for k in keys))
    if len(ks) <= limit:
        return ", ".join(ks)
    return f"{ks[0]}, {ks[1]} … {ks[-1]} ({len(ks)})"


def shard_text(shard: str) -> str:
    m = re.fullmatch(r"shardId-0*(\d+)", shard)
    return f"shard {m.group(1)}" if m else shard


def lane_sub(rec: Invocation) -> str | None:
    """The line under a lane's name: its container, shard and the orders its event carried."""
    parts = []
    if rec.container:
        name = rec.container.rsplit('/', 1)[-1] or rec.container
        # Every function's first container starts cold; a later one is news (a reset, or scaling out).
        if rec.environment:
            parts.append(f"container {name} in environment {rec.environment}")
        elif rec.restored:
            parts.append(f"container {name} restored from the snapshot")
        else:
            parts.append(f"new container {name}" if rec.cold_start and name != "c1" else f"container {name}")
    if rec.shard:
        parts.append(shard_text(rec.shard))
    if rec.keys:
        parts.append(keys_text(rec.keys))
    return " · ".join(parts) or None


def outcome_text(rec: Invocation) -> tuple[str, list[str]]:
    """(outcome in words, the lines under it) for the right-hand column: an error's class and its
    message, or the items a partial batch response named."""
    if rec.outcome is None:
        return "… still running", []
    dur = duration(rec.end - rec.start) if rec.end is not None else ""
    mark = "✓" if rec.outcome == Outcome.OK else "✗"
    what = OUTCOME_WORDS[rec.outcome]
    if rec.outcome == Outcome.OK and rec.status_code is not None:
        what += f" · {rec.status_code}"
    text = f"{mark} {what}" + (f" after {dur}" if dur else "")
    if rec.outcome == Outcome.OK and rec.failed_items:  # ok, but some items failed
        return text, failed_items_lines(rec)
    if rec.outcome != Outcome.OK and rec.error and rec.error.strip():
        return text, error_lines(rec.error)
    return text, []


def failed_items_lines(rec: Invocation) -> list[str]:
    """The records a partial batch response named, as records of orders (["batchItemFailures:", "o-3's message"]):
    the response names a record by its messageId (or sequence number), never by the order it carries."""
    unit = "message" if rec.source == SourceKind.SQS else "record"
    keys = list(dict.fromkeys(rec.failed_items))
    if len(keys) == 1:
        return ["batchItemFailures:", f"{short_key(keys[0])}'s {unit}"]
    return ["batchItemFailures:", f"{unit}s of {keys_text(keys, limit=3)}"]


def error_lines(error: str) -> list[str]:
    """"StillInProgressError: order-confirmation#o-1 is being processed by another invocation" ->
    ["StillInProgressError:", "o-1 is being processed by", "another invocation"]: the class on a line of
    its own, then the message with its table keys shortened, wrapped, and cut only when very long."""
    first = error.strip().splitlines()[0]
    m = _ERROR_CLASS.fullmatch(first)
    head, message = (m.group(1) + ":", m.group(2)) if m else (None, first)
    message = _TABLE_KEY.sub(lambda k: short_key(k.group(0)), message)
    return ([head] if head else []) + _balanced(message)


def _balanced(message: str) -> list[str]:
    """``message`` wrapped at MESSAGE_CHARS onto at most MESSAGE_LINES lines, the lines made about equally long
    (no lone word on a line of its own: "Task timed out after 3.00" / "seconds")."""
    if not message:
        return []
    lines = textwrap.wrap(message, MESSAGE_CHARS, max_lines=MESSAGE_LINES, placeholder=" …")
    if len(lines) < 2 or lines[-1].endswith("…"):
        return lines
    for width in range(-(-len(message) // len(lines)), MESSAGE_CHARS):
        even = textwrap.wrap(message, width)
        if len(even) == len(lines):
            return even
    return lines


def heading_text(label: str) -> str:
    """A source's name on its header row: "Synchronous caller (SDK retries)" -> two lines, before the "("."""
    if len(label) <= HEADING_CHARS or " (" not in label:
        return label
    name, rest = label.split(" (", 1)
    return f"{name}\n({rest}"


def dup_text(texts: list[str]) -> str:
    """["2nd email o-1", "2nd email o-2", "3rd email o-1", "3rd email o-2"] -> "2nd & 3rd email o-1, o-2"."""
    per_key: dict[tuple[str, str], list[str]] = {}  # (kind, key) -> ordinals
    for text in texts:
        nth, kind, key = (text.split(" ", 2) + ["", ""])[:3]
        per_key.setdefault((kind, short_key(key)), []).append(nth)
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (kind, key), ordinals in per_key.items():
        grouped.setdefault((kind, tuple(ordinals)), []).append(key)
    return "; ".join(f"{' & '.join(ordinals)} {kind} {', '.join(keys)}"
                     for (kind, ordinals), keys in grouped.items())


def note_what(w: Window) -> str:
    """How long a record is kept or locked: "kept 24 h", "locked, no expiry"."""
    if w.expires is None:
        return "kept, no TTL" if w.kind == WindowKind.KEPT else "locked, no expiry"
    return f"{'kept' if w.kind == WindowKind.KEPT else 'locked'} {duration(w.expires - w.start)}"


def note_text(keys: list[str], what: str, runs_on: bool = True) -> str:
    """The note for windows that outlive the history: "o-1 kept 24 h →" (without the arrow where the window ends
    inside the figure: ``runs_on`` False)."""
    short = [short_key(k) for k in keys]  # "order-confirmation#o-1" -> "o-1"
    if len(set(short)) == len(short):
        keys = short
    shown = ", ".join(keys[:3]) + (f" +{len(keys) - 3} more" if len(keys) > 3 else "")
    return f"{shown} {what}" + (" →" if runs_on else "")

"""The words on the timeline: durations, order keys, ordinals and the short notes.

Pure string functions, no matplotlib: what a lane's subtitle, its outcome column,
a duplicate's note or a record-kept note says. The drawing modules only place them.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Invocation, Window

OUTCOME_WORDS = {
    "ok": "ok",
    "error": "error",
    "timeout": "timed out",
    "crashed": "crashed",
    None: "still running",
}


def human(sec: float) -> str:
    """A short duration: 0.25 s, 4.5 s, 30 s, 2 min, 24 h, 3 d."""
    sec = abs(sec)

    def one(v: float) -> str:
        s = f"{v:.1f}"
        return s[:-2] if s.endswith(".0") else s

    if sec < 0.001:
        return "0 s"
    if sec < 1:
        return f"{sec:.2g} s"
    if sec < 10:
        return f"{one(sec)} s"
    if sec < 120:
        return f"{sec:.0f} s"
    if sec < 7200:
        return f"{one(sec / 60)} min"
    if sec < 72 * 3600:
        return f"{one(sec / 3600)} h"
    return f"{one(sec / 86400)} d"


def ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th') }"


def short_key(key: str) -> str:
    """"order-confirmation#o-1" -> "o-1"."""
    return key.rsplit("#", 1)[-1] or key


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
        parts.append(f"container {rec.container.rsplit('/', 1)[-1] or rec.container}")
    if rec.shard:
        parts.append(shard_text(rec.shard))
    if rec.keys:
        parts.append(keys_text(rec.keys))
    return " · ".join(parts) or None


def outcome_text(rec: Invocation) -> tuple[str, str | None]:
    """(outcome in words, second line or None) for the right-hand column."""
    if rec.outcome is None:
        return "… still running", None
    dur = human(rec.end - rec.start) if rec.end is not None else ""
    mark = "✓" if rec.outcome == "ok" else "✗"
    what = OUTCOME_WORDS[rec.outcome]
    msg = None
    if rec.outcome == "ok" and rec.status_code is not None:
        what += f" · {rec.status_code}"
    text = f"{mark} {what}" + (f" after {dur}" if dur else "")
    if rec.outcome == "ok" and rec.failed_items:  # "✓ ok after 0.6 s · 1 item failed"
        n = len(rec.failed_items)
        text += f" · {n} item{'s' if n != 1 else ''} failed"
        msg = f"batchItemFailures: {keys_text(rec.failed_items)}"
    if rec.outcome != "ok" and rec.error and rec.error.strip():
        msg = rec.error.strip().splitlines()[0]
    if msg is not None and len(msg) > 30:
        msg = msg[:29] + "…"
    return text, msg


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
        return "kept, no TTL" if w.kind == "kept" else "locked, no expiry"
    return f"{'kept' if w.kind == 'kept' else 'locked'} {human(w.expires - w.start)}"


def note_text(keys: list[str], what: str) -> str:
    """The note for windows that outlive the history: "o-1 kept 24 h →"."""
    short = [short_key(k) for k in keys]  # "order-confirmation#o-1" -> "o-1"
    if len(set(short)) == len(short):
        keys = short
    shown = ", ".join(keys[:3]) + (f" +{len(keys) - 3} more" if len(keys) > 3 else "")
    return f"{shown} {what} →"

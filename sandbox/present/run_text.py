"""A run in plain text: its timeline as lines, and the one command that replays it.

The command line (``python -m sandbox run ... --policy exhaustive``) and the exercises' feedback
(``sandbox.grading``) both print these, so the shell and the notebook point at the same
counterexample in the same words.
"""
from __future__ import annotations

import shlex
from typing import Any

from ..core.history import History
from ..core.records import AwsCall, DeliveryRecord, EffectRecord, InvokeEnd, InvokeStart, Record
from ..vocab import EffectStatus

#: How a replay command names the CLI (what the README tells people to type).
PROGRAM = "python -m sandbox"
TIMELINE_LINES = 40


def _setting_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def replay_command(handler: str, *, scenario: str | None = None, settings: dict[str, Any] | None = None,
                   seed: int | None = None, script: list[str] | None = None, drill: str | None = None) -> str:
    """The one command that replays a run: the CLI's own ``--script`` form for a schedule."""
    if drill is not None:
        words = ["python", "-m", "sandbox.grading", "drill", drill, "--handler", handler]
        return shlex.join(words + (["--seed", str(seed)] if seed else []))
    words = [*PROGRAM.split(), "run", str(scenario), "--handler", handler]
    if seed:
        words += ["--seed", str(seed)]
    for key, value in (settings or {}).items():
        words += ["--set", f"{key}={_setting_text(value)}"]
    if script:
        words += ["--script", ",".join(script)]
    return shlex.join(words)


def _aws_text(e: AwsCall) -> str:
    detail = e.detail
    what = f"DynamoDB {e.op} {e.key or ''}".rstrip()
    if detail.get("condition"):
        what += f" if {detail['condition']}"
    if e.op == "GetItem":
        found = "found" if detail.get("found") else "not found"
        if detail.get("status"):
            found += f" ({detail['status']})"
        return f"{what}: {found}" + (" [an eventually consistent read, stale]" if detail.get("stale") else "")
    if detail.get("status"):
        what += f" status={detail['status']}"
    return f"{what}: {e.result}"


def _line(e: Record, seen: dict[tuple[str, str], int]) -> str | None:
    if isinstance(e, InvokeStart):
        return (f"start ({e.source}, {e.cause}; carries {', '.join(e.keys) or 'no order'}) "
                f"in container {str(e.container or '-').rsplit('/', 1)[-1]}")
    if isinstance(e, InvokeEnd):
        return f"end: {e.outcome}" + (f" ({e.error})" if e.error else "")
    if isinstance(e, AwsCall) and e.service == "dynamodb" and e.inv:
        return _aws_text(e)
    if isinstance(e, EffectRecord):
        n = seen[(e.kind, e.key)] = seen.get((e.kind, e.key), 0) + EffectStatus(e.status).counted
        extra = f"  <-- {_ordinal(n)} {e.kind} for {e.key}" if n > 1 else ""
        return f"{e.kind} {e.key}: {e.status}{extra}"
    if isinstance(e, DeliveryRecord):
        return f"{e.source} {e.what}" + (f": {carried}" if (carried := _carried(e)) else "")
    return None


def _carried(e: DeliveryRecord) -> str:
    """What a delivery carried: its orders, or the messages of no order (a poison message, by its id's start)."""
    if e.keys:
        return ", ".join(e.keys)
    ids = e.detail.get("messageIds") or []
    return ", ".join(f"message {str(m)[:8]}…" for m in ids)


def _ordinal(n: int) -> str:
    return {2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def text_timeline(history: History, limit: int = TIMELINE_LINES) -> str:
    """The run as lines of ``time  who  what``: invocations, table calls, effects, deliveries."""
    seen: dict[tuple[str, str], int] = {}
    lines = []
    for e in history.records():
        text = _line(e, seen)
        if text is not None:
            who = e.get("inv") or e.get("source") or ""
            if isinstance(e, DeliveryRecord) and who == e.source:
                text = text.removeprefix(f"{who} ")  # a source's own line names it once, in the "who" column
            lines.append(f"{_time(e.t):>10}  {who:<7} {text}")
    if len(lines) > limit:
        lines = lines[:limit] + [f"{'':>10}  ... and {len(lines) - limit} more lines"]
    return "\n".join(lines)


def _time(t: float) -> str:
    """A line's time: seconds to the millisecond, then on a clock as the timeline's ticks read ("2:00.5",
    "2:05:00"), so that two events a second apart never print the same."""
    from .timeline.timefmt import HOURS, MINUTES, tick_label

    if t < 120:
        return f"{t:.3f} s"
    return tick_label(t, 1, MINUTES) if t < 3600 else tick_label(t, 0, HOURS)

"""Reading one field of a history record without trusting it.

A history may come from JSON someone edited, so every field is checked for its type
and a malformed value reads as "absent" instead of breaking the plot.
"""
from __future__ import annotations

import math
from typing import Any


def number(v: Any) -> float | None:
    """A finite int or float as float; anything else (bools, NaN, text) is None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    return None


def text(v: Any) -> str:
    return "" if v is None else str(v)


def optional_text(v: Any) -> str | None:
    """``str(v)``, or None when ``v`` is None."""
    return None if v is None else str(v)


def truthy_text(v: Any) -> Any:
    """``str(v)`` for a truthy ``v``; a falsy one (None, "", 0) is kept as it is."""
    return v and str(v)


def str_list(v: Any) -> list[str]:
    if not isinstance(v, (list, tuple)):
        return []
    return [str(x) for x in v if x is not None]


def detail(r: dict) -> dict:
    """A record's ``detail`` dict, or an empty one."""
    return r.get("detail") if isinstance(r.get("detail"), dict) else {}

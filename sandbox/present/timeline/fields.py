"""Reading a value of a history record without trusting it.

A history's records are typed (``sandbox.core.records``), so their own fields have their kinds; what is left to
check is a time that is not a finite number, and the values of a ``detail``, free JSON that a history may hold
in any shape (it may come from JSON someone edited): a malformed value reads as "absent" instead of breaking the
plot.
"""
from __future__ import annotations

import math
from typing import Any

from ...core.records import AwsCall, DeliveryRecord, EffectRecord, Sweep, thawed


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


def str_list(v: Any) -> list[str]:
    if not isinstance(v, (list, tuple)):
        return []
    return [str(x) for x in v if x is not None]


def detail(r: AwsCall | DeliveryRecord | EffectRecord | Sweep) -> dict[str, Any]:
    """A record's ``detail`` as a plain dict, in its JSON form: a detail is free JSON, and its readers test its values'
    kinds (a list, a dict) and print them as JSON has them, not as the record's read-only copy holds them."""
    return thawed(r.detail)

"""Which world is open in this process, for code that has no world to hand.

A learner's handler calls ``send_confirmation_email(order)`` or ``time.sleep(1)`` and
builds boto3 clients with no reference to the sandbox; those reach the open world through
here. At most one world is open at a time: moto's backends are process-global.
"""
from __future__ import annotations

from typing import Any

_world: Any = None


def current() -> Any:
    """The open world, or None."""
    return _world


def set_current(world: Any) -> None:
    global _world
    _world = world

"""The rules that judge a history, a module each: those every history is judged by (``exactly_once``,
``record_notes``), and each source's own (``fifo``, ``batch_response``), which name the source kinds they judge.

A new source's contract gets a module here naming its kind, and a place in ``JUDGES``; the checker is untouched.
"""
from __future__ import annotations

from ..judges import Judges
from .batch_response import BATCH_RESPONSE
from .exactly_once import ABANDONED, EXACTLY_ONCE
from .fifo import FIFO_ORDER
from .record_notes import RECORD_NOTES

#: Every rule the checker knows. Their places (10, 20... 90) leave room: a new rule's findings can stand between
#: any two without moving theirs, so every verdict that does not reach the new rule reads as before.
JUDGES = Judges((EXACTLY_ONCE, ABANDONED, FIFO_ORDER, BATCH_RESPONSE, RECORD_NOTES))

"""The checker: reads a history, gives a verdict in Maelstrom's terms, and explains it.

- ``valid``: every accepted order got each effect it is owed exactly once.
- ``invalid``: some effect happened twice or more (a duplicate), an accepted order never
  got an effect it is owed (lost), an effect happened for an order nobody accepted, the
  orders of a FIFO message group were handled out of the order they were sent in, or a
  handler answered a batch with a partial batch response Lambda could not read (one naming
  a record the batch did not hold, say), so Lambda failed the whole batch: a broken contract
  with the event source, whether or not the redelivery it caused repeated anything.
- ``unknown``: nothing is wrong yet, but the history cannot say: an order is still in
  flight when the run stopped, or an invocation was abandoned while blocked.

It reads only the history, so it judges a live run, a saved JSON file or a hand-built
history the same way, and it decides from record fields alone, never from message text.

The verdict composes rules (``judges.py``, ``rules/``): those every history is judged by, and those of the
source kinds its records name (a FIFO queue's order, a batch source's partial batch responses).
"""
from __future__ import annotations

from ..core.history import History
from ..vocab import FindingKind, Status
from .facts import Facts
from .findings import Finding, Verdict
from .judges import Judges
from .rules import JUDGES

__all__ = ["Finding", "Verdict", "check"]


def check(history: History, judges: Judges = JUDGES) -> Verdict:
    """The verdict on ``history``, by the rules of ``judges`` that judge the source kinds it names."""
    facts = Facts(history)
    findings = [finding for rule in judges.of(facts.sources) for finding in rule(facts)]
    if any(FindingKind(f.kind).breaks for f in findings):
        status = Status.INVALID
    elif any(not FindingKind(f.kind).note for f in findings):
        status = Status.UNKNOWN
    else:
        status = Status.VALID
    return Verdict(status, findings, facts.effects_per_key)

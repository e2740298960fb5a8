"""SQS FIFO queues: the orders of one message group are handled in the order they were sent in.

The rule reads the group each order was sent in from its ``accept`` record (only a FIFO queue's producer
writes one).
"""
from __future__ import annotations

from collections import defaultdict

from ...core.records import Accept
from ...vocab import FindingKind, SourceKind
from ..facts import Facts, fmt
from ..findings import Finding
from ..judges import Rule

DOC_FIFO_ORDER = "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html"


def groups(facts: Facts) -> dict[str, list[str]]:
    """FIFO message group -> its orders, as sent."""
    found: dict[str, list[str]] = defaultdict(list)
    for e in facts.records:
        if isinstance(e, Accept) and e.group is not None and e.key not in found[e.group]:
            found[e.group].append(e.key)
    return found


def out_of_order(facts: Facts) -> list[Finding]:
    """A FIFO message group whose orders got their first effect out of the order they were sent in.

    AWS: with a FIFO queue the function "should stop processing messages after the first failure and
    return all failed and unprocessed messages" (DOC_FIFO_ORDER), so the group's order holds.
    """
    findings = []
    for group, keys in sorted(groups(facts).items()):
        firsts = {k: min((e for (_, key), done in facts.effects.items() if key == k for e in done),
                         key=lambda e: e.seq, default=None) for k in keys}
        first = {k: e for k, e in firsts.items() if e is not None}  # the orders that got an effect
        for i, key in enumerate(keys):
            if key not in first:
                continue
            earlier = [k for k in keys[i + 1:] if k in first and first[k].seq < first[key].seq]
            if earlier:
                later = ", ".join(earlier)
                text = (f"{key}: its first {first[key].kind} came at {fmt(first[key].t)}, after those of "
                        f"{later}, which were sent after it in FIFO message group {group}. A FIFO queue keeps a "
                        f"group in order only if the function stops at its first failure and returns that message "
                        f"and every one after it ({DOC_FIFO_ORDER})")
                findings.append(Finding(FindingKind.OUT_OF_ORDER, key, first[key].kind, text,
                                        [first[key].inv] + [first[k].inv for k in earlier]))
                break  # one finding per group: its first order handled late
    return findings


FIFO_ORDER = Rule("FIFO order", 30, out_of_order, frozenset({SourceKind.SQS}))

"""Partial batch responses (SQS, Kinesis and DynamoDB streams, Kafka): a handler that answers a batch with one
Lambda cannot read breaks its contract with the event source, since Lambda then fails the whole batch, whether or
not the redelivery repeats anything.

The rule reads the sources' ``batch failed`` records whose ``badResponse`` says why Lambda could not read it.
"""
from __future__ import annotations

from ...core.records import DeliveryRecord
from ...vocab import BadBatchResponse, Delivery, FindingKind, SourceKind
from ..facts import Facts, fmt
from ..findings import Finding
from ..judges import Rule
from .fifo import DOC_FIFO_ORDER

#: AWS's list of the partial batch responses that fail a whole batch ("Success and failure conditions"), on the
#: same page as the FIFO rule's.
DOC_BATCH_RESPONSE = DOC_FIFO_ORDER + "#services-sqs-batchfailurereporting"
DOC_STREAM_BATCH_RESPONSE = "https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html"


def bad_responses(facts: Facts) -> list[DeliveryRecord]:
    """The "batch failed" records of a response Lambda could not read."""
    return [e for e in facts.records if isinstance(e, DeliveryRecord) and e.what == Delivery.BATCH_FAILED
            and e.detail.get("badResponse") in set(BadBatchResponse)]


def bad_batch_responses(facts: Facts) -> list[Finding]:
    """Each invocation whose partial batch response Lambda could not read, so it failed the whole batch.

    The handler returned normally and meant to report some records; what it returned failed every record
    instead, those it had handled included (DOC_BATCH_RESPONSE). One finding per invocation.
    """
    findings, seen = [], set()
    for d in bad_responses(facts):
        inv = d.inv
        if inv in seen:
            continue
        seen.add(inv)
        keys = list(d.keys)
        carried = f"its batch (carrying {', '.join(keys)})" if keys else "its batch"
        text = (f"{inv} ended ok but returned {_said(d)}, so Lambda failed {carried} as a whole at {fmt(d.t)}: "
                f"every record came back, any already handled included. {_rule(d)}")
        findings.append(Finding(FindingKind.BAD_BATCH_RESPONSE, ",".join(keys) or str(inv), None, text, [inv]))
    return findings


def _said(d: DeliveryRecord) -> str:
    """What the handler returned, in words."""
    detail = d.detail
    fault = detail["badResponse"]
    if fault == BadBatchResponse.UNKNOWN_IDENTIFIER:
        return (f"a batchItemFailures entry naming {detail.get('itemIdentifier')!r}, which is not the "
                f"{_id_name(d)} of any record in the batch")
    if fault == BadBatchResponse.NO_IDENTIFIER:
        return "a batchItemFailures entry without an itemIdentifier"
    return "a batchItemFailures that is not a list"


def _rule(d: DeliveryRecord) -> str:
    """AWS's rule the response broke, as the source's page words it."""
    if _id_name(d) == "messageId":
        return (f"An entry that names no record of the batch, or none at all, fails the whole batch "
                f"({DOC_BATCH_RESPONSE})")
    # a stream: AWS lists empty and null identifiers; an unknown one is the sandbox's reading (shards.py)
    return (f"An entry without an identifier fails the whole batch ({DOC_STREAM_BATCH_RESPONSE}); the "
            f"sandbox treats one naming no record of the batch the same")


def _id_name(d: DeliveryRecord) -> str:
    """What a batch's records are named by, as its source's partial batch response names them."""
    return "messageId" if d.detail.get("messageIds") is not None else "sequence number"


BATCH_RESPONSE = Rule("partial batch responses", 40, bad_batch_responses,
                      frozenset({SourceKind.SQS, SourceKind.STREAM, SourceKind.DDB_STREAM, SourceKind.KAFKA}))

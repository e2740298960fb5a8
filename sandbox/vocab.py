"""The sandbox's vocabulary: every word a history record may hold, in one place.

The runtime, the sources, the gateway, the services, the checker and the timeline all
import these names; no other module spells them. They are ``StrEnum`` members, so a
record holds plain strings (its JSON is unchanged) while code compares against names.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class RecordType(StrEnum):
    """What a history record is about."""

    ACCEPT = "accept"  # an order entered the system and is owed effects
    INVOKE_START = "invoke_start"
    INVOKE_END = "invoke_end"
    AWS = "aws"  # one AWS request and its result
    EFFECT = "effect"  # an email or a charge, or an attempt at one
    DELIVERY = "delivery"  # what a delivery source did besides invoking
    SWEEP = "sweep"  # the TTL sweeper deleted an item
    NOTE = "note"  # free text for a reader
    LOG = "log"  # a line the handler printed or logged, as CloudWatch Logs would keep it


class LogStream(StrEnum):
    """Where a line of a handler's log came from."""

    STDOUT = "stdout"  # print
    STDERR = "stderr"
    LOG = "log"  # the logging module, through Lambda's root handler


class Outcome(StrEnum):
    """How an invocation ended."""

    OK = "ok"
    ERROR = "error"  # the handler raised (or its cold start did)
    TIMEOUT = "timeout"  # Lambda stopped it at its deadline
    CRASHED = "crashed"  # the execution environment died

    @property
    def failed(self) -> bool:
        """Every outcome but ok is a function error to the source that invoked."""
        return self is not Outcome.OK


#: Outcomes a source treats as a function error.
FAILED_OUTCOMES = frozenset(o for o in Outcome if o.failed)


class Cause(StrEnum):
    """Why an invocation happened. A source's own retries are ``retry <n>`` (see ``retry``)."""

    FIRST_DELIVERY = "first delivery"
    RETRY = "retry"
    REDELIVERY = "redelivery"
    SDK_RETRY = "SDK retry"
    CONCURRENT_DUPLICATE = "concurrent duplicate"
    PRODUCER_RESEND = "producer re-send"
    SPONTANEOUS_DUPLICATE = "spontaneous duplicate"
    REDRIVE = "DLQ redrive"  # a message moved back from a dead-letter queue (StartMessageMoveTask)
    CLIENT_RETRY = "client retry"  # an HTTP client sent its request again (a new API Gateway request)
    TTL_DELETION = "TTL deletion"  # a stream batch carrying DynamoDB's own TTL deletes
    #: A service handed the same event to Lambda again because it never heard that Lambda had accepted it
    #: (SNS's delivery retry after a lost answer): a new async invocation, not Lambda's own retry.
    DELIVERY_RETRY = "delivery retry"
    #: A caller's SDK sent an async Invoke again after Lambda had queued the first (its 202 was lost):
    #: Lambda queued a second event, with its own request id.
    CALLER_RESEND = "caller re-send"
    #: A stream mapping split a failed batch and sent one half on its own (BisectBatchOnFunctionError): a repeat
    #: of the records in it, but no retry, since a split uses none of MaximumRetryAttempts.
    BISECT_HALF = "bisect half"
    #: CloudFormation rolled a failed stack operation back and sent the custom resource a Delete: a new event,
    #: carrying the resource's properties again.
    ROLLBACK_DELETE = "rollback delete"
    #: Lambda invoked a durable function again for the same execution (after a suspension or a failed
    #: invocation): the SDK replays the checkpointed operations, and code outside steps runs again.
    REPLAY = "durable replay"
    #: A Kafka mapping read records another mapping had written to its dead-letter topic (a Kafka on-failure
    #: destination): the failed batch's records again, at new offsets of another topic.
    DEAD_LETTER_TOPIC = "dead-letter topic"

    @staticmethod
    def retry(n: int) -> str:
        """The cause of a source's n-th retry of the same event or batch: ``retry 1``, ``retry 2``..."""
        return f"{Cause.RETRY} {int(n)}"

    @staticmethod
    def valid(text: object) -> bool:
        return isinstance(text, str) and (text in Cause._value2member_map_ or _RETRY_N.fullmatch(text) is not None)


_RETRY_N = re.compile(r"retry \d+")


class SourceKind(StrEnum):
    """The delivery source that invoked a function (a lane group on the timeline)."""

    DIRECT = "direct"
    SYNC = "sync"
    ASYNC = "async"
    SQS = "sqs"
    STREAM = "stream"
    APIGATEWAY = "apigateway"  # an HTTP client through API Gateway (a synchronous invoke per request)
    FUNCTION_URL = "function-url"  # an HTTP client calling the function's own URL (a synchronous invoke per request)
    ALB = "alb"  # an HTTP client through an Application Load Balancer with a Lambda target (synchronous, per request)
    CLOUDFORMATION = "cloudformation"  # a stack's custom resource requests (through Lambda's async queue)
    EVENTBRIDGE = "eventbridge"  # an event bus whose rule targets the function (through Lambda's async queue)
    DDB_STREAM = "dynamodb-stream"
    SNS = "sns"  # a topic the function is subscribed to (SNS hands each message to Lambda's async queue)
    S3 = "s3"  # a bucket's event notifications (S3 hands each one to Lambda's async queue)
    STEPFUNCTIONS = "stepfunctions"  # a state machine's Task state invokes the function synchronously, with Retry
    KAFKA = "kafka"  # a Kafka topic (Amazon MSK or self-managed) a mapping reads, partition by partition
    DURABLE = "durable"  # Lambda's durable execution service, invoking a durable function once per replay


#: The sources whose caller is an application's HTTP client (each request one synchronous invocation).
HTTP_CLIENTS = frozenset({SourceKind.APIGATEWAY, SourceKind.FUNCTION_URL, SourceKind.ALB})


class Delivery(StrEnum):
    """What a delivery source did besides invoking, as written in ``delivery`` records."""

    REDELIVERY = "redelivery"  # a message received again
    DELETED = "deleted"  # messages deleted after a success
    BATCH_FAILED = "batch failed"  # wholly or (``partial``) in part
    RETRY_SCHEDULED = "retry scheduled"
    DEAD_LETTERED = "dead-lettered"  # moved to a dead-letter queue
    DISCARDED = "discarded"  # given up: sent to an on-failure destination, or gone
    PENDING = "pending"  # still in flight when the run stopped
    PRODUCER_RESEND = "producer re-send"
    #: A producer's SDK ran out of attempts and it gave the order up (a ``note`` says so in words too); the request
    #: may still have reached the source (a read that timed out).
    PRODUCER_GAVE_UP = "producer gave up"
    SPONTANEOUS_DUPLICATE = "spontaneous duplicate"
    STALE_COPY = "stale copy"  # a DeleteMessage missed a copy of a standard queue's message
    SEND_DEDUPLICATED = "send deduplicated"  # a FIFO queue accepted a SendMessage but stored nothing
    REDRIVEN = "redriven"  # moved from a dead-letter queue back to a queue, as a new message
    THROTTLED = "throttled"  # Lambda answered 429: the async queue or SQS poller keeps it and tries again later
    DELIVERY_FAILED = "delivery failed"  # a source's attempt to hand an event to Lambda failed (it retries)
    USER_DELETE = "user delete"  # a user's DeleteItem on a stream's table: a REMOVE without userIdentity
    #: An SQS poller on a quiet queue held its batch past its batching window before invoking (added for
    #: sqs-low-traffic-wait).
    QUIET_QUEUE_WAIT = "quiet-queue wait"
    #: Lambda accepted a hand-off, but its answer never reached the service (SNS), which counts the delivery
    #: failed and hands the same event over again (added for sns-delivery-retry).
    ANSWER_LOST = "answer lost"
    EXECUTION_FAILED = "execution failed"  # a Step Functions execution failed: its Task's Retry did not save it
    #: Lambda queued an async Invoke that repeats one it had already queued for the same SDK call (the caller
    #: never got the first 202, so botocore sent the Invoke again).
    CALLER_RESEND = "caller re-send"
    #: A stream mapping split a failed batch and sent one half on its own (BisectBatchOnFunctionError): a repeat
    #: of the records in it, but no retry, since a split uses none of MaximumRetryAttempts.
    BISECT_HALF = "bisect half"
    #: A durable execution began (an Invoke, named or not, or a mapping's batch: each a new execution).
    EXECUTION_STARTED = "execution started"
    #: An Invoke named an execution that exists with the same payload: Lambda started nothing (execution names).
    EXECUTION_DEDUPLICATED = "execution deduplicated"
    #: A durable execution closed (its status in the detail); one that failed for good is ``EXECUTION_FAILED``.
    EXECUTION_CLOSED = "execution closed"
    #: A CloudFormation stack's status changed (CREATE_COMPLETE, ROLLBACK_IN_PROGRESS...: the status in the detail).
    STACK_STATUS = "stack status"
    #: A custom resource's Create ran but CloudFormation never learned its physical id: the rollback's Delete names
    #: one CloudFormation made, so what the Create's attempts made is left behind (the invocations in the detail).
    ORPHANED = "orphaned"


class BadBatchResponse(StrEnum):
    """Why Lambda could not read a partial batch response, and failed the whole batch: a ``batch failed``
    record's ``badResponse``. Each is a "complete failure" in AWS's list (services-sqs-errorhandling.html)."""

    NOT_A_LIST = "not a list"  # batchItemFailures is neither a list nor null
    NO_IDENTIFIER = "no itemIdentifier"  # an entry without one: empty, null, or a bad key name
    UNKNOWN_IDENTIFIER = "unknown itemIdentifier"  # an entry naming no record of the batch it answers


#: Where an order can end up without its effect: the checker's "lost ... it ended" text.
DROPPED = frozenset((Delivery.DEAD_LETTERED, Delivery.DISCARDED, Delivery.EXECUTION_FAILED))


class Effect(StrEnum):
    """The side effects a handler must not repeat."""

    EMAIL = "email"
    CHARGE = "charge"
    CANCELLATION = "cancellation"  # the email that confirms a customer's cancellation


class EffectStatus(StrEnum):
    """What became of one call to an effect provider."""

    DONE = "done"
    DEDUPLICATED = "deduplicated"  # the payment API recognised the idempotency key
    FAILED = "failed"  # the provider refused; nothing happened
    INDEFINITE = "indefinite"  # cut off by a deadline, yet it reached the provider
    UNANSWERED = "unanswered"  # cut off by a deadline before the provider answered; nothing happened

    @property
    def counted(self) -> bool:
        """Did the effect happen? An indefinite one did, only unacknowledged."""
        return self in (EffectStatus.DONE, EffectStatus.INDEFINITE)


class Status(StrEnum):
    """The checker's verdict, in Maelstrom's terms."""

    VALID = "valid"
    INVALID = "invalid"
    UNKNOWN = "unknown"


class FindingKind(StrEnum):
    DUPLICATE = "duplicate"
    LOST = "lost"
    UNEXPECTED = "unexpected"
    PENDING = "pending"
    ABANDONED = "abandoned"
    #: Two invocations held one key at once: a lock ran out while its owner still worked.
    OVERLAP = "lock overlap"
    #: An invocation whose claim had been taken over wrote to (or deleted) the new owner's record.
    STALE_WRITE = "stale write"
    #: A FIFO message group's orders got their effects out of the order they were sent in.
    OUT_OF_ORDER = "out of order"
    #: A partial batch response Lambda could not read (``BadBatchResponse``): it failed the whole batch.
    BAD_BATCH_RESPONSE = "bad batch response"

    @property
    def breaks(self) -> bool:
        """A finding of this kind makes the verdict invalid (the others make it unknown, or are notes)."""
        return self in (FindingKind.DUPLICATE, FindingKind.LOST, FindingKind.UNEXPECTED, FindingKind.OUT_OF_ORDER,
                        FindingKind.BAD_BATCH_RESPONSE)

    @property
    def note(self) -> bool:
        """A finding about how the idempotency record was handled: it explains effects, never judges."""
        return self in (FindingKind.OVERLAP, FindingKind.STALE_WRITE)


class WorldMode(StrEnum):
    """A history's ``meta["mode"]`` when its world ran on the wall clock (a deterministic world sets none)."""

    REAL_THREADS = "real-threads"
    ENDPOINT = "endpoint"


class ItemStatus(StrEnum):
    """The idempotency record's ``status``: what run_once writes when it claims a key, and once its work is done."""

    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"


#: DynamoDB requests that read items (the timeline draws them as reads).
ITEM_READS = ("GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems")
#: Every DynamoDB request that changes nothing: item reads and table descriptions. Two of them commute.
DYNAMODB_READS = frozenset((*ITEM_READS, "DescribeTable", "DescribeTimeToLive", "ListTables",
                            "DescribeContinuousBackups"))

#: The ``result`` of an ``aws`` record that succeeded; failures hold the error code.
AWS_OK = "ok"
CONDITIONAL_CHECK_FAILED = "ConditionalCheckFailed"


@dataclass(frozen=True)
class TableSchema:
    """The idempotency table every lesson uses: a string partition key and TTL on one attribute.

    TTL takes epoch seconds (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/time-to-live-ttl-before-you-start.html).
    ``recorded`` are the item attributes the history keeps from each request, so the
    timeline can draw locks and retention without storing whole items.
    """

    name: str = "idempotency"
    partition_key: str = "pk"
    ttl_attribute: str = "expiresAt"
    recorded: tuple[str, ...] = ("status", "expiresAt")

    def create_table_request(self) -> dict:
        return {
            "TableName": self.name,
            "AttributeDefinitions": [{"AttributeName": self.partition_key, "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": self.partition_key, "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
        }

    def ttl_request(self) -> dict:
        return {"TableName": self.name,
                "TimeToLiveSpecification": {"Enabled": True, "AttributeName": self.ttl_attribute}}

    def named(self, name: str) -> "TableSchema":
        return TableSchema(name, self.partition_key, self.ttl_attribute, self.recorded)


IDEMPOTENCY_TABLE = TableSchema()

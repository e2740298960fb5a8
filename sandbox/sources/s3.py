"""S3 event notifications: an upload to a bucket notifies the function, at least once.

What this model keeps from AWS:

- moto serves the bucket, its notification configuration (a ``LambdaFunctionConfiguration`` for
  ``s3:ObjectCreated:*`` under a key prefix) and the uploads, and builds each notification. It
  cannot invoke a Lambda function, so the sandbox plays that part
  (``adapter.route_s3_lambda_notifications``) and completes moto's record to AWS's shape:
  ``userIdentity``, ``requestParameters``, ``responseElements``, the bucket's ``ownerIdentity`` and
  the object's ``sequencer``, "a string representation of a hexadecimal value used to determine
  event sequence, only used with PUTs and DELETEs"; the object ``key`` is URL-encoded
  (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html;
  ``events.s3_record``).
- "Amazon S3 invokes your function asynchronously with an event that contains details about the
  object" (https://docs.aws.amazon.com/lambda/latest/dg/with-s3.html): each notification is a
  hand-off to Lambda's async queue (``AsyncInvokeSource``, reused as it is), so a function error
  is Lambda's to retry, 1 and 2 minutes later, with the whole event.
- The event names the object; it does not hold it. The function reads the object itself
  (``orders_in`` calls ``s3.get_object`` on the record's bucket and key), a request of its own.
- "Amazon S3 event notifications are designed to be delivered at least once. Typically, event
  notifications are delivered in seconds but can sometimes take a minute or longer"
  (https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html). Here each
  notification reaches Lambda ``delivery_delay`` seconds after its upload, and with
  ``duplicate_deliveries`` (seeded) S3 hands the same notification over a second time, same
  object, same ``sequencer``, ``duplicate_delivery_delay`` seconds later. AWS gives no figure for
  either delay.
- A producer's PutObject that took effect but timed out is written again by botocore's retry:
  the same key, a second ``ObjectCreated:Put`` with a later ``sequencer`` (a producer's re-send).

What it leaves out: other event types (deletes, copies, restores), EventBridge delivery, SQS and
SNS destinations, and how S3 would retry a hand-off Lambda refused (AWS documents none, so a
fault on that hand-off is bad input).
"""
from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..aws import adapter
from ..core.records import RecordJson
from ..errors import BadInput
from ..events import s3_record
from ..settings import Config, param
from ..vocab import SourceKind
from .async_front import AsyncFront
from .async_invoke import AsyncConfig
from .producer import ClientProducer

if TYPE_CHECKING:
    from ..runtime.functions import LambdaFunction
    from ..world import Sandbox

DOC_NOTIFICATIONS = "https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html"
DOC_STRUCTURE = "https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html"
DOC_LAMBDA = "https://docs.aws.amazon.com/lambda/latest/dg/with-s3.html"
BUCKET, PREFIX = "orders-inbox", "orders/"
#: The notification configuration's id (its ``configurationId`` in each record).
CONFIGURATION_ID = "order-uploaded"
_NO_RETRY_POLICY = ("AWS documents no retry policy for S3's hand-off of a notification to Lambda, so the sandbox "
                    "models none: fail the function instead (Lambda's async queue retries it), or use S3's "
                    f"duplicate_deliveries ({DOC_NOTIFICATIONS})")


@dataclass(frozen=True)
class S3NotificationConfig(Config):
    """When and how often S3 hands a notification to the function."""

    delivery_delay: float = param(
        1.0, "seconds between an upload and S3's hand-off of its notification to Lambda (AWS: typically seconds, "
        "sometimes a minute or longer)", DOC_NOTIFICATIONS, 0, 3600)
    duplicate_deliveries: float = param(
        0.0, "probability (seeded) that S3 hands a notification to Lambda twice: notifications are designed to be "
        "delivered at least once", DOC_NOTIFICATIONS, 0, 1)
    duplicate_delivery_delay: float = param(
        2.0, "seconds after the first hand-off that the second one comes (AWS gives no figure)", DOC_NOTIFICATIONS,
        0, 3600)


class S3NotificationSource(AsyncFront):
    """A bucket whose ``s3:ObjectCreated:*`` notifications under ``prefix`` invoke the function asynchronously."""

    kind = SourceKind.S3
    service = "S3"
    pending_reason = "S3 had not delivered the notification yet when the run stopped"

    def __init__(self, world: "Sandbox", function: "LambdaFunction", config: S3NotificationConfig | None = None,
                 async_config: AsyncConfig | None = None, *, bucket: str = BUCKET, prefix: str = PREFIX):
        self.config, self.bucket, self.prefix = config or S3NotificationConfig(), bucket, prefix
        self.notifications: list[dict] = []  # every notification's event, as the function gets it
        self._sequence = 0
        super().__init__(world, function, async_config)

    def _setup(self) -> None:
        s3 = adapter.shared_client(self.world.region, "s3")
        rule = {"Key": {"FilterRules": [{"Name": "prefix", "Value": self.prefix}]}} if self.prefix else {}
        with self.world.gateway.unrecorded():
            s3.create_bucket(Bucket=self.bucket)
            s3.put_bucket_notification_configuration(Bucket=self.bucket, NotificationConfiguration={
                "LambdaFunctionConfigurations": [{"Id": CONFIGURATION_ID, "LambdaFunctionArn": self.function.config.arn,
                                                  "Events": ["s3:ObjectCreated:*"], "Filter": rule}]})
        adapter.route_s3_lambda_notifications(self._notified)

    def start(self) -> "S3NotificationSource":
        if any((a.fault.service, a.fault.op) == ("lambda", "Invoke") and a.fault.kind != "throttle"
               for a in self.world.faults.aws):
            raise BadInput(_NO_RETRY_POLICY)
        super().start()
        return self

    def _notified(self, function_arn: str, body: dict) -> None:
        """moto has a notification for a Lambda function (inside the PutObject request): deliver it on a task."""
        if function_arn != self.function.config.arn:
            return
        for record in body.get("Records", []):
            if record.get("s3", {}).get("bucket", {}).get("name") != self.bucket:
                continue  # another bucket that notifies the same function: its own source delivers it
            event = {"Records": [self._complete(record)]}
            self.notifications.append(event)
            obj = event["Records"][0]["s3"]["object"]
            keys = self._keys(urllib.parse.unquote_plus(obj["key"]))
            event_id = f"{obj['key']}@{obj['sequencer']}"
            self.deliver(self._deliver, event, event_id, keys, event_id=event_id, keys=keys)

    def _complete(self, record: dict) -> dict:
        """moto's record in AWS's shape, with a sequencer that grows with every event of this bucket."""
        self._sequence += 1
        micros = int(round(self.world.clock.now() * 1e6))
        request_id = self.world.new_uuid().replace("-", "").upper()
        return s3_record(record, sequencer=f"{micros:014X}{self._sequence:04X}", request_id=request_id[:16],
                         host_id=request_id[16:] + request_id[:16])

    def _keys(self, key: str) -> list[str]:
        """The orders the object holds, read from moto without a request (the history's keys, not the function's)."""
        try:
            payload = json.loads(adapter.s3_object_body(self.bucket, key) or b"")
        except ValueError:
            return []
        orders = payload.get("orders", [payload]) if isinstance(payload, dict) else []
        return [str(o["orderId"]) for o in orders if isinstance(o, dict) and "orderId" in o]

    def _deliver(self, event: dict, event_id: str, keys: list[str]) -> None:
        """Hand the notification to Lambda after S3's delivery delay; at least once."""
        if self.config.delivery_delay:
            self.world.scheduler.sleep(self.config.delivery_delay, label="S3 delivers the notification")
        if self.lambda_fault() is not None:
            raise BadInput(_NO_RETRY_POLICY)
        entry = self.hand_off(event, keys)
        self.delivered(event_id)
        self.maybe_again(event, event_id, keys, entry, self.config.duplicate_deliveries,
                         self.config.duplicate_delivery_delay,
                         f"S3 delivered the notification a second time, nothing failed (at least once: "
                         f"{DOC_NOTIFICATIONS})")


class S3Uploader(ClientProducer):
    """Uploads ``schedule`` (pairs of virtual time and an order) to the bucket, one JSON object per order.

    Each object's key is ``<prefix><orderId>.json``. A PutObject that took effect but timed out is
    retried by botocore: the same object written twice, two notifications.
    """

    kind = SourceKind.S3
    service = "s3"
    op = "PutObject"

    def __init__(self, sb: "Sandbox", schedule: Any, *, bucket: str = BUCKET, prefix: str = PREFIX,
                 **kw: Any) -> None:
        super().__init__(sb, schedule, **kw)
        self.bucket, self.prefix = bucket, prefix

    def object_key(self, order: dict) -> str:
        return f"{self.prefix}{order['orderId']}.json"

    def _request(self, item: Any) -> dict:
        return self.client.put_object(Bucket=self.bucket, Key=self.object_key(item), ContentType="application/json",
                                      Body=json.dumps(item, sort_keys=True).encode())

    def _resend_detail(self, key: str | None, reached: list[RecordJson]) -> dict:
        return {"objectKeys": [r["key"] for r in reached],
                "why": "PutObject took effect but its response timed out (ReadTimeoutError), so botocore's retry "
                       "wrote the object again, and S3 sent a second notification"}

"""s3-notification-duplicate: S3 delivers one upload's notification twice; the function reads the object twice.

"Amazon S3 event notifications are designed to be delivered at least once"
(https://docs.aws.amazon.com/AmazonS3/latest/userguide/EventNotifications.html), and "Amazon S3
invokes your function asynchronously" (https://docs.aws.amazon.com/lambda/latest/dg/with-s3.html):
each delivery is a hand-off to Lambda's async queue, and a second delivery of the same
notification is a second event, with a new request id. Both copies name the same object, with
the same ``eTag`` and the same ``sequencer`` (the value that orders one key's events,
https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html). Here
the at-least-once case is made certain (``duplicate_deliveries`` 1) so that a lesson can look at
it; AWS gives no figure for how often it happens or how far apart the copies come.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.async_invoke import AsyncConfig
from ..sources.base import run_sources
from ..sources.s3 import DOC_NOTIFICATIONS, S3NotificationConfig, S3NotificationSource, S3Uploader
from ..world import Sandbox
from .base import Scenario, ScenarioSettings


@dataclass(frozen=True)
class S3NotificationDuplicateSettings(ScenarioSettings):
    orders: int = param(1, "how many orders the producer uploads, one object each, a second apart", None, 1, 20)
    bucket: S3NotificationConfig = group(
        S3NotificationConfig, duplicate_deliveries=(1.0, "probability (seeded) that S3 hands a notification to Lambda "
                                                         "twice: 1 here, to show what at-least-once delivery allows",
                                                    DOC_NOTIFICATIONS))
    async_queue: AsyncConfig = group(AsyncConfig)


class S3NotificationDuplicate(Scenario[S3NotificationDuplicateSettings]):
    name = "s3-notification-duplicate"
    kind = "duplicate source"
    source = "S3"
    headline = "S3 delivers an upload's notification twice (at least once): same object, same sequencer"
    summary = ("A producer uploads an order as a JSON object to an S3 bucket whose notifications invoke the "
               "function. The notification names the object; the function reads it with GetObject and emails the "
               "customer. Nothing fails, but S3 delivers the same notification a second time, two seconds later, as "
               "its at-least-once design allows: same object, same sequencer. The function reads the object again "
               "and emails the customer twice.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: S3NotificationDuplicateSettings) -> None:
        orders = make_orders(cfg.orders, sb.seed)
        bucket = S3NotificationSource(sb, fn, cfg.bucket, cfg.async_queue)
        uploads = S3Uploader(sb, [(float(i), order) for i, order in enumerate(orders)], bucket=bucket.bucket,
                             prefix=bucket.prefix)
        run_sources(sb, uploads, bucket)

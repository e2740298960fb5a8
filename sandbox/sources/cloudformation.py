"""A CloudFormation stack whose custom resource is backed by the function.

What this model keeps from AWS:

- "CloudFormation invokes your Lambda function asynchronously with an event that includes a callback
  URL" (https://docs.aws.amazon.com/lambda/latest/dg/services-cloudformation.html): each request is a
  hand-off to Lambda's async queue (``AsyncInvokeSource``, reused as it is), so a function error is
  retried by Lambda, whole, a minute and then two minutes later, the same event each time
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html).
- The request (``events.custom_resource_event``) carries no physical id on a Create; the handler answers
  by uploading a JSON response to the presigned S3 URL it names (``sandbox.respond_to_cloudformation``).
  A response over 4,096 bytes is refused ("The total size of the response body can't exceed 4096
  bytes", crpg-ref-responses.html): here the operation fails with that reason.
- CloudFormation waits for the response at most ``ServiceTimeout`` seconds, 1 to 3,600, "The default
  value is 3600 seconds (1 hour)"; "If no response is received before the timeout period ends, the
  request is considered unsuccessful, and the stack operation fails" (crpg-ref-requests.html, crpg-ref.html).
  So a handler that never answers leaves the stack waiting an hour.
- A failed Create rolls the stack back, and the rollback sends the custom resource a Delete. AWS's
  CloudFormation pages do not say so in one sentence; AWS's CDK team does ("When a CREATE operation fails,
  CloudFormation will automatically issue a DELETE operation with the PhysicalResourceId submitted by the
  FAILED response", aws/aws-cdk#5525). A rollback whose Delete goes unanswered waits for a timeout again
  and ends in a rollback failure (AWS Knowledge Center, best-practices-custom-cf-lambda).
- The Delete carries the physical id of the failed response; when none came, AWS gives none: users report
  one CloudFormation generated, and the sandbox sends ``<LogicalResourceId>-<12 characters>``.

What it leaves out: updates and replacements, SNS-backed custom resources, and what CloudFormation does
with a second response to the same URL (AWS gives none; the sandbox reads the object when it looks, so the
last upload before then wins).
"""
from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..aws import adapter
from ..core.jsonvalues import JsonObject
from ..custom_resources import FAILED, SUCCESS
from ..events import Order, custom_resource_event
from ..settings import Config, param
from ..vocab import Cause, Delivery, SourceKind
from .async_front import AsyncFront
from .async_invoke import AsyncConfig, QueuedEvent

if TYPE_CHECKING:
    from ..runtime.functions import LambdaFunction
    from ..world import Sandbox

DOC_REQUESTS = "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-requests.html"
DOC_RESPONSES = "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html"
RESPONSE_BUCKET = "cloudformation-custom-resource-response-useast1"
STACK_NAME, LOGICAL_ID, RESOURCE_TYPE = "orders-stack", "OrdersImport", "Custom::OrdersImport"
#: The most a response body may hold (crpg-ref-responses.html).
RESPONSE_LIMIT = 4096


@dataclass(frozen=True)
class CustomResourceConfig(Config):
    """How long CloudFormation waits for each of the custom resource's responses."""

    service_timeout: int = param(
        3600, "seconds CloudFormation waits for the custom resource's response before the stack operation fails "
        "(ServiceTimeout: 1 to 3600, AWS's default 3600, one hour)", DOC_REQUESTS, 1, 3600, aws="ServiceTimeout")


@dataclass
class Operation:
    """One request CloudFormation sent the custom resource, and what became of it."""

    request_type: str
    request_id: str
    sent: float
    entry: QueuedEvent
    response: JsonObject | None = None  # what the provider uploaded (None: nothing before the timeout)
    failure: str | None = None  # why CloudFormation counts it as failed (None: SUCCESS)


class CustomResourceSource(AsyncFront):
    """CloudFormation creating a stack with one custom resource, ``Custom::OrdersImport``, whose properties hold
    orders; a failed create is rolled back with a Delete."""

    kind = SourceKind.CLOUDFORMATION
    service = "CloudFormation"
    pending_reason = "CloudFormation was still waiting for the custom resource's response when the run stopped"

    def __init__(self, world: "Sandbox", function: "LambdaFunction", config: CustomResourceConfig | None = None,
                 async_config: AsyncConfig | None = None):
        self.config = config or CustomResourceConfig()
        self.stack_id = (f"arn:aws:cloudformation:{world.region}:{adapter.DEFAULT_ACCOUNT_ID}:stack/{STACK_NAME}/"
                         f"{world.new_uuid()}")
        self.operations: list[Operation] = []
        self.status: str | None = None  # the stack's last status
        self._scheduled = 0  # stacks still to be created
        super().__init__(world, function, async_config)

    def idle(self) -> bool:
        return self._scheduled == 0 and super().idle()

    def _setup(self) -> None:
        with self.world.gateway.unrecorded():
            adapter.shared_client(self.world.region, "s3").create_bucket(Bucket=RESPONSE_BUCKET)

    def create_stack(self, orders: list[Order], at: float = 0.0) -> None:
        """Create the stack at virtual time ``at``: the custom resource's properties hold ``orders``."""
        keys = [str(o["orderId"]) for o in orders]
        self._scheduled += 1

        def begin() -> None:
            self._scheduled -= 1
            for order in orders:
                self.world.accept(order, source=self.kind)
            self.deliver(self._stack, {"orders": orders}, keys, event_id=self.stack_id, keys=keys)

        self.world.scheduler.call_at(at, begin, name=f"CreateStack {STACK_NAME}")

    # -- the stack -----------------------------------------------------------------------------
    def _stack(self, properties: dict, keys: list[str]) -> None:
        try:
            self._create(properties, keys)
        finally:
            self.delivered(self.stack_id)

    def _create(self, properties: dict, keys: list[str]) -> None:
        create = self._operation("Create", properties, keys)
        if create.failure is None:
            self._status("CREATE_COMPLETE", keys)
            return
        self._status("ROLLBACK_IN_PROGRESS", keys, f"the custom resource failed to create: {create.failure}")
        known = (create.response or {}).get("PhysicalResourceId")
        physical = known if isinstance(known, str) and known else f"{LOGICAL_ID}-{self.world.new_uuid()[:12]}"
        delete = self._operation("Delete", properties, keys, physical, repeats=create.entry)
        if delete.failure is None:
            self._status("ROLLBACK_COMPLETE", keys)
        else:
            self._status("ROLLBACK_FAILED", keys, f"the custom resource failed to delete: {delete.failure}")
        if not known:
            self._orphan(create, physical, keys)

    def _orphan(self, create: Operation, physical: str, keys: list[str]) -> None:
        """What the Create's attempts did, under no physical id CloudFormation knows: its rollback's Delete named
        one CloudFormation made, so a handler that finds its resource by the physical id finds nothing to delete.
        (Nothing is orphaned when no attempt ran.)"""
        ran = [inv.id for inv in create.entry.invocations]
        if not ran:
            return
        self.world.record_delivery(self.kind, Delivery.ORPHANED, keys, None,
                                   {"physical": physical, "creates": ran})
        self.world.note(f"CloudFormation: no response to the Create named a physical id, so the rollback's Delete "
                        f"named {physical}, an id no attempt made; what {', '.join(ran)} did is left behind, an "
                        f"orphan, unless the handler's Delete finds it some other way; orders {', '.join(keys)}")

    def _operation(self, request_type: str, properties: dict, keys: list[str], physical: str | None = None,
                   repeats: QueuedEvent | None = None) -> Operation:
        """Send one request and wait for its response, at most ``service_timeout`` seconds."""
        world, request_id = self.world, self.world.new_uuid()
        key = f"{self.stack_id}|{LOGICAL_ID}|{request_id}"
        url = (f"https://{RESPONSE_BUCKET}.s3.amazonaws.com/{urllib.parse.quote(key, safe='')}"
               f"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=7200&X-Amz-Signature=presigned")
        event = custom_resource_event(request_type, request_id, self.stack_id, url, self.function.config.arn,
                                      properties, LOGICAL_ID, RESOURCE_TYPE, physical)
        cause = Cause.FIRST_DELIVERY if repeats is None else Cause.ROLLBACK_DELETE
        entry = self.hand_off(event, keys, cause=cause, repeats=repeats)
        op = Operation(request_type, request_id, world.clock.elapsed(), entry)
        self.operations.append(op)
        world.note(f"CloudFormation: {request_type} request {request_id[:8]} for {LOGICAL_ID} handed to Lambda; it "
                   f"waits up to {self.config.service_timeout} s for the response")
        answered = world.scheduler.block_until(lambda: adapter.s3_object_body(RESPONSE_BUCKET, key) is not None,
                                               timeout=self.config.service_timeout,
                                               label=f"CloudFormation waits for the {request_type} response")
        op.response, op.failure = self._read(key) if answered else (None, "no response before the timeout "
                                                                           f"({self.config.service_timeout} s)")
        return op

    @staticmethod
    def _read(key: str) -> tuple[JsonObject | None, str | None]:
        """The response uploaded under ``key``, and why it fails the operation (None: a SUCCESS)."""
        raw = adapter.s3_object_body(RESPONSE_BUCKET, key) or b""
        if len(raw) > RESPONSE_LIMIT:
            return None, f"the response is {len(raw)} bytes, over the {RESPONSE_LIMIT}-byte limit ({DOC_RESPONSES})"
        try:  # what a handler uploaded: read as hostile input (a 4 KB body can nest 2,000 deep)
            body = json.loads(raw)
        except (ValueError, RecursionError):
            return None, "the response is not JSON"
        if not isinstance(body, dict) or body.get("Status") not in (SUCCESS, FAILED):
            return None, "the response has no Status of SUCCESS or FAILED"
        if body["Status"] == FAILED:
            return body, f"the provider answered FAILED: {body.get('Reason') or 'no reason given'}"
        return body, None

    def _status(self, status: str, keys: list[str], why: str | None = None) -> None:
        self.status = status
        self.world.record_delivery(self.kind, Delivery.STACK_STATUS, keys, None,
                                   {"status": status, **({"why": why} if why else {})})
        self.world.note(f"CloudFormation: stack {STACK_NAME} {status}" + (f" ({why})" if why else "")
                        + f"; orders {', '.join(keys)}")

"""The same durable function with the email inside a step: a replay returns the step's stored result.

"During replay, the SDK returns checkpointed results without re-executing completed steps"
(https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html): the wait's replay reads the
email step's checkpoint and sends nothing.
"""
import os

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration

from sandbox import orders_in, send_confirmation_email

FOLLOW_UP_SECONDS = int(os.environ.get("FOLLOW_UP_SECONDS", "120"))


@durable_execution
def handler(event, context: DurableContext):
    orders = list(orders_in(event))
    for order in orders:
        context.step(lambda _, order=order: send_confirmation_email(order), name=f"email-{order['orderId']}")
    context.wait(Duration.from_seconds(FOLLOW_UP_SECONDS))
    return context.step(lambda _: {"followUp": [o["orderId"] for o in orders]}, name="follow-up")

"""A durable function that emails outside a step, then waits: every replay emails again.

"When it's time to resume, Lambda invokes your function again from the beginning and replays the checkpoint
log ... This means your code runs again" (https://docs.aws.amazon.com/lambda/latest/dg/durable-basic-concepts.html).
The wait suspends the function; when it ends, Lambda invokes it again, the SDK replays, and the email outside
any step goes out a second time.
"""
import os

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration

from sandbox import orders_in, send_confirmation_email

#: How long the function waits before asking for feedback (seconds; the scenario's setting, 120 by default).
FOLLOW_UP_SECONDS = int(os.environ.get("FOLLOW_UP_SECONDS", "120"))


@durable_execution
def handler(event, context: DurableContext):
    orders = list(orders_in(event))
    for order in orders:
        send_confirmation_email(order)  # outside a step: runs on every invocation
    context.wait(Duration.from_seconds(FOLLOW_UP_SECONDS))
    return context.step(lambda _: {"followUp": [o["orderId"] for o in orders]}, name="follow-up")

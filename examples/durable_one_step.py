"""A durable function with one step for all the work: a failure retries the whole step.

Steps are at least once: "Steps have at-least-once execution semantics by default"
(https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html). When the email for a
later order fails, the SDK checkpoints a retry of the step, the function suspends, and on the next invocation
the step runs again from its start, so the orders it had already emailed are emailed again.
"""
from aws_durable_execution_sdk_python import DurableContext, durable_execution

from sandbox import charge_card, orders_in, send_confirmation_email


def fulfil_all(orders):
    for order in orders:
        if order.get("payment") == "card":
            charge_card(order)
        send_confirmation_email(order)
    return {"emailed": [order["orderId"] for order in orders]}


@durable_execution
def handler(event, context: DurableContext):
    orders = list(orders_in(event))
    return context.step(lambda _: fulfil_all(orders), name="fulfil-orders")

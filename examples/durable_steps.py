"""A durable function with one step per order, and a charge keyed by the execution and the step.

A step's checkpoint covers what ran before it: when a later order's email fails, only its step is retried,
and the orders whose steps succeeded return their stored results on replay
(https://docs.aws.amazon.com/lambda/latest/dg/durable-basic-concepts.html). A step is still at least once
(durable-execution-idempotency.html): if the environment dies after an effect and before the step's
checkpoint, the step runs again. The charge survives that, because the payment API dedupes on its
idempotency key, built from the execution's name and the step's (the same on every replay). The email has no
such key, so that window stays open for it. Code outside the steps runs again on every replay: keep effects
inside them.
"""
from aws_durable_execution_sdk_python import DurableContext, durable_execution

from sandbox import charge_card, orders_in, send_confirmation_email


def fulfil(order, key):
    if order.get("payment") == "card":
        charge_card(order, idempotency_key=key)
    return send_confirmation_email(order)


@durable_execution
def handler(event, context: DurableContext):
    execution = context.execution_context.durable_execution_arn.split("/")[-2]  # the execution's name
    done = []
    for order in orders_in(event):
        step = f"confirm-{order['orderId']}"
        done.append(context.step(lambda _, order=order, step=step: fulfil(order, f"{execution}#{step}"), name=step))
    return {"confirmed": len(done)}

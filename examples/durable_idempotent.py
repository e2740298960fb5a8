"""The improved handler as a durable function: one step per order, and run_once inside it, keyed by the order.

A step dedupes only within its execution. An event source mapping starts a new execution for every batch it
delivers, retries included ("Lambda event source mappings (ESM) don't support idempotency at launch. Therefore,
each invocation (including retries) starts a new durable execution",
https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html), and so does an Invoke without an
execution name. AWS's advice: "implement idempotency logic in your function code". So each order's step runs
``confirm`` from ``idempotent.py``: ``run_once`` under ``order-confirmation#<orderId>``, a key from the business,
the same in every execution; the charge keeps its own key, ``charge#<orderId>``.
"""
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from idempotent import confirm

from sandbox import orders_in


@durable_execution
def handler(event, context: DurableContext):
    lambda_context = context.lambda_context
    done = []
    for order in orders_in(event):
        done.append(context.step(lambda _, order=order: confirm(order, lambda_context),
                                 name=f"confirm-{order['orderId']}"))
    return {"confirmed": len(done)}

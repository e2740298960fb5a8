"""The improved handler, with the order passed to its work through a scratch file in /tmp.

Each order is claimed with the improved ``run_once`` (``run_once_improved.py``), so a duplicate
replays the first result. But the work reads the order back from ``/tmp/order.json``, a fixed name
(handlers do this to hand a file to a library or a subprocess). On ordinary Lambda an execution
environment runs one request at a time, so that is safe. Under Lambda Managed Instances one
environment runs several requests at once, each in its own Python process, and "the /tmp directory
is shared across all concurrent requests in the execution environment"
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-python-runtime.html): another
request's order can be in the file by the time the work reads it. A name of the request's own
(``/tmp/order-<aws_request_id>.json``, or ``tempfile``) avoids it; set ``SCRATCH_PER_REQUEST=1``.
"""
import json
import os
from functools import partial

from run_once_improved import run_once

from sandbox import orders_in, send_confirmation_email


def scratch_path(context):
    if os.environ.get("SCRATCH_PER_REQUEST") == "1":
        return f"/tmp/order-{context.aws_request_id}.json"
    return "/tmp/order.json"


def fulfil(path):
    with open(path) as f:
        return send_confirmation_email(json.load(f))


def handler(event, context):
    results = []
    for order in orders_in(event):
        path = scratch_path(context)
        with open(path, "w") as f:
            json.dump(order, f)
        results.append(run_once(f"order-confirmation#{order['orderId']}", partial(fulfil, path), payload=order,
                                context=context))
    return {"results": results}

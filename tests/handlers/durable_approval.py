"""A durable handler that waits for an approval: ``wait_for_callback`` hands the callback id to an approvals queue
(its submitter step), and the function suspends until an external approver answers through Lambda's
SendDurableExecutionCallbackSuccess or ...Failure. It prints where it is, so a test can see what ran on which
invocation; CALLBACK_TIMEOUT and HEARTBEAT_TIMEOUT (seconds, 0: none) set the callback's clocks.

tests/test_durable_callbacks.py runs it in a world, with an approver that answers, answers twice, heartbeats, or
never answers.
"""
import json
import os

import boto3
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, WaitForCallbackConfig
from aws_durable_execution_sdk_python.exceptions import CallbackError

CONFIG = WaitForCallbackConfig(timeout=Duration.from_seconds(int(os.environ.get("CALLBACK_TIMEOUT", "0"))),
                               heartbeat_timeout=Duration.from_seconds(int(os.environ.get("HEARTBEAT_TIMEOUT", "0"))))


def ask(callback_id, _context, order):
    print(f"mark: asked {callback_id}")
    boto3.client("sqs").send_message(QueueUrl=os.environ["APPROVALS_QUEUE_URL"],
                                     MessageBody=json.dumps({"callbackId": callback_id, "orderId": order}))


@durable_execution
def handler(event, context: DurableContext):
    print("mark: outside")
    order = event["orderId"]
    try:
        answer = context.wait_for_callback(lambda cid, ctx: ask(cid, ctx, order), name="approval", config=CONFIG)
    except CallbackError as exc:
        print(f"mark: no approval ({type(exc).__name__}: {exc})")
        return {"orderId": order, "approved": False, "why": type(exc).__name__}
    print(f"mark: answer {answer}")
    return {"orderId": order, "approved": True, "answer": answer}

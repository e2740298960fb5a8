"""A correct run_once that keeps a sqlite3 journal in /tmp, writes a tempfile and logs to a file in /tmp."""
import os, time
import boto3
from botocore.exceptions import ClientError
from sandbox import StillInProgressError, orders_in, send_confirmation_email

TABLE = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def run_once(key, work, context):
    now = int(time.time())
    lock = int(context.get_remaining_time_in_millis() / 1000) + 1
    try:
        TABLE.put_item(Item={"pk": key, "state": "IN_PROGRESS", "expiresAt": now + lock},
                       ConditionExpression="attribute_not_exists(pk) OR expiresAt < :now",
                       ExpressionAttributeValues={":now": now})
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        item = TABLE.get_item(Key={"pk": key}, ConsistentRead=True).get("Item")
        if item and item["state"] == "COMPLETED":
            return
        raise StillInProgressError(key) from None
    work()
    TABLE.update_item(Key={"pk": key}, UpdateExpression="SET #s = :d, expiresAt = :k",
                      ExpressionAttributeNames={"#s": "state"},
                      ExpressionAttributeValues={":d": "COMPLETED", ":k": now + 86400})


import logging, sqlite3, tempfile

LOG = logging.getLogger("app")
LOG.setLevel(logging.INFO)
LOG.addHandler(logging.FileHandler("/tmp/app.log"))  # basicConfig is a no-op under the runtime, as on Lambda
DB = sqlite3.connect("/tmp/journal.db")
DB.execute("create table if not exists j (id text, at real)")

def handler(event, context):
    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        f.write("scratch")
    for order in orders_in(event):
        run_once("email#" + order["orderId"], lambda: send_confirmation_email(order), context)
        DB.execute("insert into j values (?, ?)", (order["orderId"], time.time()))
        DB.commit()
        LOG.info("sent %s", order["orderId"])
    return {"journal": DB.execute("select count(*) from j").fetchone()[0], "log": open("/tmp/app.log").read().count("sent")}

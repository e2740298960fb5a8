"""Sends its PutItem with the target header renamed to an operation DynamoDB does not have, and reports
what came back (the world must answer as AWS does, and write nothing)."""
import os

import boto3
from botocore.exceptions import ClientError

client = boto3.client("dynamodb")


def _rename(request=None, **_):
    request.headers["X-Amz-Target"] = "DynamoDB_20120810.PutItemX"


client.meta.events.register_first("before-sign.dynamodb.PutItem", _rename)


def handler(event, context):
    try:
        client.put_item(TableName=os.environ["IDEMPOTENCY_TABLE"], Item={"pk": {"S": "k"}})
    except ClientError as error:
        return {"code": error.response["Error"]["Code"]}
    return {"code": None}

"""Event fields that handlers and libraries read, in the shape Lambda gives them.

Lambda's SQS event spells message attributes in lowerCamel case, with binary values as base64
text (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html); a stream record's
``invokeIdentityArn`` is the execution role, and IAM ARNs carry no region
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-arns).
"""
from __future__ import annotations

import base64
import json

import boto3
from moto import mock_aws

from sandbox.events import kinesis_record, sqs_record

QUEUE_ATTRIBUTES = {
    "tenant": {"DataType": "String", "StringValue": "acme"},
    "attempt": {"DataType": "Number", "StringValue": "2"},
    "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xffraw"},
}


def _received_record() -> dict:
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1", aws_access_key_id="testing",
                           aws_secret_access_key="testing")
        url = sqs.create_queue(QueueName="orders")["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody="{}", MessageAttributes=QUEUE_ATTRIBUTES)
        received = sqs.receive_message(QueueUrl=url, AttributeNames=["All"], MessageAttributeNames=["All"])
    return sqs_record(received["Messages"][0], "arn:aws:sqs:us-east-1:123456789012:orders")


def test_sqs_message_attributes_use_lambdas_lower_camel_keys():
    attributes = _received_record()["messageAttributes"]
    assert attributes["tenant"] == {"stringValue": "acme", "stringListValues": [], "binaryListValues": [],
                                    "dataType": "String"}
    assert attributes["attempt"]["stringValue"] == "2" and attributes["attempt"]["dataType"] == "Number"
    assert not any(key[0].isupper() for value in attributes.values() for key in value)


def test_a_binary_attribute_arrives_as_base64_text_and_the_event_is_json():
    record = _received_record()
    blob = record["messageAttributes"]["blob"]
    assert blob["dataType"] == "Binary"
    assert base64.b64decode(blob["binaryValue"]) == b"\x00\xffraw"
    assert json.loads(json.dumps(record)) == record  # Lambda hands the handler deserialised JSON


def test_a_stream_records_role_arn_has_no_region():
    record = kinesis_record({"Data": b"{}", "PartitionKey": "o-1", "SequenceNumber": "1"}, "shardId-000000000000",
                            "arn:aws:kinesis:eu-west-1:123456789012:stream/orders",
                            "arn:aws:lambda:eu-west-1:123456789012:function:orders")
    arn = record["invokeIdentityArn"].split(":")
    assert arn[:3] == ["arn", "aws", "iam"] and arn[3] == "" and arn[4] == "123456789012"
    assert arn[5].startswith("role/")

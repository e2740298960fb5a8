"""Orders, and the real AWS event shapes that carry them.

Shapes follow the AWS documentation's sample events:
- EventBridge: https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html
- SQS: https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html
- Kinesis: https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html
- DynamoDB Streams: https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html (a TTL deletion's
  ``userIdentity``: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_Record.html)
- API Gateway proxy: https://docs.aws.amazon.com/lambda/latest/dg/services-apigateway.html
- SNS: https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html
- S3: https://docs.aws.amazon.com/lambda/latest/dg/with-s3.html and
  https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html
"""
from __future__ import annotations

import base64
import datetime as dt
import json
import random
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NotRequired, TypedDict, cast

from .aws.dynamo import plain_item
from .aws.event_shapes import (
    AlbEvent,
    ApiGatewayProxyEvent,
    CustomResourceEvent,
    DdbStreamRecord,
    EventBridgeEvent,
    FunctionUrlEvent,
    KafkaRecord,
    KinesisRecord,
    SnsRecord,
    SqsMessage,
    SqsRecord,
    StreamImage,
)
from .core.jsonvalues import JsonObject, LambdaEvent
from .errors import BadInput
from .vocab import Effect


class Order(TypedDict):
    """An order as the workload makes it: ``{"orderId": "o-1", "email": ..., "amount": cents}`` (and ``payment``).

    The sandbox's own; a handler reads it back out of the event's JSON, so it stays a plain dict."""

    orderId: str
    email: str
    amount: int  # cents
    payment: NotRequired[str]  # "card": charged, before its email


class Cart(TypedDict):
    """Several orders in one request's body (a checkout through the load balancer)."""

    orders: list[Order]

_NAMES = ["ana", "ben", "chloe", "dev", "emma", "farid", "grace", "hiro", "ines", "jon", "kai", "lena"]


def make_orders(n: int, seed: int = 0, start: int = 1, payment: str | None = None) -> list[Order]:
    """``n`` deterministic orders: ``{"orderId": "o-1", "email": ..., "amount": cents}``.

    With ``payment="card"`` each order also asks to be charged, before its email.
    """
    rng = random.Random(f"orders:{seed}")
    orders = []
    for i in range(start, start + n):
        name = _NAMES[rng.randrange(len(_NAMES))]
        order: Order = {"orderId": f"o-{i}", "email": f"{name}@example.com", "amount": rng.randrange(500, 20000, 5)}
        if payment:
            order["payment"] = payment
        orders.append(order)
    return orders


def owed_effects(order: Order) -> list[str]:
    """What an order is owed, once each: a charge if it pays by card, and always the email."""
    return [Effect.CHARGE, Effect.EMAIL] if order.get("payment") == "card" else [Effect.EMAIL]


#: The ``source`` and ``detail-type`` of the shop's EventBridge events.
EVENT_SOURCE, DETAIL_TYPE = "shop.orders", "OrderPlaced"


def eventbridge_event(orders: list[Order], event_id: str, time: str, region: str = "us-east-1",
                      account: str = "123456789012") -> EventBridgeEvent:
    """An EventBridge "OrderPlaced" event whose detail carries one or more orders."""
    return {
        "version": "0",
        "id": event_id,
        "detail-type": DETAIL_TYPE,
        "source": EVENT_SOURCE,
        "account": account,
        "time": time,
        "region": region,
        "resources": [],
        "detail": {"orders": orders},
    }


def iso_millis(epoch: float) -> str:
    """A UTC timestamp with milliseconds, as Lambda writes them: 2026-01-05T09:00:00.000Z."""
    return dt.datetime.fromtimestamp(epoch, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def eventbridge_time(epoch: float) -> str:
    """An EventBridge ``time`` field (whole seconds, UTC) for a Unix time."""
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def apigateway_event(order: Order | Cart, request_id: str, idempotency_key: str | None = None,
                     key_header: str = "Idempotency-Key") -> ApiGatewayProxyEvent:
    """An API Gateway REST proxy event: POST /orders with the order as JSON body.

    ``key_header``: how the client spells the header's name. HTTP header names are case-insensitive
    (RFC 9110), and a REST API passes them on as the client sent them."""
    headers = {"content-type": "application/json"}
    if idempotency_key:
        headers[key_header] = idempotency_key
    return {
        "resource": "/orders",
        "path": "/orders",
        "httpMethod": "POST",
        "headers": headers,
        "queryStringParameters": None,
        "pathParameters": None,
        "requestContext": {"requestId": request_id, "stage": "prod", "httpMethod": "POST", "path": "/prod/orders"},
        "body": json.dumps(order),
        "isBase64Encoded": False,
    }


#: The function URL's id, and its domain (https://docs.aws.amazon.com/lambda/latest/dg/urls-configuration.html).
FUNCTION_URL_ID = "abcdefghij1234567890klmnopqrstuv"
FUNCTION_URL_DOMAIN = f"{FUNCTION_URL_ID}.lambda-url.us-east-1.on.aws"


def function_url_event(body: Order | Cart, request_id: str, epoch_ms: int, idempotency_key: str | None = None,
                       path: str = "/orders") -> FunctionUrlEvent:
    """A function URL's event for a POST of ``body`` as JSON: API Gateway's payload format version 2.0.

    Fields as AWS's sample shows them (https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html):
    ``routeKey`` and ``stage`` are the placeholder ``$default``; ``requestContext.requestId`` is "the ID of
    the invocation request", new for every request; header names in lower case, as in AWS's samples."""
    headers = {"content-type": "application/json", "host": FUNCTION_URL_DOMAIN, "user-agent": "orders-client/1.0"}
    if idempotency_key:
        headers["idempotency-key"] = idempotency_key
    return {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "", "headers": headers,
        "requestContext": {
            "accountId": "anonymous", "apiId": FUNCTION_URL_ID, "domainName": FUNCTION_URL_DOMAIN,
            "domainPrefix": FUNCTION_URL_ID,
            "http": {"method": "POST", "path": path, "protocol": "HTTP/1.1", "sourceIp": "198.51.100.7",
                     "userAgent": "orders-client/1.0"},
            "requestId": request_id, "routeKey": "$default", "stage": "$default",
            "time": dt.datetime.fromtimestamp(epoch_ms / 1000, dt.UTC).strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": epoch_ms},
        "body": json.dumps(body), "pathParameters": None, "isBase64Encoded": False, "stageVariables": None,
    }


#: The target group a load balancer's listener rule forwards to (its ARN, as AWS's sample event spells it).
ALB_TARGET_GROUP = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/orders-checkout/6d0ecf831eec9f09"


def alb_event(body: Order | Cart, trace_id: str, idempotency_key: str | None = None,
              path: str = "/checkout") -> AlbEvent:
    """An Application Load Balancer's event for a POST of ``body`` as JSON (multi-value headers off).

    As AWS's sample shows it (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/lambda-functions.html):
    there is no request id in it; the only id of the request is the ``X-Amzn-Trace-Id`` header, which the
    load balancer "adds or updates" on every request it receives (load-balancer-request-tracing.html), with
    ``X-Forwarded-For``, ``-Port`` and ``-Proto``. An application/json body is passed as it is."""
    headers = {"content-type": "application/json", "host": "orders-alb-1234567890.us-east-1.elb.amazonaws.com",
               "user-agent": "orders-client/1.0", "x-amzn-trace-id": trace_id, "x-forwarded-for": "198.51.100.7",
               "x-forwarded-port": "443", "x-forwarded-proto": "https"}
    if idempotency_key:
        headers["idempotency-key"] = idempotency_key
    return {"requestContext": {"elb": {"targetGroupArn": ALB_TARGET_GROUP}}, "httpMethod": "POST", "path": path,
            "queryStringParameters": {}, "headers": headers, "body": json.dumps(body), "isBase64Encoded": False}


def trace_header(epoch: float, unique: str) -> str:
    """An ``X-Amzn-Trace-Id`` value: ``Root=1-`` the time in hex seconds, then 24 hex digits
    (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-request-tracing.html)."""
    return f"Root=1-{int(epoch):08x}-{unique.replace('-', '')[:24]}"


def custom_resource_event(request_type: str, request_id: str, stack_id: str, response_url: str, function_arn: str,
                          properties: dict, logical_id: str, resource_type: str,
                          physical_id: str | None = None) -> CustomResourceEvent:
    """A CloudFormation custom resource request, as Lambda gets it (asynchronously).

    Fields as AWS lists them (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-requests.html):
    ``PhysicalResourceId`` is "never sent with Create"; ``ResponseURL`` is a presigned S3 URL the provider
    uploads its response to; ``StackId`` with ``RequestId`` "uniquely identify a request on a particular
    custom resource"; ``ResourceProperties`` holds the template's properties, ``ServiceToken`` included."""
    event: CustomResourceEvent = {
        "RequestType": request_type, "ServiceToken": function_arn, "ResponseURL": response_url,
        "StackId": stack_id, "RequestId": request_id, "LogicalResourceId": logical_id,
        "ResourceType": resource_type, "ResourceProperties": {"ServiceToken": function_arn, **properties}}
    if physical_id is not None:
        event["PhysicalResourceId"] = physical_id
    return event


#: The attributes a FIFO queue's message adds to an SQS event record.
SQS_FIFO_ATTRIBUTES = ("SequenceNumber", "MessageGroupId", "MessageDeduplicationId")


def sqs_record(message: SqsMessage, queue_arn: str, region: str = "us-east-1") -> SqsRecord:
    """One entry of an SQS event's ``Records``, from a ReceiveMessage message (AttributeNames=All)."""
    attrs = message.get("Attributes", {})
    attributes = {
        "ApproximateReceiveCount": attrs.get("ApproximateReceiveCount", "1"),
        "SentTimestamp": attrs.get("SentTimestamp", "0"),
        "SenderId": attrs.get("SenderId", "AIDAEXAMPLE"),
        "ApproximateFirstReceiveTimestamp": attrs.get("ApproximateFirstReceiveTimestamp", "0"),
    }
    # A FIFO queue's messages also carry these (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html).
    attributes.update({name: attrs[name] for name in SQS_FIFO_ATTRIBUTES if name in attrs})
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": attributes,
        "messageAttributes": lambda_message_attributes(message.get("MessageAttributes", {})),
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def kinesis_record(record: dict, shard_id: str, stream_arn: str, function_arn: str,
                   region: str = "us-east-1") -> KinesisRecord:
    """One entry of a Kinesis event's ``Records``, from a GetRecords record (data base64-encoded)."""
    data = record["Data"]
    arrival: Any = record.get("ApproximateArrivalTimestamp")  # a datetime from boto3, or a number
    return {
        "kinesis": {
            "kinesisSchemaVersion": "1.0",
            "partitionKey": record["PartitionKey"],
            "sequenceNumber": record["SequenceNumber"],
            "data": base64.b64encode(data if isinstance(data, bytes) else str(data).encode()).decode(),
            "approximateArrivalTimestamp": arrival.timestamp() if hasattr(arrival, "timestamp") else arrival,
        },
        "eventSource": "aws:kinesis",
        "eventVersion": "1.0",
        "eventID": f"{shard_id}:{record['SequenceNumber']}",
        "eventName": "aws:kinesis:record",
        "invokeIdentityArn": execution_role_arn(function_arn),
        "awsRegion": region,
        "eventSourceARN": stream_arn,
    }


#: An Amazon MSK event's source; a self-managed Apache Kafka cluster's events say "SelfManagedKafka"
#: (https://docs.aws.amazon.com/lambda/latest/dg/with-msk.html, https://docs.aws.amazon.com/lambda/latest/dg/with-kafka.html).
KAFKA_SOURCES = ("aws:kafka", "SelfManagedKafka")


def kafka_record(topic: str, partition: int, offset: int, timestamp_ms: int, key: bytes,
                 value: bytes, headers: Iterable[tuple[str, bytes]] = ()) -> KafkaRecord:
    """One record of a Kafka event, as AWS's sample MSK event shows it: key and value base64-encoded, the
    timestamp in epoch milliseconds, each header an object of one name whose value is its bytes as a list of
    numbers (https://docs.aws.amazon.com/lambda/latest/dg/with-msk.html)."""
    return {"topic": topic, "partition": partition, "offset": offset, "timestamp": timestamp_ms,
            "timestampType": "CREATE_TIME", "key": base64.b64encode(key).decode(),
            "value": base64.b64encode(value).decode(), "headers": [{name: list(data)} for name, data in headers]}


def _kafka_orders(event: dict) -> Iterator[Order]:
    """The orders of a Kafka event's ``records`` ("topic-partition" -> records), partition by partition."""
    groups = event.get("records")
    if not isinstance(groups, dict):
        raise BadInput("a Kafka event's records is an object of topic-partition lists")
    for name, records in groups.items():
        for record in records if isinstance(records, list) else []:
            where = f"Kafka record {name}@{record.get('offset') if isinstance(record, dict) else '?'}"
            try:
                raw = base64.b64decode((record or {}).get("value") or "", validate=True).decode()
            except (ValueError, AttributeError):
                raise BadInput(f"{where}: its value is not base64") from None
            yield _check_order(_parse_json(raw, where), where)


#: Who deletes an expired item: a TTL deletion's stream record carries this ``userIdentity``
#: (API_streams_Record.html: type "Service", principalId "dynamodb.amazonaws.com").
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


def ddb_stream_record(record: dict, stream_arn: str, region: str = "us-east-1") -> DdbStreamRecord:
    """One entry of a DynamoDB stream event's ``Records``, from a DynamoDB Streams GetRecords record.

    The images stay in DynamoDB JSON, as Lambda delivers them; ``ApproximateCreationDateTime``
    is epoch seconds (the API rounds it down to the second). ``userIdentity`` is there only
    for an item DynamoDB's TTL deleted.
    """
    body = record["dynamodb"]
    created = body.get("ApproximateCreationDateTime")
    created = created.timestamp() if hasattr(created, "timestamp") else created
    dynamodb: StreamImage = {"ApproximateCreationDateTime": float(int(created)) if created is not None else None,
                             "Keys": body["Keys"]}
    if "NewImage" in body:
        dynamodb["NewImage"] = body["NewImage"]
    if "OldImage" in body:
        dynamodb["OldImage"] = body["OldImage"]
    dynamodb.update({"SequenceNumber": body["SequenceNumber"], "SizeBytes": body["SizeBytes"],
                     "StreamViewType": body["StreamViewType"]})
    out: DdbStreamRecord = {
        "eventID": record["eventID"],
        "eventName": record["eventName"],
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": dynamodb,
        "eventSourceARN": stream_arn,
    }
    identity = record.get("userIdentity")
    if identity:
        out["userIdentity"] = {"type": identity.get("Type"), "principalId": identity.get("PrincipalId")}
    return out


def removed_by_ttl(record: Mapping[str, Any]) -> bool:
    """Is this DynamoDB stream record a deletion by DynamoDB's TTL (not by anyone's DeleteItem)?

    Both are ``eventName`` REMOVE; only a TTL deletion carries ``userIdentity`` with type
    "Service" and principalId "dynamodb.amazonaws.com"
    (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_Record.html).
    """
    identity = record.get("userIdentity") if isinstance(record, dict) else None
    return (record.get("eventName") == "REMOVE" and isinstance(identity, dict)
            and identity.get("type") == TTL_IDENTITY["type"]
            and identity.get("principalId") == TTL_IDENTITY["principalId"])


def sns_record(message: dict, timestamp: str, region: str = "us-east-1") -> SnsRecord:
    """One entry of an SNS event's ``Records``: the message as Lambda gets it from a topic.

    ``message`` is what ``adapter.route_sns_lambda_subscriptions`` hands over (subscription, topic,
    message, message_id, subject, attributes). The keys are capitalised (``EventSource``, ``Sns``),
    unlike S3's and SQS's; ``Message`` is the published text, as a string. SNS signs each message;
    a sandbox cannot, so ``Signature`` is a placeholder.
    """
    host = f"https://sns.{region}.amazonaws.com"
    return {
        "EventVersion": "1.0",
        "EventSubscriptionArn": message["subscription"],
        "EventSource": "aws:sns",
        "Sns": {
            "SignatureVersion": "1",
            "Timestamp": timestamp,
            "Signature": "EXAMPLE",
            "SigningCertUrl": f"{host}/SimpleNotificationService-0000000000000000000000000000000.pem",
            "MessageId": message["message_id"],
            "Message": message["message"],
            "MessageAttributes": dict(message.get("attributes") or {}),
            "Type": "Notification",
            "UnsubscribeUrl": f"{host}/?Action=Unsubscribe&SubscriptionArn={message['subscription']}",
            "TopicArn": message["topic"],
            "Subject": message.get("subject"),
        },
    }


def s3_record(record: dict, sequencer: str, request_id: str, host_id: str,
              principal: str = "AWS:AIDAEXAMPLE") -> LambdaEvent:
    """One entry of an S3 notification's ``Records``, completed from moto's copy to AWS's shape.

    moto leaves out who made the request, the response's ids, the bucket's owner and the
    ``sequencer`` (a hexadecimal string that orders the events of one key: a PUT and a DELETE
    carry one). The object ``key`` is URL-encoded, as on AWS ("red flower.jpg" becomes
    "red+flower.jpg"); moto encodes the slashes of a prefix too, which AWS's keys keep as they are.
    """
    s3, obj = record["s3"], record["s3"]["object"]
    key = urllib.parse.quote_plus(urllib.parse.unquote_plus(obj["key"]), safe="/")
    return {
        "eventVersion": record.get("eventVersion", "2.1"),
        "eventSource": "aws:s3",
        "awsRegion": record["awsRegion"],
        "eventTime": record["eventTime"],
        "eventName": record["eventName"],
        "userIdentity": {"principalId": principal},
        "requestParameters": {"sourceIPAddress": "127.0.0.1"},
        "responseElements": {"x-amz-request-id": request_id, "x-amz-id-2": host_id},
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": s3.get("configurationId"),
            "bucket": {"name": s3["bucket"]["name"], "ownerIdentity": {"principalId": "A3NL1KOZZKEXAMPLE"},
                       "arn": s3["bucket"].get("arn") or f"arn:aws:s3:::{s3['bucket']['name']}"},
            "object": {"key": key, "size": obj.get("size"), "eTag": obj.get("eTag"), "sequencer": sequencer},
        },
    }


def execution_role_arn(function_arn: str) -> str:
    """The function's execution role: IAM is global, so its ARN has no region (``arn:aws:iam::ACCOUNT:role/NAME``)."""
    parts = function_arn.split(":")
    account, name = parts[4], parts[6] if len(parts) > 6 else "function"
    return f"arn:aws:iam::{account}:role/{name}-role"


def lambda_message_attributes(attributes: dict) -> dict[str, JsonObject]:
    """SQS message attributes as a Lambda event carries them: lowerCamel keys (``stringValue``, ``dataType``).

    The SQS API says ``StringValue``/``DataType``; the event Lambda builds says ``stringValue``/``dataType``
    (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html). Binary values are base64 text there, as in
    any JSON event; boto3 hands them over decoded, as bytes.
    """
    out: dict[str, JsonObject] = {}
    for name, value in (attributes or {}).items():
        value = value or {}
        binary = value.get("BinaryValue")
        out[name] = {"stringValue": value.get("StringValue"),
                     "binaryValue": None if binary is None else _base64_text(binary),
                     "stringListValues": value.get("StringListValues", []),
                     "binaryListValues": [_base64_text(b) for b in value.get("BinaryListValues", [])],
                     "dataType": value.get("DataType")}
        out[name] = {k: v for k, v in out[name].items() if v is not None}
    return out


def _base64_text(value: bytes | str) -> str:
    """A binary attribute as the JSON event carries it (already text if it came that way)."""
    return value if isinstance(value, str) else base64.b64encode(value).decode()


def _parse_json(text: Any, where: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        shown = text if len(str(text)) <= 60 else str(text)[:57] + "..."
        raise BadInput(f"{where} is not JSON ({exc.__class__.__name__}): {shown!r}") from None


def _check_order(order: Any, where: str) -> Order:
    if not isinstance(order, dict) or "orderId" not in order:
        raise BadInput(f"{where} does not hold an order (a JSON object with orderId): {order!r}")
    return cast(Order, order)  # an object with an orderId: the rest as its producer wrote it


def _stream_image(record: dict, i: int) -> dict:
    """The order a DynamoDB stream record carries: its new image, or for a REMOVE its old one."""
    body = record.get("dynamodb") or {}
    image = "OldImage" if record.get("eventName") == "REMOVE" else "NewImage"
    if image not in body:
        raise BadInput(f"DynamoDB stream record {i} ({record.get('eventName')}) has no {image}; the stream's "
                       f"StreamViewType must include it (NEW_AND_OLD_IMAGES)")
    return plain_item(body[image])


def _orders_of(payload: Any, where: str) -> Iterator[Order]:
    """The orders a message or an object holds: one order, or ``{"orders": [...]}``."""
    if isinstance(payload, dict) and "orderId" not in payload and isinstance(payload.get("orders"), list):
        for order in payload["orders"]:
            yield _check_order(order, where)
    else:
        yield _check_order(payload, where)


def _s3_object(record: dict, i: int) -> tuple[str, bytes]:
    """(where, bytes) of the object an S3 notification names, read with GetObject.

    Inside a handler this is an AWS request like any other: it goes through the world (and its
    faults), and the history shows it. The notification's key is URL-encoded; GetObject wants it plain.
    """
    import boto3
    from botocore.exceptions import ClientError

    s3 = record.get("s3") or {}
    bucket, key = (s3.get("bucket") or {}).get("name"), (s3.get("object") or {}).get("key")
    if not isinstance(bucket, str) or not isinstance(key, str):
        raise BadInput(f"S3 record {i} names no object (it needs s3.bucket.name and s3.object.key)")
    key = urllib.parse.unquote_plus(key)
    where = f"S3 object s3://{bucket}/{key}"
    try:
        return where, _body_bytes(boto3.client("s3", region_name=record.get("awsRegion") or None).get_object(
            Bucket=bucket, Key=key)["Body"])
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("NoSuchKey", "NoSuchBucket", "404"):
            raise
        raise BadInput(f"{where} does not exist: the notification names an object that is gone "
                       f"({exc.response['Error'].get('Code')})") from None


def _body_bytes(body: Any) -> bytes:
    """All of a streaming response body (GetObject's ``Body``).

    Inside an execution environment the response botocore gets carries a raw stream that can be
    iterated (``stream()``) but not read (``sandbox.runtime.environment.guest``), so ``body.read()`` fails
    there; the bytes are then taken from the stream itself.
    """
    raw = getattr(body, "_raw_stream", None)
    if raw is not None and not hasattr(raw, "read"):
        return b"".join(raw.stream())
    return body.read()


def _record_orders(record: dict, i: int) -> Iterator[Order]:
    """The orders one entry of an event's ``Records`` carries (see ``orders_in``)."""
    source = record.get("eventSource", record.get("EventSource"))  # SNS spells it with a capital E
    if source == "aws:sqs":
        yield _check_order(_parse_json(record.get("body"), f"SQS message {record.get('messageId')} body"),
                           f"SQS message {record.get('messageId')}")
    elif source == "aws:kinesis":
        data = record.get("kinesis", {}).get("data", "")
        try:
            raw = base64.b64decode(data, validate=True).decode()
        except ValueError:
            raise BadInput(f"Kinesis record {i} data is not base64") from None
        yield _check_order(_parse_json(raw, f"Kinesis record {record['kinesis'].get('sequenceNumber')}"),
                           f"Kinesis record {i}")
    elif source == "aws:dynamodb":
        yield _check_order(_stream_image(record, i), f"DynamoDB stream record {i}")
    elif source == "aws:sns":
        sns = record.get("Sns") or {}
        where = f"SNS message {sns.get('MessageId')}"
        yield from _orders_of(_parse_json(sns.get("Message"), where), where)
    elif source == "aws:s3":
        where, body = _s3_object(record, i)
        yield from _orders_of(_parse_json(body, where), where)
    else:
        raise BadInput(f"record {i} has an unknown eventSource {source!r}")


def orders_in(event: Any) -> Iterator[Order]:
    """Yield the orders an event carries, whatever its source.

    Understands EventBridge (``detail.orders`` or ``detail`` itself), SQS and Kinesis
    ``Records`` (JSON bodies; Kinesis data is base64), Kafka ``records`` (MSK or self-managed: a JSON
    order in each base64 value), DynamoDB stream ``Records`` (the item
    as it is now, ``NewImage``, or for a REMOVE as it was, ``OldImage``; see ``removed_by_ttl``
    to tell a TTL deletion from a user's), SNS ``Records`` (the JSON text in ``Sns.Message``: an
    order or ``{"orders": [...]}``), S3 notification ``Records`` (the object the record names,
    read with ``s3.get_object``: it holds an order or ``{"orders": [...]}``), HTTP requests through
    API Gateway, a function URL or a load balancer (a JSON body: an order, or a cart ``{"orders": [...]}``),
    CloudFormation custom resource requests (``ResourceProperties``: an order or ``{"orders": [...]}``)
    and a bare order dict. Anything else raises ``BadInput`` naming what was wrong.
    """
    if not isinstance(event, dict):
        raise BadInput(f"an event is a JSON object (dict), got {type(event).__name__}")
    if "Records" in event:
        for i, record in enumerate(event["Records"]):
            yield from _record_orders(record, i)
        return
    if event.get("eventSource") in KAFKA_SOURCES:
        yield from _kafka_orders(event)
        return
    if "RequestType" in event and "ResourceProperties" in event:  # a CloudFormation custom resource request
        yield from _orders_of(event["ResourceProperties"], "custom resource ResourceProperties")
        return
    if "detail-type" in event:
        detail = event.get("detail") or {}
        for order in detail.get("orders", [detail] if "orderId" in detail else []):
            yield _check_order(order, "EventBridge detail")
        return
    if "httpMethod" in event or "requestContext" in event:
        yield from _orders_of(_parse_json(event.get("body"), "HTTP request body"), "HTTP request body")
        return
    if "orderId" in event:
        yield cast(Order, event)  # a bare order: an object with an orderId, the rest as its sender wrote it
        return
    raise BadInput(f"cannot find orders in this event (keys: {sorted(event)})")

"""The event records the sandbox builds as AWS does, each a TypedDict of AWS's fields.

AWS fixes these shapes and ``sandbox.events`` builds them, so a key spelt another way than AWS spells it is a type
error there, not an event a handler cannot read. They stay plain dicts: a handler gets them as JSON. What is nested
and copied through from another document unread (an image, message attributes) stays a plain object.
"""
from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from ..core.jsonvalues import DynamoItem, JsonObject


class SqsMessage(TypedDict, total=False):
    """A message as SQS's ReceiveMessage returns it, what an ``SqsRecord`` is made from
    (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_Message.html: every member optional)."""

    MessageId: str
    ReceiptHandle: str
    MD5OfBody: str
    Body: str
    Attributes: dict[str, str]
    MD5OfMessageAttributes: str
    MessageAttributes: JsonObject


class SqsRecord(TypedDict):
    """One entry of an SQS event's ``Records`` (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html)."""

    messageId: str
    receiptHandle: str
    body: str
    attributes: dict[str, str]
    messageAttributes: dict[str, JsonObject]
    md5OfBody: str
    eventSource: Literal["aws:sqs"]
    eventSourceARN: str
    awsRegion: str


class KinesisData(TypedDict):
    kinesisSchemaVersion: str
    partitionKey: str
    sequenceNumber: str
    data: str
    approximateArrivalTimestamp: Any  # a number, as boto3 hands it over or as the sandbox wrote it


class KinesisRecord(TypedDict):
    """One entry of a Kinesis event's ``Records`` (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html)."""

    kinesis: KinesisData
    eventSource: Literal["aws:kinesis"]
    eventVersion: str
    eventID: str
    eventName: str
    invokeIdentityArn: str
    awsRegion: str
    eventSourceARN: str


class KafkaRecord(TypedDict):
    """One record of a Kafka event (https://docs.aws.amazon.com/lambda/latest/dg/with-msk.html)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestampType: str
    key: str
    value: str
    headers: list[dict[str, list[int]]]


class StreamImage(TypedDict, total=False):
    """A DynamoDB stream record's ``dynamodb`` (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html).

    No key is required only so that it can be built in AWS's order, the images between the keys and the sequence
    number; ``events.ddb_stream_record`` writes every key but the images."""

    ApproximateCreationDateTime: float | None
    Keys: DynamoItem
    NewImage: DynamoItem
    OldImage: DynamoItem
    SequenceNumber: str
    SizeBytes: int
    StreamViewType: str


class StreamIdentity(TypedDict):
    """Who deleted an item: only a TTL deletion's record carries it (API_streams_Record.html)."""

    type: str | None
    principalId: str | None


class DdbStreamRecord(TypedDict):
    """One entry of a DynamoDB stream event's ``Records`` (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html)."""

    eventID: str
    eventName: str
    eventVersion: str
    eventSource: Literal["aws:dynamodb"]
    awsRegion: str
    dynamodb: StreamImage
    eventSourceARN: str
    userIdentity: NotRequired[StreamIdentity]


class SnsMessage(TypedDict):
    """An SNS record's ``Sns`` (https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html)."""

    SignatureVersion: str
    Timestamp: str
    Signature: str
    SigningCertUrl: str
    MessageId: str
    Message: str
    MessageAttributes: JsonObject
    Type: str
    UnsubscribeUrl: str
    TopicArn: str
    Subject: str | None


class SnsRecord(TypedDict):
    """One entry of an SNS event's ``Records`` (https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html)."""

    EventVersion: str
    EventSubscriptionArn: str
    EventSource: Literal["aws:sns"]
    Sns: SnsMessage


#: An EventBridge event (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html):
#: ``detail-type`` is no Python name, hence the functional form.
EventBridgeEvent = TypedDict("EventBridgeEvent", {
    "version": str, "id": str, "detail-type": str, "source": str, "account": str, "time": str, "region": str,
    "resources": list[str], "detail": JsonObject})


class CustomResourceEvent(TypedDict):
    """A CloudFormation custom resource request
    (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-requests.html)."""

    RequestType: str
    ServiceToken: str
    ResponseURL: str
    StackId: str
    RequestId: str
    LogicalResourceId: str
    ResourceType: str
    ResourceProperties: JsonObject
    PhysicalResourceId: NotRequired[str]


class ApiGatewayRequestContext(TypedDict):
    requestId: str
    stage: str
    httpMethod: str
    path: str


class ApiGatewayProxyEvent(TypedDict):
    """A REST API's proxy integration event (https://docs.aws.amazon.com/lambda/latest/dg/services-apigateway.html)."""

    resource: str
    path: str
    httpMethod: str
    headers: dict[str, str]
    queryStringParameters: dict[str, str] | None
    pathParameters: dict[str, str] | None
    requestContext: ApiGatewayRequestContext
    body: str
    isBase64Encoded: bool


class FunctionUrlHttp(TypedDict):
    method: str
    path: str
    protocol: str
    sourceIp: str
    userAgent: str


class FunctionUrlRequestContext(TypedDict):
    accountId: str
    apiId: str
    domainName: str
    domainPrefix: str
    http: FunctionUrlHttp
    requestId: str
    routeKey: str
    stage: str
    time: str
    timeEpoch: int


class FunctionUrlEvent(TypedDict):
    """A function URL's event: API Gateway's payload format 2.0 (https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html)."""

    version: str
    routeKey: str
    rawPath: str
    rawQueryString: str
    headers: dict[str, str]
    requestContext: FunctionUrlRequestContext
    body: str
    pathParameters: dict[str, str] | None
    isBase64Encoded: bool
    stageVariables: dict[str, str] | None


class AlbTargetGroup(TypedDict):
    targetGroupArn: str


class AlbRequestContext(TypedDict):
    elb: AlbTargetGroup


class AlbEvent(TypedDict):
    """An Application Load Balancer's event, multi-value headers off
    (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/lambda-functions.html)."""

    requestContext: AlbRequestContext
    httpMethod: str
    path: str
    queryStringParameters: dict[str, str]
    headers: dict[str, str]
    body: str
    isBase64Encoded: bool


#: The event an HTTP front (API Gateway, a function URL, a load balancer) builds from one request.
HttpEvent = ApiGatewayProxyEvent | FunctionUrlEvent | AlbEvent


#: One entry of a batch a shard's poller hands over: a Kinesis, Kafka or DynamoDB stream record.
ShardRecord = KinesisRecord | KafkaRecord | DdbStreamRecord

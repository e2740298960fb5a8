"""The world reads each request's service and operation from the request itself (sandbox/aws/operations.py).

Every request botocore builds, for any operation of the services the sandbox serves, reads back as that
operation; a request that names its operation twice, or is signed for another service, is refused; and
one that names an operation its service lacks gets AWS's own error from the world, recorded.
"""
from __future__ import annotations

import gzip
import json

import boto3
import botocore.session
import pytest
from botocore.awsrequest import AWSPreparedRequest
from botocore.config import Config
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sandbox import Sandbox
from sandbox.aws import adapter
from sandbox.aws.gateway import UNKNOWN_OPERATION, malformed, request_params
from sandbox.aws.operations import RequestRefused, identify, service_model
from sandbox.vocab import AWS_OK

#: The services the sandbox serves (botocore's names).
SERVED = ["dynamodb", "dynamodbstreams", "sqs", "sns", "s3", "kinesis", "events", "stepfunctions", "lambda"]


class _Built(Exception):
    """Raised from before-send: the request botocore built, never sent."""

    def __init__(self, request):
        self.request = request


def _capture(request=None, **_):
    raise _Built(request)


_session = botocore.session.get_session()
_session.set_credentials("testing", "testing")
_session.register("before-send", _capture)
_clients: dict[str, object] = {}


def built(service: str, operation: str, params: dict) -> AWSPreparedRequest:
    """The request a botocore client builds for ``operation`` with ``params`` (nothing is sent)."""
    if service not in _clients:
        _clients[service] = _session.create_client(service, region_name="us-east-1",
                                                   config=Config(retries={"total_max_attempts": 1}))
    try:
        getattr(_clients[service], botocore.xform_name(operation))(**params)
    except _Built as done:
        return done.request
    raise AssertionError("botocore sent nothing")


_WORD = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=3, max_size=12)


def _value(shape, depth: int = 0):
    """A strategy for a value of ``shape`` with its required members (enough for botocore to build it)."""
    kind = shape.type_name
    if kind == "structure":
        required = {m: _value(shape.members[m], depth + 1) for m in shape.required_members} if depth < 4 else {}
        return st.fixed_dictionaries(required)
    if kind == "list":
        return st.lists(_value(shape.member, depth + 1), min_size=1, max_size=1) if depth < 4 else st.just([])
    if kind == "map":
        return st.just({})
    if kind == "string":
        return st.sampled_from(shape.enum) if shape.enum else _WORD
    if kind in ("integer", "long"):
        return st.integers(1, 5)
    if kind in ("double", "float"):
        return st.just(1.0)
    if kind == "boolean":
        return st.booleans()
    if kind == "blob":
        return st.just(b"{}")
    if kind == "timestamp":
        return st.just(0)
    return st.just({})


def _operations():
    for service in SERVED:
        model = _session.get_service_model(service)
        for name in model.operation_names:
            yield service, name


@st.composite
def requests(draw):
    service, name = draw(st.sampled_from(sorted(_operations())))
    shape = _session.get_service_model(service).operation_model(name).input_shape
    params = draw(_value(shape)) if shape is not None else {}
    try:
        request = built(service, name, params)
    except _Built:
        raise
    except Exception:  # an ARN it needs, a bucket name it refuses: botocore would not send it either
        assume(False)
    return service, name, request


def _twins(service: str, a: str, b: str) -> bool:
    """Two operations one wire format cannot tell apart: one deprecated, the other its successor at the same
    address (S3's PutBucketLifecycle and PutBucketLifecycleConfiguration)."""
    model = service_model(service)
    assert model is not None
    first, second = model.operation_model(a), model.operation_model(b)
    return first.http == second.http and (first.deprecated or second.deprecated)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(requests())
def test_every_request_botocore_builds_reads_back_as_its_own_operation(case):
    service, name, request = case
    model = service_model(service)
    assert model is not None
    try:
        found = identify(request)
    except RequestRefused:
        # Only a request to an address no moto backend serves, or one signed for another name than the service's
        # (S3 Object Lambda, S3 Express), which AWS serves at endpoints of their own: never a mislabelled one.
        scope = request.headers.get("Authorization", b"").decode()
        assert adapter.moto_service(request.url) is None or f"/{model.signing_name}/aws4_request" not in scope
        return
    assert found.service == model.service_id.hyphenize()
    assert found.name == name or _twins(service, name, str(found.name)), (request.method, request.url, found)


def test_every_operation_of_the_served_services_is_tried():
    """The property above draws from every operation (a guard against a strategy that quietly shrinks)."""
    assert len(list(_operations())) > 400


# -- what a hostile environment can put in a request -------------------------------------------------
def _put_item(**changes) -> AWSPreparedRequest:
    request = built("dynamodb", "PutItem", {"TableName": "t", "Item": {"pk": {"S": "k"}}})
    for key, value in changes.items():
        setattr(request, key, value)
    return request


def test_the_target_header_names_the_operation_not_the_label():
    assert identify(_put_item()).name == "PutItem"
    request = _put_item()
    request.headers["X-Amz-Target"] = "DynamoDB_20120810.PutItemX"
    found = identify(request)
    assert (found.service, found.name, found.named) == ("dynamodb", None, "DynamoDB_20120810.PutItemX")


def test_an_action_moto_would_prefer_is_refused():
    """moto runs the Action of a URL query, a header, or a body read as a query string before X-Amz-Target."""
    request = _put_item(url="https://dynamodb.us-east-1.amazonaws.com/?Action=DeleteTable")
    with pytest.raises(RequestRefused, match="DeleteTable"):
        identify(request)
    request = _put_item()
    request.headers["Action"] = "DeleteTable"
    with pytest.raises(RequestRefused, match="DeleteTable"):
        identify(request)
    item = {"pk": {"S": "k"}, "v": {"S": "&Action=GetItem&"}}  # moto would run GetItem with this body
    request = built("dynamodb", "PutItem", {"TableName": "t", "Item": item})
    with pytest.raises(RequestRefused, match="GetItem"):
        identify(request)


def test_a_request_signed_for_another_service_is_refused():
    request = _put_item()
    auth = request.headers["Authorization"]
    request.headers["Authorization"] = auth.replace(b"/dynamodb/aws4_request", b"/sqs/aws4_request")
    with pytest.raises(RequestRefused, match="signed for 'sqs'"):
        identify(request)


def test_a_target_of_another_service_at_this_address_is_no_operation_of_it():
    request = _put_item()
    request.headers["X-Amz-Target"] = "DynamoDBStreams_20120810.GetRecords"
    assert identify(request).name is None


def test_a_form_body_sent_to_a_json_only_service_is_refused():
    request = _put_item(body=b"Action=PutItem&TableName=t")
    request.headers["Content-Type"] = "application/x-www-form-urlencoded"
    with pytest.raises(RequestRefused, match="query protocol"):
        identify(request)


def test_a_gzip_body_is_read_as_moto_reads_it():
    request = _put_item()
    request.body = gzip.compress(request.body)
    request.headers["Content-Encoding"] = "gzip"
    found = identify(request)
    assert request_params(found, request)["TableName"] == "t"
    request.body = gzip.compress(b"{" * 10) + b"junk"
    with pytest.raises(RequestRefused, match="gzip"):
        identify(request)


@pytest.mark.parametrize("body", [b"[[" * 50_000 + b"]]" * 50_000, b"[1]", b"{not json",
                                  json.dumps({"TableName": {"S": "t"}, "Item": []}).encode()])
def test_a_body_the_model_does_not_shape_is_answered_not_served(body):
    request = _put_item(body=body)
    found = identify(request)
    status, _, answer = malformed(found, request_params(found, request))
    assert status == 400 and json.loads(answer)["__type"].endswith(("SerializationException", "ValidationException"))


def test_a_query_protocol_action_is_read_from_the_form():
    request = built("sns", "Publish", {"TopicArn": "arn:aws:sns:us-east-1:123456789012:t", "Message": "m"})
    assert identify(request).name == "Publish"
    request.body = request.body.replace("Action=Publish", "Action=Publish&Action=DeleteTopic")
    with pytest.raises(RequestRefused, match="DeleteTopic"):  # moto would run the first; the world runs neither
        identify(request)


def test_lambda_and_s3_are_read_from_method_and_path():
    invoke = built("lambda", "Invoke", {"FunctionName": "f", "Payload": b"{}"})
    assert identify(invoke).name == "Invoke"
    parts = built("s3", "ListParts", {"Bucket": "bucket", "Key": "k", "UploadId": "u"})
    assert identify(parts).name == "ListParts"
    assert identify(built("s3", "GetObject", {"Bucket": "bucket", "Key": "a/b"})).name == "GetObject"


def test_an_unknown_operation_gets_aws_error_and_a_record():
    """In the world: the client hears UnknownOperationException, the history says what was asked, moto runs nothing."""
    with Sandbox(seed=0) as sb:
        client = boto3.client("dynamodb")

        def rename(request=None, **_):
            request.headers["X-Amz-Target"] = "DynamoDB_20120810.PutItemX"

        client.meta.events.register_first("before-sign.dynamodb.PutItem", rename)
        with pytest.raises(ClientError) as raised:
            client.put_item(TableName=sb.table_name, Item={"pk": {"S": "k"}})
        assert raised.value.response["Error"]["Code"] == "UnknownOperationException"
        [record] = [e for e in sb.history.of_type("aws") if e["op"] == UNKNOWN_OPERATION]
        assert record["result"] == "UnknownOperation" and record["detail"]["named"] == "DynamoDB_20120810.PutItemX"
        assert "Item" not in client.get_item(TableName=sb.table_name, Key={"pk": {"S": "k"}})


def test_the_worlds_own_hook_reads_the_request_not_its_event_name():
    """``gateway.dispatch`` (the before-send hook of every client in the world: sources, notebooks, thread mode)
    derives the operation the same way as an environment's request: botocore's event name is a label too."""
    from sandbox.aws.gateway import dispatch

    with Sandbox(seed=0) as sb:
        request = built("dynamodb", "PutItem", {"TableName": sb.table_name, "Item": {"pk": {"S": "k"}}})
        dispatch("before-send.dynamodb.GetItem", request)
        [record] = [e for e in sb.history.of_type("aws") if e["service"] == "dynamodb"]
        assert (record["op"], record["key"]) == ("PutItem", "k")


def test_a_form_that_names_a_parameter_twice_is_answered_not_served():
    """moto would publish to the first TopicArn; the history, the fault plan and the footprints would read the
    last. Neither happens: the world answers it as a malformed query string."""
    request = built("sns", "Publish", {"TopicArn": "arn:aws:sns:us-east-1:123456789012:a", "Message": "m"})
    request.body += "&TopicArn=arn%3Aaws%3Asns%3Aus-east-1%3A123456789012%3Ab"
    found = identify(request)
    status, _, answer = malformed(found, request_params(found, request))
    assert status == 404 and b"<Code>MalformedQueryString</Code>" in answer


def test_sns_and_s3_clients_hear_their_own_services_errors_for_an_operation_they_lack():
    """The world's answer parses in botocore as the service's own: SNS's InvalidAction, S3's MethodNotAllowed."""
    with Sandbox(seed=0):
        sns = boto3.client("sns")
        sns.meta.events.register_first("before-sign.sns.ListTopics", lambda request=None, **_: request.data.update(
            Action="ListTopicsX"))
        with pytest.raises(ClientError) as raised:
            sns.list_topics()
        assert raised.value.response["Error"]["Code"] == "InvalidAction"
        s3 = boto3.client("s3")
        s3.meta.events.register_first("before-sign.s3.ListBuckets", lambda request=None, **_: setattr(
            request, "method", "PATCH"))
        with pytest.raises(ClientError) as raised:
            s3.list_buckets()
        assert raised.value.response["Error"]["Code"] == "MethodNotAllowed"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(iterator=st.text(min_size=1, max_size=300).filter(lambda s: s.strip() == s and "\x00" not in s))
def test_a_made_up_shard_iterator_is_an_error_the_caller_can_catch(iterator):
    """moto 5 looks a DynamoDB Streams iterator up in a dict: a made-up one raised KeyError out of moto, which
    reached the handler as a crash, not the ClientError AWS gives (a handler's except clause never saw it)."""
    with Sandbox(seed=0) as sb:
        for service, code in (("dynamodbstreams", "ValidationException"), ("kinesis", "InvalidArgumentException")):
            with pytest.raises(ClientError) as raised:
                boto3.client(service).get_records(ShardIterator=iterator)
            assert raised.value.response["Error"]["Code"] == code
        results = [e["result"] for e in sb.history.of_type("aws") if e["op"] == "GetRecords"]
        assert len(results) == 2 and all(r != AWS_OK for r in results)


def test_a_failure_inside_moto_is_the_sandboxs_internal_failure(monkeypatch):
    """Any other exception moto raises is answered as AWS answers its own failures (InternalFailure, 500), named
    as the sandbox's, never passed to the handler as a crash of its own code."""
    from moto.dynamodb.responses import DynamoHandler

    def broken(self):
        raise RuntimeError("moto broke")

    monkeypatch.setattr(DynamoHandler, "describe_table", broken)
    with Sandbox(seed=0) as sb:
        client = boto3.client("dynamodb", config=Config(retries={"mode": "standard", "max_attempts": 1}))
        with pytest.raises(ClientError) as raised:
            client.describe_table(TableName=sb.table_name)
        error = raised.value.response["Error"]
        assert error["Code"] == "InternalFailure" and "sandbox's failure" in error["Message"]
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500

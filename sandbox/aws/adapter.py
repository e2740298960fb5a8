"""Every reach into moto's and botocore's internals, in one module.

Nothing here is patched at import time. ``install`` puts the sandbox's hooks in place when
a world opens, and ``uninstall`` takes every one of them out again when it closes, so a
plain boto3 client made after that behaves exactly as if the sandbox had never run:

- botocore's built-in handlers gain a ``before-send`` hook (every request of every client
  made meanwhile goes to the world's gateway instead of the network) and a
  ``before-call`` hook (it notes the calling client's read timeout, which the sandbox's own
  Lambda endpoint honours);
- ``botocore.endpoint.Endpoint._send`` refuses to send anything: a request that slipped
  past the gateway (a client made before the world opened) never leaves the machine;
- a caller's own ``mock_aws()`` is silenced, or its stubber would run each request twice;
- ``time.sleep`` becomes the world's virtual sleep;
- every client of a service gets the same parsed service model and endpoint ruleset (see
  ``parsecache.SharedParse``): both are built from the same JSON and never change, but botocore parses
  them again for each client, which made up about a quarter of a container's cold start;
- once a world asks for it (``route_lambda_targets``), an EventBridge rule's Lambda-function
  targets go to the sandbox, which plays that part of EventBridge: moto's EventBridge delivers
  only to logs, SQS, archives and event buses, and raises for a Lambda target; likewise an SNS
  topic's Lambda subscriptions and an S3 bucket's Lambda notifications (``route_sns_lambda_subscriptions``,
  ``route_s3_lambda_notifications``), which moto hands to a Lambda backend that knows no sandbox function.

It also owns what the sandbox reads from moto directly: resetting every backend, serving
a request, looking inside an SQS queue or a stream without making a request, putting back the
copy of a message that a DeleteMessage missed (SQS's at-least-once delivery), and marking a
TTL deletion's stream record as DynamoDB's own.
"""
from __future__ import annotations

import copy
import functools
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict

import boto3
import botocore.client
import botocore.endpoint
import botocore.handlers
import botocore.loaders
import botocore.regions
import botocore.session
from botocore.awsrequest import AWSResponse
from botocore.endpoint import DEFAULT_TIMEOUT
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.base_backend import BackendDict
from moto.core.botocore_stubber import MockRawResponse
from moto.core.model_instances import reset_model_data
from moto.core.models import botocore_stubber
from moto.moto_api._internal import mock_random

from ..errors import RealAwsRefused
from .parsecache import SharedParse

if TYPE_CHECKING:
    from botocore.awsrequest import AWSPreparedRequest

#: One lock for every request of every world: moto's backends are process-global and moto
#: itself reads, checks and writes with no lock (its FAQ: not thread safe).
AWS_LOCK = threading.RLock()

_calling = threading.local()
class _Saved(TypedDict, total=False):
    """What ``install`` replaced, kept to put back: each a library's own (botocore's, boto3's, time's)."""

    hooks: list[tuple[str, Callable[..., Any]]]
    stubber: Any
    sleep: Callable[..., None]
    send: Callable[..., Any]
    session: Any
    setup: Callable[..., Any]


_saved: _Saved = {}
_original_send = botocore.endpoint.Endpoint._send


def _note_read_timeout(context: dict | None = None, **_: Any) -> None:
    """before-call: remember the calling client's read timeout on this thread (every retry runs here)."""
    config = (context or {}).get("client_config")
    _calling.read_timeout = getattr(config, "read_timeout", None)


def client_read_timeout() -> float:
    """The read timeout of the client whose request is being served on this thread (botocore's default 60 s)."""
    value = getattr(_calling, "read_timeout", None)
    return float(value) if value is not None else float(DEFAULT_TIMEOUT)


def _refuse_send(self: Any, request: AWSPreparedRequest) -> NoReturn:
    raise RealAwsRefused(
        f"refused to send {request.method} {request.url} to the network: inside a sandbox world every AWS "
        "request must be answered locally (was this client created before the world opened?)")


def install(dispatch: Callable[..., Any], sleep: Callable[[float], None], region: str = "us-east-1") -> None:
    """Put the sandbox's hooks in place (see the module docstring)."""
    if _saved:
        raise RuntimeError("the sandbox's hooks are already installed")
    hooks = [("before-send", dispatch), ("before-call", _note_read_timeout)]
    _saved["hooks"], _saved["stubber"], _saved["sleep"] = hooks, botocore_stubber.enabled, time.sleep
    _saved["send"], _saved["session"] = botocore.endpoint.Endpoint._send, boto3.DEFAULT_SESSION
    _saved["setup"] = boto3.setup_default_session
    botocore.handlers.BUILTIN_HANDLERS.extend(hooks)
    _SHARED_PARSE.install()
    botocore.endpoint.Endpoint._send = _refuse_send
    botocore_stubber.enabled = False
    time.sleep = sleep  # type: ignore[assignment]  # the world's sleep: seconds as a float, as handlers pass
    # boto3's default session is the shared one, made on first use: a run that builds no
    # client never pays for a botocore session.
    boto3.DEFAULT_SESSION = _sessions.get(region)
    boto3.setup_default_session = lambda **_: _use_shared_session(region)


def uninstall() -> None:
    """Take every hook out again; a no-op if none is installed."""
    _unroute_lambda_targets()
    _unroute_services()
    if not _saved:
        return
    for hook in _saved["hooks"]:
        while hook in botocore.handlers.BUILTIN_HANDLERS:
            botocore.handlers.BUILTIN_HANDLERS.remove(hook)
    _SHARED_PARSE.uninstall()
    botocore.endpoint.Endpoint._send = _saved["send"]
    botocore_stubber.enabled = _saved["stubber"]
    time.sleep = _saved["sleep"]
    boto3.DEFAULT_SESSION = _saved["session"]
    boto3.setup_default_session = _saved["setup"]
    # every key goes: an empty _saved says the hooks are not installed
    _saved.pop("hooks", None)
    _saved.pop("stubber", None)
    _saved.pop("sleep", None)
    _saved.pop("send", None)
    _saved.pop("session", None)
    _saved.pop("setup", None)


def real_sleep(seconds: float) -> None:
    """The wall-clock sleep, whatever ``time.sleep`` currently is."""
    (_saved.get("sleep") or time.sleep)(seconds)


_SHARED_PARSE = SharedParse(lambda: _loader)


# -- sessions shared by every world ------------------------------------------------------------
_loader: Any = None  # botocore's data loader, shared by the worlds' sessions (made on first use)
_sessions: dict[str, boto3.Session] = {}


def boto3_session(region: str) -> boto3.Session:
    """The boto3 session worlds in ``region`` share.

    botocore parses its JSON service models and registers its built-in handlers once per
    session; sharing one (and its loader) makes a fresh world cost milliseconds. Nothing in
    it belongs to a world: credentials are the sandbox's fake ones, and requests go to
    whichever world is open. It is made while the hooks are installed, so it carries them
    (a session made outside a world would send its requests to the network, refused).
    """
    if region not in _sessions:
        if not _saved:
            raise RuntimeError("the sandbox's shared boto3 session is made inside an open world")
        core = botocore.session.get_session()
        core.register_component("data_loader", shared_loader())
        _sessions[region] = boto3.Session(botocore_session=core, region_name=region)
    return _sessions[region]


_clients: dict[tuple[str, str], Any] = {}


def shared_client(region: str, service: str) -> Any:
    """A client worlds share for the sandbox's own requests (queues, pollers, the TTL sweeper).

    A client holds nothing of a world: each request goes to whichever world is open.
    """
    if (region, service) not in _clients:
        _clients[(region, service)] = boto3_session(region).client(service)
    return _clients[(region, service)]


def _use_shared_session(region: str) -> None:
    boto3.DEFAULT_SESSION = boto3_session(region)


def shared_loader() -> Any:
    """botocore's loader that worlds share (parsed service models, cached); any session may use it."""
    global _loader
    if _loader is None:
        _loader = botocore.loaders.create_loader()
    return _loader


# -- moto's side -------------------------------------------------------------------------------
def reset_aws(seed: int | None = None) -> None:
    """Empty every moto backend; with a seed, moto's ids (message ids, ...) repeat too."""
    with AWS_LOCK:
        BackendDict.reset()
        if seed is None:
            reset_model_data()
    if seed is not None:
        mock_random.seed(seed)


def create_table(region: str, request: dict, ttl_request: dict) -> None:
    """Create a table in moto directly, as CreateTable and UpdateTimeToLive would.

    Going through the API would parse DynamoDB's service model twice (botocore's and moto's
    copy) on a world's first open, about 0.35 s that a run with no DynamoDB call never needs.
    """
    from moto.dynamodb.models import dynamodb_backends

    with AWS_LOCK:
        backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][region]
        billing = request.get("BillingMode", "PROVISIONED")
        backend.create_table(request["TableName"], schema=request["KeySchema"], throughput=None,
                             attr=request["AttributeDefinitions"], global_indexes=[], indexes=[], streams=None,
                             billing_mode=billing, sse_specification=None, tags=[],
                             deletion_protection_enabled=False, warm_throughput=None)
        backend.update_time_to_live(ttl_request["TableName"], ttl_request["TimeToLiveSpecification"])


def _dynamodb_table(region: str, table: str) -> Any:
    from moto.dynamodb.models import dynamodb_backends

    return dynamodb_backends[DEFAULT_ACCOUNT_ID][region].get_table(table)


def item_key(region: str, table: str, item_or_key: dict) -> dict | None:
    """The key attributes (DynamoDB JSON) of an item or key, by the table's key schema; None if unknown."""
    with AWS_LOCK:
        try:
            t = _dynamodb_table(region, table)
        except Exception:  # no such table: the request itself will fail and say so
            return None
    names = [t.hash_key_attr] + ([t.range_key_attr] if t.range_key_attr else [])
    if not all(n in item_or_key for n in names):
        return None
    return {n: item_or_key[n] for n in names}


def stored_item(region: str, table: str, key: dict) -> dict | None:
    """The item as moto holds it now (DynamoDB JSON), read without a request; None if absent."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    with AWS_LOCK:
        try:
            t = _dynamodb_table(region, table)
        except Exception:
            return None
        hash_key = DynamoType(key[t.hash_key_attr])
        range_key = DynamoType(key[t.range_key_attr]) if t.range_key_attr else None
        item = t.get_item(hash_key, range_key)
        return None if item is None else item.to_json()["Attributes"]



def insert_item(region: str, table: str, item: dict, check_only: bool = False) -> tuple[str, str] | None:
    """PartiQL's INSERT as DynamoDB runs it: put ``item`` unless the table holds its key.

    Returns None when it was put (or, with ``check_only``, would be), else (error code, message):
    ``DuplicateItemException`` with AWS's message when the key is taken, and moto's own refusal for a
    missing table, a missing key attribute or a key of the wrong type. moto's ExecuteStatement puts
    with no condition, so a second INSERT of a key overwrites the first (see ``partiql``).
    """
    from moto.core.exceptions import JsonRESTError
    from moto.dynamodb.exceptions import ConditionalCheckFailed
    from moto.dynamodb.models import dynamodb_backends

    from .partiql import DUPLICATE_ITEM, DUPLICATE_MESSAGE

    with AWS_LOCK:
        backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][region]
        try:
            t = backend.get_table(table)
            names = {f"#k{i}": n for i, n in enumerate([t.hash_key_attr, t.range_key_attr]) if n}
            if check_only:
                missing = [n for n in names.values() if n not in item]
                if missing:
                    return ("ValidationException",
                            f"One or more parameter values were invalid: Missing the key {missing[0]} in the item")
                return (DUPLICATE_ITEM, DUPLICATE_MESSAGE) if item_exists(region, table, item) else None
            absent = " AND ".join(f"attribute_not_exists({k})" for k in names)
            backend.put_item(table, item, condition_expression=absent, expression_attribute_names=names)
        except ConditionalCheckFailed:
            return DUPLICATE_ITEM, DUPLICATE_MESSAGE
        except JsonRESTError as e:
            return e.error_type.rsplit("#", 1)[-1], e.message
    return None


def item_exists(region: str, table: str, item: dict) -> bool:
    """Does ``table`` hold an item with ``item``'s key (DynamoDB JSON)?"""
    key = item_key(region, table, item)
    return key is not None and stored_item(region, table, key) is not None


def partiql_statement(region: str, op: str, statement: dict) -> Any:
    """moto's answer to one PartiQL statement that is not an INSERT, served without a request.

    ``op`` is "batch" (one BatchStatementResponse) or "transaction" (its item responses). A moto
    refusal comes back as (error code, message) for a transaction, and inside the response for a batch.
    """
    from moto.core.exceptions import JsonRESTError
    from moto.dynamodb.models import dynamodb_backends

    with AWS_LOCK:
        backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][region]
        if op == "batch":
            return backend.batch_execute_statement([statement])[0]
        try:
            return backend.execute_transaction([statement])
        except JsonRESTError as e:
            return e.error_type.rsplit("#", 1)[-1], e.message

#: botocore sends a DynamoDB Streams request that names a stream (DescribeStream,
#: GetShardIterator) to the stream's account endpoint, https://ACCOUNT.streams-ddb.REGION...
#: (its endpoint rules, from AccountId or the StreamArn); moto 5.2 only knows the regional
#: https://streams.dynamodb.REGION..., so it would answer 404 "Not yet implemented".
_ACCOUNT_STREAMS_HOST = re.compile(r"^(https?://)\d{12}\.streams-ddb\.")


def moto_url(url: str) -> str:
    """The URL moto serves a request on: account-based DynamoDB Streams endpoints as the regional one."""
    return _ACCOUNT_STREAMS_HOST.sub(r"\1streams.dynamodb.", url)


@functools.lru_cache(maxsize=256)  # an environment chooses its URLs (up to 16 KB each): keep few
def moto_service(url: str) -> str | None:
    """The moto backend that serves ``url`` (its name: ``dynamodb``, ``awslambda``), as ``serve`` picks it: the
    first of moto's URL patterns that matches the address, its query left out; None if none does."""
    import moto.backend_index as backend_index
    from moto.core.utils import get_equivalent_url_in_aws_domain

    parsed, _ = get_equivalent_url_in_aws_domain(moto_url(url))
    clean = f"{parsed.scheme}://{parsed.netloc}{parsed.path}"
    return next((name for name, pattern in backend_index.backend_url_patterns if pattern.match(clean)), None)


def serve(request: AWSPreparedRequest) -> tuple[int, dict, bytes] | None:
    """moto's answer to a prepared botocore request (None: moto has no such service)."""
    url = moto_url(request.url)
    if url != request.url:
        request = copy.copy(request)  # botocore keeps its own request as it was
        request.url = url
    response = botocore_stubber.process_request(request)
    if response is None:
        return None
    status, headers, body = response
    return status, headers, body.encode() if isinstance(body, str) else body


def response(url: str, status: int, headers: dict, body: bytes) -> AWSResponse:
    """An HTTP response botocore parses as if it came off the wire."""
    return AWSResponse(url, status, headers, MockRawResponse(body))


@dataclass(frozen=True)
class QueueMessage:
    """One message of a moto SQS queue, read without a request."""

    id: str
    body: str
    receives: int
    visible_at: float  # epoch milliseconds: hidden until then (moto's visibility)
    delayed_until: float  # epoch milliseconds


def queue_messages(region: str, queue: str) -> list[QueueMessage]:
    """Every message in ``queue`` (visible, in flight or delayed), as moto holds them."""
    with AWS_LOCK:
        q = _sqs_backend(region).get_queue(queue)
        return [QueueMessage(m.id, m.body, m.approximate_receive_count, m.visible_at, m.delayed_until)
                for m in q._messages]


def queue_depth(region: str, queue: str) -> int:
    """How many messages ``queue`` holds: visible, in flight or delayed (what moto's cost grows with)."""
    with AWS_LOCK:
        return len(_sqs_backend(region).get_queue(queue)._messages)


def queue_visible(region: str, queue: str, now_ms: float) -> int:
    """How many messages a ReceiveMessage could return at ``now_ms`` (epoch milliseconds)."""
    # moto's own ``messages`` reads the patched clock once per message; one read will do.
    with AWS_LOCK:
        return sum(1 for m in _sqs_backend(region).get_queue(queue)._messages
                   if m.visible_at < now_ms and m.delayed_until <= now_ms)


@dataclass(frozen=True)
class HeldCopy:
    """A copy of one moto message, taken to be put back into its queue later."""

    info: QueueMessage
    message: Any  # moto's own Message object


def copy_messages(region: str, queue: str, ids: list[str]) -> list[HeldCopy]:
    """Copies of moto's messages ``ids`` in ``queue``, as they are now (in flight, receive count and all)."""
    wanted = set(ids)
    with AWS_LOCK:
        return [HeldCopy(QueueMessage(m.id, m.body, m.approximate_receive_count, m.visible_at, m.delayed_until),
                         copy.deepcopy(m))
                for m in _sqs_backend(region).get_queue(queue)._messages if m.id in wanted]


def put_back(region: str, queue: str, copies: list[HeldCopy]) -> None:
    """Put copies taken with ``copy_messages`` back into ``queue``, as copies a DeleteMessage missed."""
    with AWS_LOCK:
        _sqs_backend(region).get_queue(queue)._messages.extend(c.message for c in copies)


def release_expired(region: str, queue: str) -> None:
    """Take the messages whose visibility timeout has run out off moto's in-flight list of ``queue``.

    moto takes a message off that list only when its receive loop reaches it, so after a FIFO
    batch fails, the group's first message is skipped while the later ones still count as in
    flight, and the group comes back out of order. SQS hands it out again in order.
    """
    with AWS_LOCK:
        q = _sqs_backend(region).get_queue(queue)
        for m in [m for m in q.pending_messages if m.visible]:
            q.pending_messages.discard(m)
# -- EventBridge rules with Lambda targets -------------------------------------------------------
class _EventRoutes(TypedDict, total=False):
    original: Callable[..., Any]  # moto's Rule.send_to_targets
    sink: Callable[..., Any]  # the world's receiver


_event_routes: _EventRoutes = {}


def route_lambda_targets(sink: Callable[[str, dict, dict], None]) -> None:
    """Call ``sink(rule_name, target, event)`` for each event a rule matches for a Lambda-function target.

    The event is a copy of the one moto built (its ``id``, ``time`` as epoch seconds, ``detail``);
    moto still delivers to the rule's other targets. ``uninstall`` (a world closing) undoes it.
    """
    from moto.events.models import Rule

    if "original" not in _event_routes:
        original = Rule.send_to_targets
        _event_routes["original"] = original

        def send_to_targets(rule: Any, original_event: Any, transform_input: bool = True) -> Any:
            receive = _event_routes.get("sink")
            mine = [t for t in rule.targets if _is_lambda_arn(t.get("Arn"))] if receive is not None else []
            if receive is not None and mine and rule.event_pattern.matches_event(original_event):
                for target in mine:
                    receive(rule.name, copy.deepcopy(target), copy.deepcopy(original_event))
            others = [t for t in rule.targets if t not in mine]
            if others:
                kept, rule.targets = rule.targets, others
                try:
                    original(rule, original_event, transform_input)
                finally:
                    rule.targets = kept

        Rule.send_to_targets = send_to_targets  # type: ignore[method-assign, assignment]  # moto's internals, patched
    _event_routes["sink"] = sink


def _is_lambda_arn(arn: Any) -> bool:
    return isinstance(arn, str) and arn.startswith("arn:") and arn.split(":")[2:3] == ["lambda"]


def _unroute_lambda_targets() -> None:
    if "original" in _event_routes:
        from moto.events.models import Rule

        Rule.send_to_targets = _event_routes["original"]  # type: ignore[method-assign]  # moto's, put back
    _event_routes.pop("original", None)
    _event_routes.pop("sink", None)


# -- SNS subscriptions and S3 notifications with Lambda endpoints ---------------------------------
#: per service ("sns", "s3"): moto's own function, and the world's receivers while any is routed (each
#: source of the world filters what it gets: its topic, its bucket)
class _Originals(TypedDict, total=False):
    sns: Callable[..., Any]  # moto's Subscription.publish
    s3: Callable[..., Any]  # moto's notifications._invoke_awslambda


_originals: _Originals = {}
_sinks: dict[str, list[Callable[..., None]]] = {}


def route_sns_lambda_subscriptions(sink: Callable[[dict], None]) -> None:
    """Call ``sink(message)`` for each message a topic delivers to a Lambda-function subscription.

    ``message`` holds ``subscription``, ``topic`` and ``endpoint`` (ARNs), ``message`` (the text, after any
    ``MessageStructure=json`` choice), ``message_id``, ``subject`` and ``attributes`` (moto's ``{"Type",
    "Value"}`` form). moto would hand it to its own Lambda backend, which knows no function of the sandbox's
    and fails the Publish; its filter policies still apply. ``uninstall`` (a world closing) undoes it.
    """
    from moto.sns.models import Subscription

    if "sns" not in _originals:
        original = _originals["sns"] = Subscription.publish

        def publish(sub: Any, message: Any, message_id: Any, subject: Any = None, message_attributes: Any = None,
                    group_id: Any = None, deduplication_id: Any = None, message_structure: Any = None) -> Any:
            receivers = _sinks.get("sns")
            if not receivers or sub.protocol != "lambda":
                return original(sub, message, message_id, subject=subject, message_attributes=message_attributes,
                                group_id=group_id, deduplication_id=deduplication_id,
                                message_structure=message_structure)
            matcher = sub._filter_policy_matcher
            if matcher is not None and not matcher.matches(message_attributes, message):
                return None
            if message_structure == "json":
                message = sub._parse_message_structure(message, sub.protocol)
            for receive in receivers:
                receive({"subscription": sub.arn, "topic": sub.topic_arn, "endpoint": sub.endpoint,
                         "message": message, "message_id": message_id, "subject": subject,
                         "attributes": copy.deepcopy(message_attributes or {})})
            return None

        Subscription.publish = publish  # type: ignore[method-assign, assignment]  # moto's internals, patched
    _sinks.setdefault("sns", []).append(sink)


def route_s3_lambda_notifications(sink: Callable[[str, dict], None]) -> None:
    """Call ``sink(function_arn, event)`` for each event notification a bucket sends to a Lambda function.

    ``event`` is moto's copy (``Records`` with one record, which lacks some of AWS's fields). moto would
    hand it to its own Lambda backend, which knows no function of the sandbox's, and drop it.
    """
    from moto.s3 import notifications

    if "s3" not in _originals:
        original = _originals["s3"] = notifications._invoke_awslambda

        def invoke(account_id: Any, event_body: Any, fn_arn: Any, region_name: Any) -> Any:
            receivers = _sinks.get("s3")
            if not receivers:
                return original(account_id, event_body, fn_arn, region_name)
            for receive in receivers:
                receive(fn_arn, copy.deepcopy(event_body))
            return None

        notifications._invoke_awslambda = invoke
    _sinks.setdefault("s3", []).append(sink)


def _unroute_services() -> None:
    if "sns" in _originals:
        from moto.sns.models import Subscription

        Subscription.publish = _originals["sns"]  # type: ignore[method-assign]  # moto's, put back
    if "s3" in _originals:
        from moto.s3 import notifications

        notifications._invoke_awslambda = _originals["s3"]
    _originals.pop("sns", None)
    _originals.pop("s3", None)
    _sinks.clear()


def s3_object_body(bucket: str, key: str) -> bytes | None:
    """The bytes of an S3 object as moto holds it now, read without a request; None if there is none."""
    from moto.s3.models import s3_backends

    with AWS_LOCK:
        found = s3_backends[DEFAULT_ACCOUNT_ID]["aws"].buckets.get(bucket)
        obj = found.keys.get(key) if found is not None else None
        return getattr(obj, "value", None)


def _sqs_backend(region: str) -> Any:
    from moto.sqs.models import sqs_backends

    return sqs_backends[DEFAULT_ACCOUNT_ID][region]


# -- streams, read without a request -------------------------------------------------------------
def kinesis_record_counts(region: str, stream: str) -> dict[str, int]:
    """How many records each shard of a Kinesis stream holds (moto never trims them)."""
    from moto.kinesis.models import kinesis_backends

    with AWS_LOCK:
        shards = kinesis_backends[DEFAULT_ACCOUNT_ID][region].describe_stream(None, stream).shards
        return {shard.shard_id: len(shard.records) for shard in shards.values()}


def ddb_stream_record_count(region: str, table: str) -> int:
    """How many records a table's DynamoDB stream holds (its one shard; moto never trims it)."""
    with AWS_LOCK:
        shard = _dynamodb_table(region, table).stream_shard
        return len(shard.items) if shard is not None else 0


def kinesis_unread(region: str, iterator: Any) -> int | None:
    """How many records a Kinesis shard iterator would read now (None: not an iterator moto made for a shard here)."""
    from moto.kinesis.exceptions import ResourceNotFoundError, ShardNotFoundError
    from moto.kinesis.models import kinesis_backends
    from moto.kinesis.utils import decompose_shard_iterator

    try:
        stream_name, shard_id, last = decompose_shard_iterator(iterator)
        with AWS_LOCK:
            shard = kinesis_backends[DEFAULT_ACCOUNT_ID][region].describe_stream(None, stream_name).get_shard(shard_id)
            return sum(1 for sequence in shard.records if sequence > int(last))
    except (AttributeError, TypeError, ValueError, ResourceNotFoundError, ShardNotFoundError):
        return None


def ddb_stream_unread(region: str, iterator: Any) -> int | None:
    """How many records a DynamoDB Streams shard iterator would read now (None: moto knows no such iterator)."""
    from moto.dynamodbstreams.models import dynamodbstreams_backends

    with AWS_LOCK:
        found = dynamodbstreams_backends[DEFAULT_ACCOUNT_ID][region].shard_iterators.get(iterator) \
            if isinstance(iterator, str) else None
        if found is None:
            return None
        shard = found.stream_shard
        return max(0, shard.starting_sequence_number + len(shard.items) - found.sequence_number)


#: The ``userIdentity`` of a TTL deletion's stream record, as the DynamoDB Streams API returns it
#: (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_Identity.html).
TTL_USER_IDENTITY = {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}


def mark_ttl_deletion(region: str, table: str, key: dict) -> bool:
    """Mark the stream record of the deletion just made as DynamoDB's TTL's, as AWS writes it.

    moto has no TTL process, so the sandbox's sweeper deletes expired items with an ordinary
    DeleteItem, and moto's stream records it like anyone's. On AWS the record of a TTL
    deletion carries ``userIdentity`` (type "Service", principalId "dynamodb.amazonaws.com");
    this adds it to the newest record of the stream that is a REMOVE of ``key`` (DynamoDB JSON).
    Returns False when the table has no stream (the idempotency table) or no such record.
    """
    with AWS_LOCK:
        try:
            shard = _dynamodb_table(region, table).stream_shard
        except Exception:  # the table is gone
            return False
        for item in reversed(shard.items if shard is not None else []):
            record = item.to_json()
            if record["dynamodb"].get("Keys") == key:
                if record.get("eventName") != "REMOVE" or "userIdentity" in record:
                    return False
                record["userIdentity"] = dict(TTL_USER_IDENTITY)
                return True
        return False

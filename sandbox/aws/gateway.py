"""Every AWS request made inside a world passes through here.

The adapter installs ``dispatch`` as a botocore ``before-send`` hook while a world is
open, so every client made meanwhile, from any session, sends here; an execution environment's
requests arrive here over its channel. For each request the gateway:

0. reads its service and operation from the request itself (``operations.identify``), never from
   a label (botocore's event name, or anything an environment says), and its parameters as the
   operation's model shapes them; an operation the service lacks, or a body it cannot read, gets
   AWS's own error, recorded, and goes no further;
1. applies the nemesis's network latency and crash plan, and makes the request a yield
   point, so the scheduler may switch tasks before it;
2. refuses it unless it is signed with the world's fake credentials;
3. applies any injected AWS fault (throttling, 5xx, a timeout that still took effect);
4. hands it to moto *while holding one lock*, so every request is atomic with respect to
   every other; moto itself reads, checks and writes with no lock, and without this 16
   threads could see several winners of one conditional put;
5. records operation, target, key and result in the history, and tells its listeners.
"""
from __future__ import annotations

import contextlib
import json
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ReadTimeoutError
from botocore.validate import ParamValidator

from ..core import active
from ..core.scheduler import current_task
from ..errors import RealAwsRefused
from ..vocab import AWS_OK, IDEMPOTENCY_TABLE, TableSchema
from . import adapter
from .dynamo import (
    PARTIQL_OPS,
    cancellation_reasons,
    error_code,
    expanded,
    scalar,
    table_writes,
    tested_but_absent,
    update_assignments,
)
from .operations import (
    MAX_JSON_DEPTH,
    Operation,
    error_answer,
    identify,
    json_depth,
    request_body,
    service_model,
    unknown_operation,
)

if TYPE_CHECKING:
    from botocore.awsrequest import AWSPreparedRequest, AWSResponse

    from ..core.clock import VirtualClock
    from ..core.faults import AwsFault, Nemesis
    from ..core.history import History
    from ..core.scheduler import Scheduler
    from .replicas import Replicas

FAKE_ACCESS_KEY = "testing"
#: The history's name for a request whose operation its service does not have (what it named is in its detail).
UNKNOWN_OPERATION = "UnknownOperation"
FAKE_SECRET_KEY = "testing"

#: Observers of every request any world sends to moto, as (service, op, wire params, origin).
#: The benchmark replays them against bare moto; see ``tap``.
_TAPS: list[Callable[[str, str, dict, str], None]] = []
_credential_re = re.compile(r"Credential=([^/]+)/")
_KEY_ATTRIBUTES = ("pk", "sk")
_STREAM_TABLE = re.compile(r":table/([^/]+)/stream/")

Listener = Callable[[str, str, dict, int], None]
Route = Callable[[str, Any], Any]
#: moto's answer to the request being served, as (status, headers, body).
Served = tuple[int, dict, bytes]
#: What the history keeps of a request: its target (table, queue, bus...), its key and the details.
Summary = tuple[str | None, str | None, dict]
#: An operation the sandbox answers itself: ``handler(params, forward)`` returns (status, headers, body),
#: calling ``forward()`` for moto's answer when it wants one.
LocalOp = Callable[[dict, Callable[[], Served]], Served]


@contextlib.contextmanager
def tap(observer: Callable[[str, str, dict, str], None]) -> Iterator[None]:
    """Call ``observer(service, op, params, origin)`` for every request sent to moto meanwhile.

    ``origin`` is the container whose handler made the request, or the task or "world"
    when the sandbox itself did (a poller, a producer).
    """
    _TAPS.append(observer)
    try:
        yield
    finally:
        _TAPS.remove(observer)


def dispatch(event_name: str, request: AWSPreparedRequest, **_: Any) -> AWSResponse | None:
    """The ``before-send`` hook: a request made while a world is open goes to its gateway.

    The event name (``before-send.dynamodb.PutItem``) is botocore's label, and the gateway reads none:
    it derives service and operation from the request, as it does for an environment's requests.
    """
    world = active.current()
    if world is None:  # a client made inside a world that has closed since: it must not reach AWS
        raise RealAwsRefused(f"refused {event_name.split('.', 1)[-1]}: this client was made inside a sandbox world "
                             "that has closed; make a new client inside an open world")
    # moto stamps what it keeps with time.time() (SQS visibility, message timestamps): a request reads the world's
    # time whichever thread makes it (a cell looking at a stepped run's table). Looked up here, at each request:
    # botocore sessions outlive worlds, and keep the hook they were made with.
    lend = getattr(world.clock, "lend", None)
    return world.gateway.handle(request) if lend is None else lend(world.gateway.handle, request)


def current_actor() -> str:
    """Who is making a request: its invocation, else its task, else the world's own thread."""
    task = current_task()
    if task is None:
        return "world"
    return task.invocation.id if task.invocation is not None else task.name


def summarise(service: str, op: str, params: dict, status: int, body: bytes,
              schema: TableSchema = IDEMPOTENCY_TABLE) -> tuple[str | None, str | None, dict]:
    """(target, key, detail) of one request, kept small for the history."""
    if service == "dynamodb":
        return _summarise_dynamodb(op, params, status, body, schema)
    if service == "sqs":
        return _summarise_sqs(op, params, status, body)
    if service == "eventbridge" and op == "PutEvents":  # botocore's name for the service (its id, hyphenized)
        return _summarise_put_events(params, status, body)
    if service == "kinesis":
        target = params.get("StreamName") or (params.get("StreamARN") or "").rsplit("/", 1)[-1] or None
        return target, params.get("PartitionKey"), {}
    if service == "dynamodb-streams":
        # the table whose stream it reads, from the stream's ARN (moto's shard iterators begin with it)
        found = _STREAM_TABLE.search(str(params.get("StreamArn") or params.get("ShardIterator") or ""))
        return (found.group(1) if found else None), None, {}
    if service == "sns" and op == "Publish":  # the topic, and the MessageId SNS gave the message
        message_id = _XML_MESSAGE_ID.search(body or b"") if status == 200 else None
        return arn_name(params.get("TopicArn")), message_id.group(1).decode() if message_id else None, {}
    if service == "s3" and params.get("Bucket"):
        return params["Bucket"], params.get("Key"), {}
    return None, None, {}


_XML_MESSAGE_ID = re.compile(rb"<MessageId>([^<]+)</MessageId>")
_XML_ERROR_CODE = re.compile(rb"<Code>([^<]+)</Code>")


def request_params(operation: Operation, request: AWSPreparedRequest) -> dict | None:
    """The parameters of a request, as far as the gateway needs them, read in the protocol the service reads
    it in (``operations.identify``): S3's from its URL, a query-protocol form's pairs, a JSON body's object.
    None: a JSON body that is not an object or nests deeper than ``operations.MAX_JSON_DEPTH``, or a form
    that names one parameter twice."""
    if operation.service == "s3":
        return s3_location(request.url)
    if operation.protocol == "rest-json":  # Lambda: the sandbox's own endpoint reads its request itself
        return {}
    body = request_body(request)
    if not body:
        return {}
    if operation.protocol == "query":
        pairs = urllib.parse.parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
        form = dict(pairs)
        # moto reads a repeated name's first value, this dict its last: botocore never repeats one (a list is
        # Name.member.1, Name.member.2), so a form that does is no request the world reads
        return form if len(form) == len(pairs) else None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and json_depth(data) else None


def malformed(operation: Operation, params: dict | None) -> Served | None:
    """AWS's answer to a JSON body it cannot read as the operation's input, or None when it can.

    Every part of the world that reads a request's parameters (the history's summary, the fault plan's
    target, the replicas, the exhaustive search's footprints) reads them as the model shapes them, so a
    body must be shaped so: an object, no deeper than ``MAX_JSON_DEPTH``, whose members have the model's
    types (botocore's own validator; a client built by botocore has passed it already). AWS answers a
    body it cannot parse with SerializationException and one that breaks a constraint with
    ValidationException (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/CommonErrors.html).
    """
    if params is None and operation.protocol == "query":  # (https://docs.aws.amazon.com/sns/latest/api/CommonErrors.html)
        return error_answer(operation, 404, "MalformedQueryString", "The query string names a parameter twice")
    if params is None:
        return error_answer(operation, 400, "SerializationException",
                            f"The request body is not a JSON object of at most {MAX_JSON_DEPTH} levels")
    if operation.protocol != "json":
        return None
    model = service_model(operation.model)
    shape = model.operation_model(operation.name).input_shape if model is not None and operation.name else None
    report = _VALIDATOR.validate(params, shape) if shape is not None else None
    if report is not None and report.has_errors():
        return error_answer(operation, 400, "ValidationException", report.generate_report()[:1000])
    return None


_VALIDATOR = ParamValidator()


def s3_location(url: str) -> dict:
    """``Bucket`` and ``Key`` of an S3 request, from a virtual-hosted (bucket.s3...) or a path-style URL."""
    parts = urllib.parse.urlsplit(url)
    host, path = parts.hostname or "", urllib.parse.unquote(parts.path).lstrip("/")
    if ".s3." in f".{host}" and not host.startswith("s3."):
        bucket, key = host.split(".s3.", 1)[0], path
    else:
        bucket, _, key = path.partition("/")
    return {k: v for k, v in (("Bucket", bucket), ("Key", key)) if v}


def arn_name(arn: str | None) -> str | None:
    """The last part of an ARN (a topic's name), or None."""
    return arn.rsplit(":", 1)[-1] or None if arn else None


def _error_code(body: bytes, status: int) -> str:
    """The short error code of a failed request: a JSON error's, an XML one's (S3, SNS), else ``HTTP <status>``."""
    found = _XML_ERROR_CODE.search(body or b"")
    return error_code(body) or (found.group(1).decode() if found else f"HTTP {status}")


def _summarise_dynamodb(op: str, params: dict, status: int, body: bytes,
                        schema: TableSchema) -> tuple[str | None, str | None, dict[str, Any]]:
    writes = table_writes(op, params)
    if op in ("TransactWriteItems", "BatchWriteItem", *PARTIQL_OPS) and writes:
        # Several writes in one request: the history keeps the one on the idempotency table
        # (else the first), as the single-item call it amounts to (a PartiQL INSERT: a PutItem).
        table, single, write = next((w for w in writes if w[0] == schema.name), writes[0])
        _, key, detail = _summarise_dynamodb(single, write, status, b"", schema)
        detail["as"] = single
        if status != 200:
            detail["reasons"] = cancellation_reasons(body)
        return table, key, detail
    detail = {}
    key = None
    item = params.get("Item") or params.get("Key") or {}
    if item:
        key = "|".join(str(scalar(item[k])) for k in sorted(item) if k in _KEY_ATTRIBUTES) or None
    if "Item" in params:
        detail.update({a: scalar(params["Item"][a]) for a in schema.recorded if a in params["Item"]})
    if op == "UpdateItem":
        detail.update({a: v for a, v in update_assignments(params).items() if a in schema.recorded})
    if params.get("ConditionExpression"):
        detail["condition"] = expanded(str(params["ConditionExpression"]), params)
        absent = tested_but_absent(params) if op == "PutItem" else []
        if absent:
            detail["conditionTestsAbsent"] = absent  # attributes the condition tests that this item never has
    if status == 200 and op == "GetItem":
        found = (json.loads(body or b"{}") or {}).get("Item")
        detail["found"] = bool(found)
        if found:
            detail.update({a: scalar(found[a]) for a in schema.recorded if a in found})
    return params.get("TableName"), key, detail


def _summarise_sqs(op: str, params: dict, status: int, body: bytes) -> Summary:
    detail: dict[str, Any] = {}
    key = None
    target = queue_name(params.get("QueueUrl")) or params.get("QueueName")
    if status == 200 and op in ("SendMessage", "ReceiveMessage"):
        data = json.loads(body or b"{}")
        if op == "SendMessage":
            key = data.get("MessageId")
        else:
            detail["received"] = [m.get("MessageId") for m in data.get("Messages", [])]
    return target, key, detail


def _summarise_put_events(params: dict, status: int, body: bytes) -> Summary:
    """The bus, and the EventId EventBridge gave each entry (joined with commas when there are several)."""
    entries = params.get("Entries") or [{}]
    target = entries[0].get("EventBusName") or "default"
    key = None
    if status == 200:
        ids = [e.get("EventId") for e in (json.loads(body or b"{}") or {}).get("Entries", []) if e.get("EventId")]
        key = ",".join(ids) or None
    return target, key, {}


def queue_name(url: str | None) -> str | None:
    return url.rstrip("/").rsplit("/", 1)[-1] or None if url else None


class Gateway:
    """One world's half of the gateway: atomic dispatch to moto, faults, recording, listeners."""

    #: It serves requests from this process's moto backends (an ``HttpGateway`` sends them elsewhere).
    in_process = True

    def __init__(self, clock: "VirtualClock", scheduler: "Scheduler", history: "History", faults: "Nemesis",
                 schema: TableSchema = IDEMPOTENCY_TABLE, replicas: "Replicas | None" = None):
        self.clock, self.scheduler, self.history, self.faults, self.schema = clock, scheduler, history, faults, schema
        self.replicas = replicas
        #: Extra local endpoints by service (the sandbox's own Lambda Invoke, for example).
        self.routes: dict[str, Route] = {}
        #: Operations the sandbox serves around or instead of moto (see ``serve_locally``).
        self.local_ops: dict[tuple[str, str], LocalOp] = {}
        #: Work to do just before a service's first request (creating the table, say), so a
        #: run that never calls that service never pays for it.
        self.before_first: dict[str, Callable[[], None]] = {}
        self._listeners: list[Listener] = []
        self._quiet = threading.local()  # per task: each task is its own thread

    # -- recording ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def unrecorded(self) -> Iterator[None]:
        """Requests this task makes inside are served but not written to the history."""
        self._quiet.depth = self.quiet_depth() + 1
        try:
            yield
        finally:
            self._quiet.depth -= 1

    def quiet_depth(self) -> int:
        return getattr(self._quiet, "depth", 0)

    def record(self, service: str, op: str, target: str | None, key: str | None, result: str,
               detail: Mapping[str, object]) -> None:
        """Write one request to the history (unless this task is inside ``unrecorded``)."""
        if self.quiet_depth():
            return
        task = current_task()
        inv = task.invocation if task is not None else None
        self.history.aws(self.clock.elapsed(), inv=inv.id if inv is not None else None, actor=current_actor(),
                         service=service, op=op, target=target, key=key, result=result, detail=dict(detail))

    def serve_locally(self, service: str, op: str, handler: LocalOp) -> None:
        """Answer ``op`` with ``handler(params, forward)``: one moto lacks, or one it serves unlike AWS.

        The request is still a request: faults, the lock, the history and the listeners apply
        to it as to any other. A second handler for the same operation wraps the first.
        """
        inner = self.local_ops.get((service, op))
        if inner is None:
            self.local_ops[(service, op)] = handler
        else:
            self.local_ops[(service, op)] = lambda params, forward: handler(params, lambda: inner(params, forward))

    # -- listeners ----------------------------------------------------------------------------
    def on_request(self, listener: Listener) -> None:
        """Call ``listener(service, op, params, status)`` after every request (recorded or not)."""
        self._listeners.append(listener)

    def notify(self, service: str, op: str, params: dict, status: int) -> None:
        for listener in self._listeners:
            listener(service, op, params, status)

    # -- one request ----------------------------------------------------------------------------
    def handle(self, request: AWSPreparedRequest) -> AWSResponse:
        """Serve one botocore request, from the world's own clients or an environment's: its service and
        operation are the request's own (``operations.identify``), whoever labelled it what."""
        task = current_task()
        inv = task.invocation if task is not None else None
        operation = identify(request)
        service, op = operation.service, operation.name or UNKNOWN_OPERATION
        label = f"{service}.{op}"
        self._arrive(inv, service, label)
        check_credentials(request, label)
        if operation.name is None:
            return self._answer_locally(operation, request, op, unknown_operation(operation))
        if service in self.routes:
            return self.routes[service](op, request)
        if service in self.before_first:
            with adapter.AWS_LOCK:  # real threads may race to be first: one does the work, the rest wait
                first = self.before_first.pop(service, None)
                if first is not None:
                    first()
        params = request_params(operation, request)
        refusal = malformed(operation, params)
        if refusal is not None:
            return self._answer_locally(operation, request, op, refusal)
        assert params is not None  # a body with no parameters is malformed
        target = (params.get("TableName") or queue_name(params.get("QueueUrl")) or params.get("StreamName")
                  or params.get("Bucket") or arn_name(params.get("TopicArn")))
        fault = self.faults.aws_fault(service, op, target, inv.id if inv is not None else None)
        if _TAPS:
            origin = inv.container.id if inv is not None and inv.container is not None else current_actor()
            for observer in _TAPS:
                observer(service, op, params, origin)
        with adapter.AWS_LOCK:
            status, headers, body, stale = self._serve(fault, request, label, operation, params)
            target, key, detail = summarise(service, op, params, status, body, self.schema)
            if fault is not None:
                detail["fault"] = fault.kind
            if stale:
                detail["stale"] = True  # an eventually consistent read that missed a recent write
            self.record(service, op, target, key, AWS_OK if status < 300 else _error_code(body, status),
                        detail)
            self.notify(service, op, params, status)
        if fault is not None and fault.kind == "timeout-applied":
            # The request took effect, but the caller never hears so: an indefinite outcome.
            raise ReadTimeoutError(endpoint_url=request.url)
        if inv is not None:
            inv.after_aws(label)
        return adapter.response(request.url, status, headers, body)

    def _arrive(self, inv: Any, service: str, label: str) -> None:
        """The request's way to AWS: a stopped invocation's code gets no further; the round trip; a step."""
        self.scheduler.check_alive()  # a stopped invocation's code reaches no AWS service
        if inv is not None:
            latency = self.faults.latency_of(service)
            if latency:
                self.scheduler.sleep(latency, label=f"{service} round trip")
            inv.before_aws(label)
        self.scheduler.yield_point(label)

    def _answer_locally(self, operation: Operation, request: AWSPreparedRequest, op: str,
                        answer: Served) -> AWSResponse:
        """An error AWS gives before it does anything, recorded: nothing else happens (no fault, no moto)."""
        status, headers, body = answer
        with adapter.AWS_LOCK:
            self.record(operation.service, op, None, None, _error_code(body, status),
                        {"named": operation.named} if operation.name is None else {})
        task = current_task()
        inv = task.invocation if task is not None else None
        if inv is not None:
            inv.after_aws(f"{operation.service}.{op}")
        return adapter.response(request.url, status, headers, body)

    def _serve(self, fault: "AwsFault | None", request: AWSPreparedRequest, label: str, operation: Operation,
               params: dict) -> tuple[int, dict, bytes, bool]:
        """moto's answer (or the fault's); an eventually consistent read may get a stale one."""
        if fault is not None and fault.kind != "timeout-applied":
            return (*fault_response(fault), False)
        service, op = operation.service, operation.name or UNKNOWN_OPERATION
        replicas = self.replicas if service == "dynamodb" else None
        written = replicas.before_write(op, params) if replicas is not None else []
        local = self.local_ops.get((service, op))
        status, headers, body = (local(params, lambda: _moto(request, label, operation)) if local is not None
                                 else _moto(request, label, operation))
        if replicas is None or status != 200:
            return status, headers, body, False
        replicas.after_write(written)
        stale = replicas.stale_answer(op, params, body)
        if stale is None:
            return status, headers, body, False
        return status, replicas.headers_for(headers, stale), stale, True


def _moto(request: AWSPreparedRequest, label: str, operation: Operation) -> Served:
    try:
        served = adapter.serve(request)
    except NotImplementedError:  # moto has no such operation: said as it is, not dressed as an answer of AWS's
        raise
    except Exception as exc:  # noqa: BLE001 - moto failed on a request AWS would answer: an AWS error, not a crash
        return moto_failed(operation, exc)
    if served is None:
        raise RealAwsRefused(f"{label} has no local (moto) service in this sandbox; nothing was sent")
    return served


def check_credentials(request: AWSPreparedRequest, label: str) -> None:
    """Refuse a request not signed with the sandbox's fake access key."""
    auth = request.headers.get("Authorization", b"")
    auth = auth.decode() if isinstance(auth, bytes) else str(auth)
    match = _credential_re.search(auth)
    if not match or match.group(1) != FAKE_ACCESS_KEY:
        seen = match.group(1)[:4] + "..." if match else "no signature"
        raise RealAwsRefused(
            f"refused {label}: it was signed with access key {seen!r}, not the sandbox's fake key "
            f"{FAKE_ACCESS_KEY!r}. Create clients inside the world (with Sandbox(...)) and pass no credentials.")


#: The refusals a DynamoDB write may meet besides its condition's, by fault kind: (error code, AWS's message).
_REFUSALS = {
    "transaction-conflict": ("TransactionConflictException",
                             "Transaction is ongoing for the item"),
    "validation": ("ValidationException", "One or more parameter values were invalid"),
}


#: Operations whose input names an iterator that moto keeps in a dict, and looks up unchecked.
_ITERATOR_READS = {("dynamodb-streams", "GetRecords"), ("kinesis", "GetRecords")}


def moto_failed(operation: Operation, exc: Exception) -> Served:
    """The answer to a request that made moto raise (a handler's made-up shard iterator gives moto 5 a
    KeyError): an error in the service's own protocol, which the handler's code can catch, as it could AWS's.

    An iterator no GetShardIterator returned: Kinesis's ``InvalidArgumentException`` (400, "a specified parameter
    ... can't be used", https://docs.aws.amazon.com/kinesis/latest/APIReference/API_GetRecords.html); for DynamoDB
    Streams, whose GetRecords page lists only expired and trimmed iterators, the common ``ValidationException``
    (400, https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/CommonErrors.html).
    Anything else: ``InternalFailure`` (500), named as the sandbox's failure, since AWS would have answered.
    """
    if (operation.service, operation.name) in _ITERATOR_READS and isinstance(exc, (KeyError, ValueError, IndexError)):
        code = "InvalidArgumentException" if operation.service == "kinesis" else "ValidationException"
        return error_answer(operation, 400, code, "Invalid ShardIterator: no GetShardIterator returned this iterator")
    return error_answer(operation, 500, "InternalFailure", "the sandbox's AWS (moto) failed on this request "
                        f"({type(exc).__name__}); AWS would have answered it: this is the sandbox's failure")


def fault_response(fault: "AwsFault") -> tuple[int, dict, bytes]:
    """The HTTP answer AWS gives for a throttled or failed request."""
    headers = {"Content-Type": "application/x-amz-json-1.0"}
    if fault.kind == "throttle":
        code = {"dynamodb": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                "kinesis": "ProvisionedThroughputExceededException"}.get(fault.service, "ThrottlingException")
        return 400, headers, json.dumps({"__type": code, "message": "Rate exceeded (injected by the sandbox)"}).encode()
    if fault.kind in _REFUSALS:
        code, message = _REFUSALS[fault.kind]
        body = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": f"{message} (injected by the sandbox)"}
        return 400, headers, json.dumps(body).encode()
    return 500, headers, json.dumps({"__type": "InternalServerError",
                                     "message": "Internal server error (injected by the sandbox)"}).encode()


def json_answer(data: dict, request_id: str, status: int = 200) -> Served:
    """An AWS JSON-protocol answer (SQS, DynamoDB, Kinesis) for an operation the sandbox serves itself."""
    headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": request_id}
    return status, headers, json.dumps(data).encode()


def json_error(code: str, message: str, request_id: str, namespace: str = "com.amazonaws.sqs",
               status: int = 400) -> Served:
    """An AWS JSON-protocol error: botocore reads ``code`` from ``__type`` as it does for AWS's own."""
    _, headers, body = json_answer({"__type": f"{namespace}#{code}", "message": message}, request_id, status)
    return status, {**headers, "x-amzn-ErrorType": code}, body

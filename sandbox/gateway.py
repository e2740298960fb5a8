"""Every AWS request made inside a world passes through here.

The gateway is a botocore ``before-send`` hook, installed for every client created
after ``sandbox`` is imported. For each request it:

1. makes it a yield point, so the scheduler may switch tasks before it;
2. refuses it unless it is signed with the world's fake credentials;
3. applies any injected fault (throttling, 5xx, a timeout that still took effect);
4. hands it to moto *while holding one lock*, so every request is atomic with respect
   to every other. moto itself reads, checks and writes with no lock; without this,
   16 threads could see several winners of one conditional put;
5. records operation, target, key and result in the history.

A second guard replaces botocore's HTTP send while a world is open: anything that
would reach the network raises ``RealAwsRefused`` instead.
"""
from __future__ import annotations

import contextlib
import json
import re
import threading
from typing import TYPE_CHECKING, Any, Callable

import botocore.endpoint
import botocore.handlers
from botocore.awsrequest import AWSResponse
from moto.core.botocore_stubber import MockRawResponse
from moto.core.models import botocore_stubber

from .errors import RealAwsRefused

if TYPE_CHECKING:
    from .world import Sandbox

FAKE_ACCESS_KEY = "testing"
FAKE_SECRET_KEY = "testing"

#: One lock for every request of every world: moto's backends are process-global.
AWS_LOCK = threading.RLock()

_active: "Sandbox | None" = None
#: Optional observer of every request a world sends to moto, as (service, op, wire params);
#: the benchmark uses it to replay the same calls against bare moto.
TAP: "Callable[[str, str, dict], None] | None" = None
_credential_re = re.compile(r"Credential=([^/]+)/")


def set_active_world(world: "Sandbox | None") -> None:
    global _active
    _active = world


def active_world() -> "Sandbox | None":
    return _active


def _gateway(event_name: str, request, **kwargs: Any):
    world = _active
    if world is None:
        return None  # outside a world the sandbox stays out of the way
    _, service, op = event_name.split(".", 2)
    return world.gateway.handle(service, op, request)


# Registered once, for every botocore session created from now on.
if ("before-send", _gateway) not in botocore.handlers.BUILTIN_HANDLERS:
    botocore.handlers.BUILTIN_HANDLERS.append(("before-send", _gateway))

_original_send = botocore.endpoint.Endpoint._send


def _guarded_send(self, request):
    if _active is not None:
        raise RealAwsRefused(
            f"refused to send {request.method} {request.url} to the network: inside a sandbox world "
            "every AWS request must be answered locally (was this client created before the world opened?)"
        )
    return _original_send(self, request)


botocore.endpoint.Endpoint._send = _guarded_send


def _error_code(body: bytes) -> str | None:
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return None
    code = data.get("__type") or data.get("code") or data.get("Code")
    if not code:
        return None
    code = code.rsplit("#", 1)[-1].rsplit(".", 1)[-1]
    return code[: -len("Exception")] if code.endswith("Exception") else code


def _scalar(attr: Any) -> Any:
    """DynamoDB low-level value ({"S": "x"}) to a plain value, for the history."""
    if isinstance(attr, dict) and len(attr) == 1:
        (kind, value), = attr.items()
        if kind == "N":
            number = float(value)
            return int(number) if number.is_integer() else number
        if kind in ("S", "BOOL"):
            return value
        if kind == "NULL":
            return None
        return f"<{kind}>"
    return attr


def _update_assignments(params: dict) -> dict[str, Any]:
    """The attributes an UpdateExpression's SET clause assigns, with their values."""
    expr = params.get("UpdateExpression") or ""
    match = re.search(r"\bSET\b(.*?)(\b(REMOVE|ADD|DELETE)\b|$)", expr, re.I | re.S)
    if not match:
        return {}
    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}
    out = {}
    for clause in match.group(1).split(","):
        lhs, _, rhs = clause.partition("=")
        lhs, rhs = lhs.strip(), rhs.strip()
        out[names.get(lhs, lhs)] = _scalar(values[rhs]) if rhs in values else rhs
    return out


def summarise(service: str, op: str, params: dict, status: int, body: bytes) -> tuple[str | None, str | None, dict]:
    """(target, key, detail) of one request, kept small for the history."""
    detail: dict[str, Any] = {}
    target = key = None
    if service == "dynamodb":
        target = params.get("TableName")
        item = params.get("Item") or params.get("Key") or {}
        if item:
            key = "|".join(str(_scalar(item[k])) for k in sorted(item) if k in ("pk", "sk")) or None
        if "Item" in params:
            for attr in ("status", "expiresAt"):
                if attr in params["Item"]:
                    detail[attr] = _scalar(params["Item"][attr])
        if op == "UpdateItem":
            for attr, value in _update_assignments(params).items():
                if attr in ("status", "expiresAt"):
                    detail[attr] = value
        if params.get("ConditionExpression"):
            detail["condition"] = params["ConditionExpression"]
        if status == 200 and op == "GetItem":
            found = (json.loads(body or b"{}") or {}).get("Item")
            detail["found"] = bool(found)
            if found:
                for attr in ("status", "expiresAt"):
                    if attr in found:
                        detail[attr] = _scalar(found[attr])
    elif service == "sqs":
        url = params.get("QueueUrl") or ""
        target = url.rstrip("/").rsplit("/", 1)[-1] or params.get("QueueName")
        if status == 200 and op in ("SendMessage", "ReceiveMessage"):
            data = json.loads(body or b"{}")
            if op == "SendMessage":
                key = data.get("MessageId")
            else:
                detail["received"] = [m.get("MessageId") for m in data.get("Messages", [])]
    elif service == "kinesis":
        target = params.get("StreamName") or (params.get("StreamARN") or "").rsplit("/", 1)[-1] or None
        if "PartitionKey" in params:
            key = params["PartitionKey"]
    return target, key, detail


class Fault:
    """An injected failure of one AWS call. ``kind`` is "throttle", "5xx" or "timeout-applied"."""

    KINDS = ("throttle", "5xx", "timeout-applied")

    def __init__(self, kind: str, service: str, op: str, target: str | None = None, nth: int = 1, times: int = 1,
                 invocation: str | None = None):
        if kind not in self.KINDS:
            raise ValueError(f"unknown AWS fault {kind!r}; choose one of {self.KINDS}")
        self.kind, self.service, self.op, self.target = kind, service, op, target
        self.nth, self.times, self.invocation = nth, times, invocation
        self.seen = 0
        self.fired = 0

    def matches(self, service: str, op: str, target: str | None, inv: str | None) -> bool:
        if (service, op) != (self.service, self.op):
            return False
        if self.target is not None and target != self.target:
            return False
        if self.invocation is not None and inv != self.invocation:
            return False
        self.seen += 1
        if self.seen >= self.nth and self.fired < self.times:
            self.fired += 1
            return True
        return False


class Gateway:
    """The per-world half of the gateway: atomic dispatch to moto and recording."""

    def __init__(self, world: "Sandbox"):
        self.world = world
        self.faults: list[Fault] = []
        #: Extra local endpoints by service (the sandbox's own Lambda Invoke, for example).
        self.routes: dict[str, Callable[[str, Any], AWSResponse]] = {}
        self._quiet = 0

    @contextlib.contextmanager
    def unrecorded(self):
        """Requests made inside are served but not written to the history (setup, sweeps, peeks)."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def inject(self, fault: Fault) -> Fault:
        self.faults.append(fault)
        return fault

    def handle(self, service: str, op: str, request) -> AWSResponse:
        world = self.world
        inv = world.runtime.current_invocation()
        label = f"{service}.{op}"
        if inv is not None:
            inv.before_aws(label)
        world.scheduler.yield_point(label)
        self._check_credentials(request, label)
        if service in self.routes:
            return self.routes[service](op, request)
        params = json.loads(request.body or b"{}") if request.body else {}
        inv_id = inv.id if inv is not None else None
        fault = next((f for f in self.faults if f.matches(service, op, params.get("TableName") or _queue_of(params), inv_id)), None)
        if TAP is not None:
            TAP(service, op, params)
        with AWS_LOCK:
            if fault is not None and fault.kind != "timeout-applied":
                status, headers, body = _fault_response(fault)
            else:
                response = botocore_stubber.process_request(request)
                if response is None:
                    raise RealAwsRefused(f"{label} has no local (moto) service in this sandbox; nothing was sent")
                status, headers, body = response
            body = body.encode() if isinstance(body, str) else body
            target, key, detail = summarise(service, op, params, status, body)
            result = "ok" if status < 300 else (_error_code(body) or f"HTTP {status}")
            if fault is not None:
                detail["fault"] = fault.kind
            if not self._quiet:
                world.history.append(
                "aws", world.clock.elapsed(), inv=inv_id, actor=world.runtime.actor_name(),
                service=service, op=op, target=target, key=key, result=result, detail=detail,
                )
            world.on_aws_call(service, op, params, status)
        if fault is not None and fault.kind == "timeout-applied":
            from botocore.exceptions import ReadTimeoutError

            # The request took effect, but the caller never hears so: an indefinite outcome.
            raise ReadTimeoutError(endpoint_url=request.url)
        if inv is not None:
            inv.after_aws(label)
        return AWSResponse(request.url, status, headers, MockRawResponse(body))

    @staticmethod
    def _check_credentials(request, label: str) -> None:
        auth = request.headers.get("Authorization", b"")
        auth = auth.decode() if isinstance(auth, bytes) else str(auth)
        match = _credential_re.search(auth)
        if not match or match.group(1) != FAKE_ACCESS_KEY:
            seen = match.group(1)[:4] + "..." if match else "no signature"
            raise RealAwsRefused(
                f"refused {label}: it was signed with access key {seen!r}, not the sandbox's fake key "
                f"{FAKE_ACCESS_KEY!r}. Create clients inside the world (with Sandbox(...)) and pass no credentials."
            )


def _queue_of(params: dict) -> str | None:
    url = params.get("QueueUrl")
    return url.rstrip("/").rsplit("/", 1)[-1] if url else params.get("StreamName")


def _fault_response(fault: Fault) -> tuple[int, dict, bytes]:
    if fault.kind == "throttle":
        code = {
            "dynamodb": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
            "kinesis": "ProvisionedThroughputExceededException",
        }.get(fault.service, "ThrottlingException")
        return 400, {"Content-Type": "application/x-amz-json-1.0"}, json.dumps(
            {"__type": code, "message": "Rate exceeded (injected by the sandbox)"}).encode()
    return 500, {"Content-Type": "application/x-amz-json-1.0"}, json.dumps(
        {"__type": "InternalServerError", "message": "Internal server error (injected by the sandbox)"}).encode()

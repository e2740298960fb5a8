"""The world: one object that owns a fresh local AWS, its clock, scheduler, services and history.

    with Sandbox(seed=1) as sb:
        fn = sb.function(handler)
        fn.invoke({"orderId": "o-1", ...})
        sb.history, sb.outbox, sb.check()

Opening a world gives an empty moto AWS (DynamoDB, SQS, Kinesis) with the idempotency
table already created; closing it leaves nothing behind. Inside, boto3 always sees fake
credentials, whatever the caller's environment holds, and nothing can reach the network.
"""
from __future__ import annotations

import functools
import os
import random
import threading
import time
import uuid
from typing import Any, Callable, Iterable

import boto3
import botocore.loaders
import botocore.session
from moto.core.base_backend import BackendDict
from moto.core.models import botocore_stubber
from moto.core.model_instances import reset_model_data
from moto.moto_api._internal import mock_random

from . import gateway as _gateway
from .clock import DEFAULT_EPOCH, VirtualClock
from .errors import BadInput, SandboxError
from .history import History
from .runtime import FunctionConfig, LambdaFunction, Runtime
from .scheduler import Policy, Scheduler, current_task, make_policy
from .services import Services
from .ttl import TtlSweeper

#: TTL deletion is lazy: "typically within a few days" / 48 hours in the article.
#: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html
MAX_TTL_LAG = 48 * 3600

_FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": _gateway.FAKE_ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": _gateway.FAKE_SECRET_KEY,
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
_DROP_ENV = ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
             "AWS_ENDPOINT_URL", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
             "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN")

_real_sleep = time.sleep
#: botocore parses its JSON service models per session; worlds share one loader so a fresh
#: world costs milliseconds, which exhaustive exploration and campaigns depend on.
_LOADER = botocore.loaders.create_loader()


def _virtual_sleep(seconds: float) -> None:
    """``time.sleep`` inside a world: tasks and the world's thread sleep on the virtual clock."""
    world = _gateway.active_world()
    if world is not None and (current_task() is not None or threading.get_ident() == world._owner):
        world.scheduler.sleep(seconds)
    else:
        _real_sleep(seconds)  # JupyterLab's and other foreign threads keep real time


class Sandbox:
    """A local AWS world on a virtual clock.

    ``seed``      drives every random choice: the scheduler, moto's ids, request ids.
    ``policy``    how concurrent tasks interleave: "random" (seeded, default),
                  "round-robin", a list of scripted steps, or a ``Policy``.
    ``ttl_lag``   seconds between an item's ``expiresAt`` and the sweeper deleting it
                  (0 to 48 h; DynamoDB deletes lazily, moto never does).
    ``watchdog``  real seconds a task may run without yielding before it is declared blocked.
    """

    def __init__(self, seed: int = 0, *, policy: "str | Policy | list | None" = None, ttl_lag: float = 0.0,
                 table: str = "idempotency", region: str = "us-east-1", epoch: float = DEFAULT_EPOCH,
                 watchdog: float = 10.0, meta: dict | None = None):
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise BadInput(f"seed must be an integer, got {seed!r}")
        if not 0 <= ttl_lag <= MAX_TTL_LAG:
            raise BadInput(f"ttl_lag must be between 0 and {MAX_TTL_LAG} seconds (48 h), got {ttl_lag}")
        self.seed = seed
        self.region = region
        self.table_name = table
        self.clock = VirtualClock(epoch)
        self.scheduler = Scheduler(self.clock, make_policy(policy, seed), watchdog=watchdog)
        self.history = History({"seed": seed, "epoch": self.clock.epoch, "table": table, "region": region,
                                **(meta or {})})
        self.runtime = Runtime(self)
        self.services = Services(self)
        self.gateway = _gateway.Gateway(self)
        self.sweeper = TtlSweeper(self, ttl_lag)
        self._rng = random.Random(f"world:{seed}")
        self._owner: int | None = None
        self._opened = False
        self._closed = False
        self._aws_listeners: list[Callable[[str, str, dict, int], None]] = []

    # -- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> "Sandbox":
        self.open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def open(self) -> "Sandbox":
        if self._opened:
            raise SandboxError("this world was already opened; create a new Sandbox for a fresh world")
        if _gateway.active_world() is not None:
            raise SandboxError("another Sandbox world is open in this process; close it first (use `with`)")
        self._opened = True
        self._owner = threading.get_ident()
        self._saved_env = {k: os.environ.get(k) for k in (*_FAKE_ENV, *_DROP_ENV, "IDEMPOTENCY_TABLE")}
        self._saved_random = random.getstate()
        self._saved_session = boto3.DEFAULT_SESSION
        # A fresh, empty AWS: every moto backend starts over. The gateway hands requests to
        # moto's request processor itself, under its lock, so moto's own patching of botocore
        # and of `requests` (what mock_aws() adds, at about 13 ms a world) is not needed.
        with _gateway.AWS_LOCK:
            BackendDict.reset()
        # botocore calls every before-send hook: if a caller's own mock_aws() is active, its
        # stubber would run each request a second time after the gateway. Silence it meanwhile.
        self._saved_stubber = botocore_stubber.enabled
        botocore_stubber.enabled = False
        for k in _DROP_ENV:
            os.environ.pop(k, None)
        os.environ.update(_FAKE_ENV)
        os.environ["AWS_DEFAULT_REGION"] = os.environ["AWS_REGION"] = self.region
        os.environ["IDEMPOTENCY_TABLE"] = self.table_name
        session = botocore.session.get_session()
        session.register_component("data_loader", _LOADER)
        boto3.setup_default_session(botocore_session=session, region_name=self.region)
        mock_random.seed(self.seed)
        random.seed(f"botocore-jitter:{self.seed}")  # botocore's retry jitter uses the random module
        self.clock.start()
        time.sleep = _virtual_sleep
        _gateway.set_active_world(self)
        try:
            self.dynamodb = boto3.client("dynamodb", region_name=self.region)
            with self.gateway.unrecorded():
                self._create_idempotency_table()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        if not self._opened or self._closed:
            return
        self._closed = True
        try:
            self.scheduler.close()
        finally:
            _gateway.set_active_world(None)
            time.sleep = _real_sleep
            self.clock.stop()
            random.setstate(self._saved_random)
            boto3.DEFAULT_SESSION = self._saved_session
            with _gateway.AWS_LOCK:  # nothing of this world's AWS survives it
                BackendDict.reset()
                reset_model_data()
            botocore_stubber.enabled = self._saved_stubber
            for k, v in self._saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def _require_open(self) -> None:
        if not self._opened or self._closed:
            raise SandboxError("this world is not open: use `with Sandbox(seed=...) as sb:`")

    def _create_idempotency_table(self) -> None:
        self.dynamodb.create_table(
            TableName=self.table_name,
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        self.dynamodb.update_time_to_live(
            TableName=self.table_name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiresAt"},
        )

    @functools.cached_property
    def table(self):
        """The idempotency table as a boto3 ``Table`` resource (built on first use: resources are slow to make)."""
        self._require_open()
        return boto3.resource("dynamodb", region_name=self.region).Table(self.table_name)

    @functools.cached_property
    def sqs(self):
        """A boto3 SQS client inside this world."""
        self._require_open()
        return boto3.client("sqs", region_name=self.region)

    @functools.cached_property
    def kinesis(self):
        """A boto3 Kinesis client inside this world."""
        self._require_open()
        return boto3.client("kinesis", region_name=self.region)

    # -- randomness ----------------------------------------------------------------------
    def new_uuid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    @property
    def rng(self) -> random.Random:
        return self._rng

    # -- functions and time ---------------------------------------------------------------
    def function(self, handler: Any = None, *, factory: Callable[[], Callable] | None = None,
                 timeout: float = 3.0, memory_mb: int = 128, name: str = "orders-handler") -> LambdaFunction:
        """Deploy a handler as a Lambda function (default timeout 3 s, as Lambda's)."""
        self._require_open()
        if not (0 < timeout <= 900):
            raise BadInput(f"function timeout must be between 1 and 900 seconds (Lambda's range), got {timeout}")
        return LambdaFunction(self, handler, FunctionConfig(name=name, timeout=timeout, memory_mb=memory_mb,
                                                            region=self.region), factory=factory)

    def run(self, until: float | None = None, stop_when: Callable[[], bool] | None = None) -> None:
        """Let every task run until nothing is left to do (or virtual time ``until``)."""
        self._require_open()
        self.scheduler.run(until=until, stop_when=stop_when)

    def advance(self, seconds: float) -> None:
        """Move virtual time forward, running whatever falls due on the way."""
        self._require_open()
        self.scheduler.run(until=self.clock.elapsed() + seconds)

    # -- what happened ----------------------------------------------------------------------
    def accept(self, order: dict, expects: Iterable[str] | None = None, source: str = "direct") -> None:
        """Record that ``order`` entered the system and is owed these effects, once each.

        By default it is owed what ``owed_effects`` says: an email, and a charge first if it pays by card.
        """
        from .events import owed_effects

        self.history.append("accept", self.clock.elapsed(), key=str(order["orderId"]),
                            expects=list(expects if expects is not None else owed_effects(order)), source=source)

    def record_delivery(self, source: str, what: str, keys: Iterable[str], inv: str | None = None,
                        detail: dict | None = None) -> None:
        """Record what a delivery source did besides invoking ("redelivery", "dead-lettered", "pending", ...)."""
        self.history.append("delivery", self.clock.elapsed(), source=source, what=what, keys=list(keys), inv=inv,
                            detail=dict(detail or {}))

    def order_event(self, orders: list[dict]) -> dict:
        """An EventBridge "OrderPlaced" event carrying ``orders``, with a fresh id, stamped now."""
        from .events import eventbridge_event, eventbridge_time

        return eventbridge_event(orders, self.new_uuid(), eventbridge_time(self.clock.now()), region=self.region)

    def note(self, text: str) -> None:
        self.history.append("note", self.clock.elapsed(), text=text)

    @property
    def outbox(self) -> list[dict]:
        return self.services.outbox

    @property
    def charges(self) -> list[dict]:
        return self.services.charges

    def items(self) -> list[dict]:
        """Every item of the idempotency table, sorted by key (a read the history does not record)."""
        self._require_open()
        with self.gateway.unrecorded():
            items = self.table.scan(ConsistentRead=True)["Items"]
        return sorted(items, key=lambda i: i["pk"])

    def check(self):
        from .checker import check

        return check(self.history)

    def timeline(self, **kw: Any):
        from .timeline import plot_timeline

        return plot_timeline(self.history, **kw)

    # -- hooks ------------------------------------------------------------------------------
    def on_aws(self, listener: Callable[[str, str, dict, int], None]) -> None:
        """Call ``listener(service, op, params, status)`` after every AWS request."""
        self._aws_listeners.append(listener)

    def on_aws_call(self, service: str, op: str, params: dict, status: int) -> None:
        self.sweeper.observe(service, op, params, status)
        for listener in self._aws_listeners:
            listener(service, op, params, status)

    def __repr__(self) -> str:
        state = "open" if self._opened and not self._closed else ("closed" if self._closed else "new")
        return f"<Sandbox seed={self.seed} {state} t={self.clock.elapsed():.3f}s records={len(self.history)}>"

"""Endpoint mode: the same handlers and scenarios against a real DynamoDB table and SQS queue.

``python -m sandbox run SCENARIO --handler F.py:FUNC --endpoint URL`` runs the real-threads
world (``realthreads``) with its requests sent to ``URL`` instead of moto: LocalStack
(``http://localhost:4566``), a moto server, or, only with ``--i-understand-this-uses-real-aws``,
an AWS account (``--endpoint aws``, or any ``*.amazonaws.com`` URL: each service's own regional
endpoint, in us-east-1, with the credentials your environment gives boto3).

- Every resource is namespaced: the table is ``rwh-<pid>-<random>-idempotency`` (the handler reads
  it from ``IDEMPOTENCY_TABLE``, as on Lambda) and each queue the run creates gets the same prefix.
- They are deleted when the run ends, whether it ends well, raises, is interrupted (Ctrl-C) or is
  sent SIGTERM or SIGHUP; an ``atexit`` hook catches what slipped past. Only SIGKILL (or a power
  cut) leaves them, and their prefix says which run made them.
- Anything that looks like real AWS is refused without the flag, before any request is made.
- Only scenarios whose delivery source needs nothing but requests run here (``ENDPOINT_SCENARIOS``):
  the SQS, Kinesis and DynamoDB Streams sources look inside moto's queues between requests.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import re
import secrets
import signal
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.config import Config as BotoConfig
from botocore.credentials import Credentials

from ..aws.gateway import FAKE_ACCESS_KEY, FAKE_SECRET_KEY
from ..aws.http_gateway import Forwarder
from ..core import active
from ..errors import BadInput, RealAwsRefused
from ..settings import SettingValue
from ..vocab import WorldMode
from .freethreads import DEFAULT_BUDGET
from .realthreads import RUNNABLE_SCENARIOS, RealThreadsSandbox, short_settings

MODE = WorldMode.ENDPOINT
REAL_AWS_FLAG = "--i-understand-this-uses-real-aws"
#: The scenarios this mode runs: the real-threads ones whose source makes requests only.
ENDPOINT_SCENARIOS = tuple(s for s in RUNNABLE_SCENARIOS if s != "sqs-batch-failure")
#: Host names of AWS's own endpoints (amazonaws.com, amazonaws.com.cn, and the newer api.aws).
_AWS_HOST = re.compile(r"(^|\.)(amazonaws\.com(\.cn)?|api\.aws)$", re.IGNORECASE)
#: ``--endpoint aws``: AWS's own endpoints, whichever the service.
_AWS_WORD = re.compile(r"\s*aws\s*", re.IGNORECASE)
PREFIX = "rwh"  # Retries Will Happen


class RealAwsEndpointRefused(RealAwsRefused, BadInput):
    """An endpoint that looks like real AWS, given without the flag that allows it (one line, exit 2)."""


@dataclass(frozen=True)
class Endpoint:
    """Where requests go: ``url`` (None: AWS's own endpoints) and whether that is real AWS."""

    url: str | None
    real_aws: bool

    def describe(self) -> str:
        return "AWS (us-east-1)" if self.url is None else self.url


def parse_endpoint(text: str, *, allow_real_aws: bool = False) -> Endpoint:
    """Check ``text`` (a URL, or ``aws``); refuse real AWS without ``allow_real_aws``. Makes no request."""
    raw = (text or "").strip()
    real = bool(_AWS_WORD.fullmatch(raw))
    if not real:
        parts = urlsplit(raw)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadInput(f"--endpoint takes a URL such as http://localhost:4566 (LocalStack), got {text!r}")
        try:
            parts.port  # noqa: B018 (reading it validates it)
        except ValueError:
            raise BadInput(f"--endpoint {text!r} has a port that is not a number from 0 to 65535") from None
        real = bool(_AWS_HOST.search(parts.hostname))
    if real and not allow_real_aws:
        raise RealAwsEndpointRefused(
            f"--endpoint {text} is real AWS: refused. This run would create a DynamoDB table and SQS queues in "
            f"your account (and delete them at the end). If that is what you want, add {REAL_AWS_FLAG}; for a "
            f"local stand-in, use LocalStack's http://localhost:4566")
    return Endpoint(None if real else raw.rstrip("/"), real)


def probe(endpoint: Endpoint, timeout: float = 3.0) -> None:
    """Fail early, with a clear BadInput, when nothing listens at the endpoint."""
    host: str | None  # None: the local host, as for socket.create_connection
    if endpoint.url is None:
        host, port = "dynamodb.us-east-1.amazonaws.com", 443
    else:
        parts = urlsplit(endpoint.url)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise BadInput(f"cannot reach the endpoint {endpoint.describe()} ({host}:{port}: {reason}); is LocalStack "
                       f"or the moto server running there?") from None


def endpoint_credentials(endpoint: Endpoint) -> Credentials:
    """What requests are signed with: your own for AWS (read before any world opens), fake ones elsewhere."""
    if not endpoint.real_aws:
        return Credentials(FAKE_ACCESS_KEY, FAKE_SECRET_KEY)
    found = boto3.Session().get_credentials()
    if found is None:
        raise BadInput("no AWS credentials found for the real-AWS run (boto3 looked in the environment, "
                       "~/.aws and the instance role)")
    return found.get_frozen_credentials()


@dataclass
class Namespace:
    """The names of one run's resources, and the ones it created (so they can be deleted)."""

    prefix: str = field(default_factory=lambda: f"{PREFIX}-{os.getpid()}-{secrets.token_hex(3)}")
    queues: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def table(self) -> str:
        return f"{self.prefix}-idempotency"

    def queue(self, name: str) -> str:
        return name if name.startswith(self.prefix + "-") else f"{self.prefix}-{name}"

    def rewrite(self, service: str, op: str, params: dict) -> dict | None:
        """A queue named in CreateQueue or GetQueueUrl gets the prefix (FIFO's .fifo suffix stays last)."""
        if service != "sqs" or op not in ("CreateQueue", "GetQueueUrl") or "QueueName" not in params:
            return None
        name = self.queue(str(params["QueueName"]))
        if op == "CreateQueue":
            with self._lock:
                if name not in self.queues:
                    self.queues.append(name)  # noted before it exists: deleting a missing queue is harmless
        return {**params, "QueueName": name}


def delete_resources(endpoint: Endpoint, namespace: Namespace, credentials: Credentials) -> list[str]:
    """Delete the run's queues and table (any already gone are skipped); returns what it deleted.

    Uses plain boto3 clients, made after the world closed, so nothing of the sandbox stands between.
    """
    world = active.current()
    if world is not None:
        world.close()  # a signal or atexit came while the world was still open
    kw = {"endpoint_url": endpoint.url, "region_name": "us-east-1", "aws_access_key_id": credentials.access_key,
          "aws_secret_access_key": credentials.secret_key, "aws_session_token": credentials.token,
          "config": BotoConfig(retries={"total_max_attempts": 3}, connect_timeout=5, read_timeout=30)}
    deleted = []
    sqs = boto3.client("sqs", **kw)
    for name in list(namespace.queues):
        with contextlib.suppress(sqs.exceptions.QueueDoesNotExist):
            sqs.delete_queue(QueueUrl=sqs.get_queue_url(QueueName=name)["QueueUrl"])
            deleted.append(name)
    dynamodb = boto3.client("dynamodb", **kw)
    with contextlib.suppress(dynamodb.exceptions.ResourceNotFoundException):
        dynamodb.delete_table(TableName=namespace.table)
        deleted.append(namespace.table)
    return deleted


def leftovers(endpoint_url: str, prefix: str = PREFIX) -> list[str]:
    """Tables and queues at a local endpoint whose names start with ``prefix`` (for checks and clean-ups)."""
    kw = {"endpoint_url": endpoint_url, "region_name": "us-east-1", "aws_access_key_id": FAKE_ACCESS_KEY,
          "aws_secret_access_key": FAKE_SECRET_KEY}
    tables = boto3.client("dynamodb", **kw).list_tables().get("TableNames", [])
    queues = boto3.client("sqs", **kw).list_queues(QueueNamePrefix=prefix).get("QueueUrls", [])
    return [t for t in tables if t.startswith(prefix)] + [q.rsplit("/", 1)[-1] for q in queues]


@contextlib.contextmanager
def deleted_at_exit(cleanup: Callable[[], Any]):
    """Run ``cleanup`` once when the block ends, however: an error, Ctrl-C, SIGTERM/SIGHUP, or interpreter exit."""
    done = threading.Event()

    def once() -> None:
        if not done.is_set():
            done.set()
            cleanup()

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)  # unwinds the run, so the world closes and the finally below runs

    atexit.register(once)
    saved = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            saved[sig] = signal.signal(sig, on_signal)
    try:
        yield
    finally:
        try:
            once()
        finally:
            for sig, handler in saved.items():
                signal.signal(sig, handler)
            atexit.unregister(once)


class EndpointSandbox(RealThreadsSandbox):
    """The real-threads world with its requests sent to an endpoint, under a namespace."""

    mode = MODE

    def __init__(self, seed: int = 0, *, endpoint: Endpoint, namespace: Namespace, credentials: Credentials,
                 meta: dict | None = None, **kw: Any):
        forwarder = Forwarder(endpoint.url, credentials, rewrite=namespace.rewrite)
        super().__init__(seed, forwarder=forwarder, table=namespace.table,
                         meta={**(meta or {}), "endpoint": endpoint.describe(), "namespace": namespace.prefix}, **kw)
        self.endpoint, self.namespace = endpoint, namespace


def run_on_endpoint(scenario: Any, handler: Any = None, *, endpoint: str, allow_real_aws: bool = False,
                    seed: int = 0, settings: Mapping[str, SettingValue] | None = None,
                    factory: Callable[[], Callable] | None = None, budget: float = DEFAULT_BUDGET):
    """Run one scenario against ``endpoint`` with namespaced resources, delete them, and judge the run."""
    from ..scenarios.base import run_in_world

    target = parse_endpoint(endpoint, allow_real_aws=allow_real_aws)
    sc, cfg = short_settings(scenario, settings, mode=MODE, runnable=ENDPOINT_SCENARIOS)
    credentials = endpoint_credentials(target)
    probe(target)
    namespace = Namespace()
    with deleted_at_exit(lambda: delete_resources(target, namespace, credentials)):
        world = EndpointSandbox(seed, endpoint=target, namespace=namespace, credentials=credentials,
                                ttl_lag=cfg.run.ttl_lag, ttl_drawn=not cfg.run.ttl_exact, budget=budget,
                                meta={"scenario": sc.name, "settings": cfg.values()})
        return run_in_world(world, sc, handler, cfg, factory)
